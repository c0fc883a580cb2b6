"""kill -9 at random moments: a tailing ``sluice collect`` is SIGKILLed and restarted again and
again while a writer appends and rotates its log and DAG runs request checkpoints; every line
written still lands in the lake exactly once."""

from __future__ import annotations

import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import load_pipeline_config
from pipeline_core.metastore import CheckpointState, Metastore
from tests.support.faults import (
    REPO,
    FaultLines,
    FaultSeed,
    WriterReport,
    check_exactly_once,
    checkpoint_states,
    collect_once_when_free,
    fault_megabytes,
    is_busy,
    land_and_commit_sealed,
    recorded_staging,
    report_figures,
    sluice_command,
    start_writer,
)
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark]

DEFAULT_MB = 200
"""Written in all, unless ``SLUICE_FAULT_MB`` says otherwise."""
MIN_KILLS = 20
WRITE_SECONDS = 35.0
"""The writer spreads its megabytes over about this long."""
ROTATIONS = 10
KILL_AFTER_S = (0.2, 4.0)
"""A collector is killed this long after its start (uniformly drawn): during its start-up,
while it takes the lease, reads, seals or idles."""
REQUEST_EVERY_S = (0.5, 3.0)


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


def kill_collectors(
    config_path: Path, writer: subprocess.Popen[bytes], seed: FaultSeed, stderr_dir: Path
) -> tuple[int, int]:
    """Start ``sluice collect`` (tailing) and SIGKILL it after a random while, again and again,
    until the writer is done and at least ``MIN_KILLS`` collectors were killed. A collector
    that exits by itself must have been refused for the lease a killed one still held.

    Returns:
        ``(kills, refused starts)``.
    """
    stderr_dir.mkdir()
    kills = busy = 0
    while writer.poll() is None or kills < MIN_KILLS:
        stderr_path = stderr_dir / f"{kills + busy:03d}.txt"
        with open(stderr_path, "wb") as stderr:
            collector = subprocess.Popen(
                sluice_command("collect", str(config_path)),
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            returncode = collector.wait(timeout=seed.rng.uniform(*KILL_AFTER_S))
        except subprocess.TimeoutExpired:
            kills += 1
            continue
        finally:
            if collector.poll() is None:
                collector.send_signal(signal.SIGKILL)
                collector.wait(timeout=30)
        text = stderr_path.read_text(errors="replace")
        assert is_busy(returncode, text), seed.note(
            f"the collector exited with {returncode} by itself:\n{text[-3000:]}"
        )
        busy += 1  # the killed collector's lease has not expired yet
    return kills, busy


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
        collector={"lease_seconds": 2.0, "discovery_interval_s": 0.2, "rotated_grace_s": 1.0},
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
            kills, busy = kill_collectors(config_path, writer, fault_seed, tmp_path / "stderr")
        finally:
            requester.finish()
            if writer.poll() is None:
                writer.kill()
            writer.wait(timeout=60)
        assert writer.returncode == 0, fault_seed.note("the writer failed")
        written = WriterReport.read(done)
        kill_phase = time.monotonic() - started

        collect_once_when_free(config_path)
        states = checkpoint_states(metastore, config.name)
        assert CheckpointState.REQUESTED not in states.values(), fault_seed.note(
            f"checkpoints left unsealed after the final --once: {states}"
        )
        landing_started = time.monotonic()
        summaries = land_and_commit_sealed(spark, config_path)
        landing = time.monotonic() - landing_started

        outcome = check_exactly_once(
            config.lake_dir,
            FaultLines(fault_seed.value).lines(0, written.lines),
            recorded_staging(metastore, config.name),
        )
    finally:
        metastore.close()
    report_figures(
        request,
        f"kill -9: {kills} kills ({busy} restarts refused while a killed collector's lease "
        f"lasted), {requester.requested} checkpoints requested, {len(summaries)} landed; "
        f"{written.lines} lines ({written.bytes / 1e6:.0f} MB) written, rotated "
        f"{sum(r.startswith('rename') for r in written.rotations)}x by rename and "
        f"{sum(r.startswith('copytruncate') for r in written.rotations)}x by copytruncate; "
        f"{outcome.rows} rows in the lake, {outcome.duplicates} duplicate "
        f"event ids; kill phase {kill_phase:.0f} s, landing {landing:.0f} s",
    )
    assert kills >= MIN_KILLS
    assert outcome.holds, fault_seed.note(outcome.describe())
