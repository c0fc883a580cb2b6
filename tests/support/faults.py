"""Helpers of the fault matrix (``tests/faults``): seeds, a log writer process, running
``sluice`` as a subprocess, landing with Spark and reading the staging back (the lines
themselves and the exactly-once check are in :mod:`pipeline_core.testing`, the crash points in
:mod:`tests.support.crash_points`, metastore outages in :mod:`tests.support.metastore_outages`).

Every fault test takes the ``fault_seed`` fixture: its seed comes from ``SLUICE_FAULT_SEED``
or is drawn, is printed, is added to the test's report, and should be quoted in assertion
messages (``seed.note(...)``), so a failure can be replayed with the same random choices.

This module is also a small program, run from the repository root::

    python -m tests.support.faults write-logs FOLDER --seed N --mb M --seconds S --rotations R \
        --done FILE

``write-logs`` (:func:`pipeline_core.testing.write_logs`) appends unique nginx lines to
``FOLDER/access.log`` at a steady pace, rotating it by rename (logrotate ``create``) and by
copytruncate in turn.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pipeline_core.collector import Collector, CollectorResult
from pipeline_core.config import PipelineConfig
from pipeline_core.lake import LakeLocation, LandingMode
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.staging_contract import read_manifest
from pipeline_core.testing import staged_lines, wait_until, write_logs

if TYPE_CHECKING:
    import pyarrow as pa

    from pipeline_core.operations import PipelineOperations
    from spark_jobs.landing import Landing

REPO = Path(__file__).resolve().parents[2]
SEED_ENV = "SLUICE_FAULT_SEED"
SIZE_ENV = "SLUICE_FAULT_MB"
SEED_KEY = pytest.StashKey[int]()
"""Where the ``fault_seed`` fixture leaves the seed on the test item (for the report)."""
FIGURES_KEY = pytest.StashKey[list[str]]()
"""Where tests leave figures for the run's "fault matrix" summary (see :func:`report_figures`)."""


# -- seeds -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultSeed:
    """The seed of one fault test and a ``random.Random`` drawn from it."""

    value: int
    rng: random.Random

    def __str__(self) -> str:
        return f"{SEED_ENV}={self.value}"

    def note(self, message: str) -> str:
        """``message`` with the way to replay the test."""
        return f"{message} [replay: {self}]"


@pytest.fixture
def fault_seed(request: pytest.FixtureRequest) -> FaultSeed:
    """The test's seed: ``$SLUICE_FAULT_SEED``, or a fresh one; printed and reported."""
    raw = os.environ.get(SEED_ENV, "").strip()
    value = int(raw) if raw else random.SystemRandom().randrange(1 << 32)
    request.node.stash[SEED_KEY] = value
    print(f"fault seed: {SEED_ENV}={value}")
    return FaultSeed(value, random.Random(value))


def report_figures(request: pytest.FixtureRequest, text: str) -> None:
    """Print ``text`` and keep it for the "fault matrix" section at the end of the run."""
    print(text)
    request.config.stash.setdefault(FIGURES_KEY, []).append(f"{request.node.name}: {text}")


def fault_megabytes(default: int) -> int:
    """``$SLUICE_FAULT_MB``, or ``default``."""
    raw = os.environ.get(SIZE_ENV, "").strip()
    return int(raw) if raw else default


# -- the writer process ----------------------------------------------------------------------------


def start_writer(
    folder: Path, *, seed: int, megabytes: int, seconds: float, rotations: int, done: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "tests.support.faults", "write-logs", str(folder),
        "--seed", str(seed), "--mb", str(megabytes), "--seconds", str(seconds),
        "--rotations", str(rotations), "--done", str(done),
    ]  # fmt: skip
    return subprocess.Popen(command, cwd=REPO)


# -- sluice as a subprocess ------------------------------------------------------------------------


def sluice_command(*args: str) -> list[str]:
    """``python -m pipeline_core ARGS`` with this interpreter (the ``sluice`` command)."""
    return [sys.executable, "-m", "pipeline_core", *args]


