"""kill -9 at random moments: a tailing ``sluice collect`` is SIGKILLed and restarted at once
(as a service manager restarts it: same host name, no pause) again and again, while a writer
appends and rotates its log and DAG runs request checkpoints that the collectors seal between
kills. Every restart takes its dead predecessor's lease over at once, and every line written
still lands in the lake exactly once."""

from __future__ import annotations

import random
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, LeaseHolder, Metastore
from pipeline_core.testing import UniqueAccessLines, WriterReport, check_exactly_once
from tests.support.faults import (
    REPO,
    FaultSeed,
    checkpoint_states,
    fault_megabytes,
    is_busy,
    land_and_commit_sealed,
    recorded_staging,
    report_figures,
    sluice_command,
    start_writer,
)
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

DEFAULT_MB = 100
"""Written in all, unless ``SLUICE_FAULT_MB`` says otherwise."""
MIN_KILLS = 20
WRITE_SECONDS = 35.0
"""The writer spreads its megabytes over about this long."""
ROTATIONS = 10
LEASE_SECONDS = 60.0
"""Long, so that a restart refused or held back until a killed collector's lease expires
would show."""
REQUEST_EVERY_S = (0.5, 3.0)
START_UP_KILL_SHARE = 0.25
"""The share of collectors killed during their start-up, ``KILL_IN_START_UP_S`` after it:
while the interpreter starts, the config loads, the lease is taken or the first bytes are read.
The others are killed ``KILL_AFTER_SEAL_S`` after they sealed a checkpoint: while reading,
sealing the next request, or idle."""
KILL_IN_START_UP_S = (0.02, 1.5)
KILL_AFTER_SEAL_S = (0.0, 2.0)
SEAL_WAIT_S = 30.0
"""A collector waiting for its first seal is killed anyway after this long."""
POLL_S = 0.05


class CheckpointRequester(threading.Thread):
    """Requests a checkpoint now and then, as scheduled DAG runs do."""

    def __init__(self, metastore: Metastore, pipeline: str, rng: random.Random) -> None:
        super().__init__(name="fault-requester", daemon=True)
        self._metastore = metastore
        self._pipeline = pipeline
        self._rng = rng
        self._finished = threading.Event()
        self.requested = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self._finished.wait(self._rng.uniform(*REQUEST_EVERY_S)):
                self._metastore.request_checkpoint(self._pipeline, f"fault-run-{self.requested}")
                self.requested += 1
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self._finished.set()
        self.join(timeout=60)
        if self.error is not None:
            raise self.error


@dataclass
class Kills:
    """What :func:`kill_collectors` did."""

    kills: int = 0
    in_start_up: int = 0
    after_a_seal: int = 0
    seal_timeouts: int = 0
    """Collectors that saw no seal within ``SEAL_WAIT_S`` (killed anyway)."""
    lease_seconds: list[float] = field(default_factory=list)
    """For each collector that took the lease: seconds from its start until it held it."""
    takeovers: int = 0
    """Restarts that took over the lease of the collector killed before them."""
    refused: list[str] = field(default_factory=list)
    """The stderr of each collector that exited by itself (refused the lease, say)."""