def run_collectors(
    config_path: Path,
    rng: random.Random,
    stderr_dir: Path,
    kills: int,
    live: tuple[float, float] = (0.4, 2.5),
    between: Callable[[int], None] = lambda number: None,
) -> tuple[int, list[str]]:
    """Start ``sluice collect`` on ``config_path`` and SIGKILL it after a while (``live``: the
    bounds of a random time), ``kills`` times, calling ``between(number)`` before each kill
    (a rotation, say); the kills done, and how each collector that exited by itself ended
    (its status and the end of its log, kept in ``stderr_dir``)."""
    stderr_dir.mkdir()
    done = 0
    exited: list[str] = []
    for number in range(kills):
        with open(stderr_dir / f"{number:02d}.txt", "wb") as stderr:
            collector = subprocess.Popen(
                sluice_command("collect", str(config_path)),
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            time.sleep(rng.uniform(*live))
            between(number)
        finally:
            if collector.poll() is None:
                collector.send_signal(signal.SIGKILL)
                done += 1
            else:
                log = (stderr_dir / f"{number:02d}.txt").read_text(errors="replace")
                exited.append(f"exit {collector.returncode}: {log[-2000:]}")
            collector.wait(timeout=30)
    return done, exited


def is_busy(returncode: int | None, stderr: str) -> bool:
    """A collector that exited because another one holds the pipeline's lease (a live one, or
    a killed one its machine cannot prove dead, until its lease expires)."""
    return returncode == 5 and "is being collected by" in stderr  # ExitCode.BUSY


def collect_once_when_free(config_path: Path, timeout: float = 120.0) -> str:
    """Run ``sluice collect --once`` until it is not refused for a held lease; its stdout.

    Raises:
        AssertionError: it failed otherwise, or was refused for longer than ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run(
            sluice_command("collect", str(config_path), "--once"),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode == 0:
            return done.stdout
        if not is_busy(done.returncode, done.stderr) or time.monotonic() > deadline:
            raise AssertionError(
                f"sluice collect --once failed ({done.returncode}):\n{done.stderr}"
            )
        time.sleep(0.2)


def wait_for_free_lease(metastore: Metastore, config: PipelineConfig, timeout: float) -> None:
    """Wait until no unexpired lease (a killed collector's, say) holds the pipeline."""
    wait_until(
        lambda: metastore.lease_holder(config.name, config.collector.host) is None,
        timeout,
        "the collector lease to expire",
    )


# -- a collector in this process -------------------------------------------------------------------


def assert_staged_once(config: PipelineConfig, expected: list[bytes], seed: FaultSeed) -> None:
    """Every line of ``expected`` staged once by ``config``'s pipeline, and nothing else: no
    line lost, none staged twice (by its file and offset)."""
    staged = staged_lines(config)
    assert sorted(s.line for s in staged) == sorted(expected), seed.note(
        f"{len(staged)} lines staged, {len(expected)} written"
    )
    assert len({(s.fingerprint, s.offset) for s in staged}) == len(staged)


class RunningCollector:
    """A tailing collector on a thread of this process (``with`` stops it and re-raises what
    it raised)."""

    def __init__(self, config: PipelineConfig, metastore: Metastore) -> None:
        self.collector = Collector(config, metastore)
        self.result: CollectorResult | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fault-collector", daemon=True)

    def _run(self) -> None:
        try:
            self.result = self.collector.run()
        except BaseException as exc:
            self.error = exc

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> RunningCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.collector.stop()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the collector did not stop"

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


# -- landing and reading back ----------------------------------------------------------------------


def landing_of(
    operations: PipelineOperations,
    checkpoint_ids: Sequence[int],
    landing_id: str,
    mode: LandingMode = LandingMode.APPEND,
) -> Landing | None:
    """The landing that the spark-submit spec of ``operations.landing_job`` asks for, read
    back from its arguments as ``spark_jobs/land.py`` reads them (None: nothing to land)."""
    from pipeline_core.landing import METASTORE_URL_ENV
    from spark_jobs.land import parse_args
    from spark_jobs.landing import Landing

    spec = operations.landing_job(checkpoint_ids, landing_id, mode)
    if spec is None:
        return None
    args = parse_args(spec.application_args)
    return Landing(
        checkpoints=tuple(dict.fromkeys(args.checkpoint)),
        lake=LakeLocation(spec.env_vars[METASTORE_URL_ENV], Path(args.lake), args.namespace),
        landing_id=args.landing_id,
        mode=LandingMode(args.mode),
    )


def land_checkpoints(
    spark: Any,
    operations: PipelineOperations,
    checkpoint_ids: Sequence[int],
    *,
    landing_id: str | None = None,
    mode: LandingMode = LandingMode.APPEND,
) -> dict[str, Any] | None:
    """Land ``checkpoint_ids`` with the real Spark job, in this process on ``spark``, as one
    landing (the job a DAG run's land task submits), without committing; the job's summary
    (None: nothing was left to land)."""
    from spark_jobs.landing import land

    landing = landing_of(
        operations, checkpoint_ids, landing_id or f"faults-{uuid.uuid4().hex[:8]}", mode
    )
    return None if landing is None else land(spark, landing)


def land_and_commit_sealed(spark: Any, config_path: Path) -> list[dict[str, Any]]:
    """Land every sealed, uncommitted checkpoint in one landing with the real Spark job (in
    this process, on ``spark``) and commit them, as a catching-up DAG run does; each
    checkpoint's part of the landing summary, oldest first."""
    from pipeline_core.operations import PipelineOperations

    operations = PipelineOperations(config_path)
    ids = [info.checkpoint_id for info in operations.pending_landings()]
    if not ids:
        return []
    summary = land_checkpoints(spark, operations, ids)
    assert summary is not None
    operations.commit(ids)
    checkpoints: list[dict[str, Any]] = summary["checkpoints"]
    return checkpoints


def checkpoint_states(metastore: Metastore, pipeline: str) -> dict[int, CheckpointState]:
    return {c.checkpoint_id: c.state for c in metastore.checkpoints(pipeline, limit=100_000)}


def recorded_staging(metastore: Metastore, pipeline: str) -> pa.Table:
    """Every line of every batch the metastore recorded, split from the part files' segments
    as the landing job splits them: ``event_id`` and ``line`` (binary)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from spark_jobs.segment_split import split_segment

    tables = [pa.table({"event_id": pa.array([], pa.string()), "line": pa.array([], pa.binary())})]
    for checkpoint_id in checkpoint_states(metastore, pipeline):
        for batch in metastore.batches(checkpoint_id):
            folder = Path(batch.staging_path)
            for part in read_manifest(folder).to_json()["parts"]:
                data = (folder / part["name"]).read_bytes()
                for segment in part["segments"]:
                    begin = segment["part_offset"]
                    byte_offset, line = split_segment(
                        data[begin : begin + segment["length"]], segment["start_offset"]
                    )
                    fingerprint = pa.repeat(pa.scalar(segment["file_fingerprint"]), len(line))
                    event_id = pc.binary_join_element_wise(
                        fingerprint, byte_offset.cast(pa.string()), ":"
                    )
                    tables.append(pa.table({"event_id": event_id, "line": line}))
    return pa.concat_tables(tables)


# -- program ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.faults")
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write-logs")
    writer.add_argument("folder", type=Path)
    writer.add_argument("--seed", type=int, required=True)
    writer.add_argument("--mb", type=float, required=True)
    writer.add_argument("--seconds", type=float, required=True)
    writer.add_argument("--rotations", type=int, required=True)
    writer.add_argument("--done", type=Path, required=True)
    args = parser.parse_args(argv)
    write_logs(
        args.folder,
        seed=args.seed,
        total_bytes=int(args.mb * 1_000_000),
        seconds=args.seconds,
        rotations=args.rotations,
        done=args.done,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