def kill_collectors(
    config: PipelineConfig,
    config_path: Path,
    metastore: Metastore,
    writer: subprocess.Popen[bytes],
    seed: FaultSeed,
    stderr_dir: Path,
) -> Kills:
    """Start ``sluice collect`` (tailing) and SIGKILL it, restarting it at once, again and
    again until the writer is done and at least ``MIN_KILLS`` collectors were killed. When
    each collector dies is drawn from ``seed``: during its start-up, or after it sealed a
    checkpoint (see ``START_UP_KILL_SHARE``)."""
    stderr_dir.mkdir()
    done = Kills()
    while writer.poll() is None or done.kills < MIN_KILLS:
        stderr_path = stderr_dir / f"{done.kills + len(done.refused):03d}.txt"
        in_start_up = seed.rng.random() < START_UP_KILL_SHARE
        sealed_before = len(sealed_checkpoints(metastore, config.name))
        started = time.monotonic()
        with open(stderr_path, "wb") as stderr:
            collector = subprocess.Popen(
                sluice_command("collect", str(config_path)),
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        kill_at = started + seed.rng.uniform(*KILL_IN_START_UP_S) if in_start_up else None
        holds_lease = False
        try:
            while collector.poll() is None:
                now = time.monotonic()
                if kill_at is not None and now >= kill_at:
                    break
                if not holds_lease and lease_pid(metastore, config) == collector.pid:
                    holds_lease = True
                    done.lease_seconds.append(now - started)
                if kill_at is None:
                    if len(sealed_checkpoints(metastore, config.name)) > sealed_before:
                        kill_at = now + seed.rng.uniform(*KILL_AFTER_SEAL_S)
                        done.after_a_seal += 1
                    elif now - started > SEAL_WAIT_S:
                        kill_at = now
                        done.seal_timeouts += 1
                time.sleep(POLL_S)
        finally:
            returncode = collector.poll()
            if returncode is None:
                collector.send_signal(signal.SIGKILL)
                collector.wait(timeout=30)
        text = stderr_path.read_text(errors="replace")
        if returncode is not None:
            why = "refused: lease held" if is_busy(returncode, text) else f"exit {returncode}"
            done.refused.append(f"{why} after {time.monotonic() - started:.1f} s:\n{text[-3000:]}")
            assert len(done.refused) < 5, seed.note("\n".join(done.refused))
            continue
        done.kills += 1
        done.in_start_up += in_start_up
        done.takeovers += "taken over from" in text
    return done


def sealed_checkpoints(metastore: Metastore, pipeline: str) -> list[int]:
    return [
        c.checkpoint_id
        for c in metastore.checkpoints(pipeline, [CheckpointState.SEALED], limit=100_000)
    ]


def lease_pid(metastore: Metastore, config: PipelineConfig) -> int | None:
    """The process id of the unexpired lease's holder, if any."""
    holder = metastore.lease_holder(config.name, config.collector.host)
    parsed = LeaseHolder.parse(holder) if holder is not None else None
    return parsed.process.pid if parsed is not None else None


@pytest.mark.timeout(900)
def test_every_line_lands_exactly_once_across_sigkills_and_rotations(
    tmp_path: Path,
    metastore_url: str,
    spark: SparkSession,
    fault_seed: FaultSeed,
    request: pytest.FixtureRequest,
) -> None:
    megabytes = fault_megabytes(DEFAULT_MB)
    config_path = write_config(
        tmp_path,
        metastore_url,
        collector={
            "lease_seconds": LEASE_SECONDS,
            "discovery_interval_s": 0.2,
            "rotated_grace_s": 1.0,
        },
    )
    config = load_pipeline_config(config_path)
    metastore = Metastore.open(config.metastore_url)
    try:
        done = tmp_path / "writer.json"
        started = time.monotonic()
        writer = start_writer(
            tmp_path / "logs",
            seed=fault_seed.value,
            megabytes=megabytes,
            seconds=WRITE_SECONDS,
            rotations=ROTATIONS,
            done=done,
        )
        requester = CheckpointRequester(
            metastore, config.name, random.Random(fault_seed.value ^ 0x5EED)
        )
        requester.start()
        try:
            kills = kill_collectors(
                config, config_path, metastore, writer, fault_seed, tmp_path / "stderr"
            )
        finally:
            requester.finish()
            if writer.poll() is None:
                writer.kill()
            writer.wait(timeout=60)
        assert writer.returncode == 0, fault_seed.note("the writer failed")
        written = WriterReport.read(done)
        kill_phase = time.monotonic() - started
        sealed_during_kills = len(sealed_checkpoints(metastore, config.name))

        # The last collector was killed too: the final run is one more restart.
        final = subprocess.run(
            sluice_command("collect", str(config_path), "--once"),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert final.returncode == 0, fault_seed.note(f"the final --once failed:\n{final.stderr}")
        states = checkpoint_states(metastore, config.name)
        assert CheckpointState.REQUESTED not in states.values(), fault_seed.note(
            f"checkpoints left unsealed after the final --once: {states}"
        )
        sealed_lines = sum(
            batch.line_count for checkpoint in states for batch in metastore.batches(checkpoint)
        )
        landing_started = time.monotonic()
        summaries = land_and_commit_sealed(spark, config_path)
        landing = time.monotonic() - landing_started

        outcome = check_exactly_once(
            lake_location(config),
            UniqueAccessLines(fault_seed.value).lines(0, written.lines),
            recorded_staging(metastore, config.name),
        )
    finally:
        metastore.close()
    lease_s = kills.lease_seconds or [float("nan")]
    report_figures(
        request,
        f"kill -9: {kills.kills} kills ({kills.in_start_up} during start-up, "
        f"{kills.after_a_seal} after a seal, {kills.seal_timeouts} waited {SEAL_WAIT_S:.0f} s "
        f"for one), each restarted at once: {len(kills.refused)} restarts refused, "
        f"{kills.takeovers} took over a killed collector's lease; start -> lease taken "
        f"median {statistics.median(lease_s):.2f} s, max {max(lease_s):.2f} s over "
        f"{len(kills.lease_seconds)} starts (lease {LEASE_SECONDS:.0f} s); "
        f"{requester.requested} checkpoints requested, {sealed_during_kills} sealed during the "
        f"kills, {len(summaries)} landed; {written.lines} lines ({written.bytes / 1e6:.0f} MB) "
        f"written, {sealed_lines} sealed, rotated "
        f"{sum(r.startswith('rename') for r in written.rotations)}x by rename and "
        f"{sum(r.startswith('copytruncate') for r in written.rotations)}x by copytruncate; "
        f"{outcome.rows} rows in the lake, {outcome.lost} lines lost, "
        f"{outcome.duplicated_lines} duplicated, {outcome.duplicates} duplicate event ids; "
        f"kill phase {kill_phase:.0f} s, landing {landing:.0f} s",
    )
    assert kills.kills >= MIN_KILLS
    assert not kills.refused, fault_seed.note(
        "restarts refused (a killed predecessor's lease?):\n" + "\n".join(kills.refused)
    )
    assert kills.lease_seconds and max(lease_s) < LEASE_SECONDS / 4, fault_seed.note(
        f"a restart waited for its lease: {sorted(lease_s)[-5:]}"
    )
    assert kills.takeovers > 0, fault_seed.note("no restart took over a killed one's lease")
    assert kills.after_a_seal > 0 and sealed_during_kills > 0, fault_seed.note(
        "no checkpoint was sealed between kills"
    )
    assert sealed_lines == written.lines, fault_seed.note(
        f"{written.lines} lines written, {sealed_lines} sealed"
    )
    assert outcome.holds, fault_seed.note(outcome.describe())
