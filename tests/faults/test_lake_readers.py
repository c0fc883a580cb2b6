"""Readers querying the lake while it lands: never a partial checkpoint, a committed one
missing, or a row twice.

A reader thread scans the ``access`` table through the catalog (pyiceberg, then DuckDB over the
scan's Arrow), pausing 0.2 s after each, while checkpoints are landed for the first time,
reprocessed, backfilled several in one job, landed by landing jobs killed with SIGKILL at random
points and retried, and compacted. After every scan it checks that each checkpoint it sees holds
all of its rows, that each event id is there once, and that no checkpoint seen once has gone
missing. At the end rows + rejects of every checkpoint equal its staged lines, with distinct
event ids.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from pipeline_core.lake import (
    LakeLocation,
    LandingMode,
    compact_table,
    files_per_day,
    landed_checkpoints,
    open_lake,
)
from pipeline_core.testing import table_rows
from spark_jobs.landing import CheckpointInput, Landing, land
from tests.spark_jobs.support import LINES_PER_HOST, stage
from tests.support.lake import assert_exactly_once
from tests.support.processes import stop_group

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

ROOT = Path(__file__).resolve().parents[2]
TABLE = "access"
SOURCES = ["access", "app", "misc"]
HOSTS = ("web-1", "web-2")
KILLS = 3
SCAN_PAUSE_S = 0.2
"""Between two scans of the reader: it takes the machine's cores from the landings otherwise
(every commit is a snapshot of its own, seen by any scan after it; the scans still number
hundreds)."""


@dataclass
class ReaderLog:
    """What the reader saw: scans made and every violation of the invariants."""

    expected: int
    """Rows of ``access`` per checkpoint (every checkpoint is staged alike)."""
    scans: int = 0
    snapshots: set[int] = field(default_factory=set)
    seen: set[int] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)

    def check(self, rows: pa.Table, snapshot: int | None) -> None:
        relation = duckdb.sql(
            "SELECT checkpoint_id, count(*) AS n, count(DISTINCT event_id) AS ids "
            "FROM rows GROUP BY checkpoint_id"
        )
        assert relation is not None
        counts = relation.fetchall()
        present = set()
        for checkpoint_id, n, ids in counts:
            present.add(int(checkpoint_id))
            if n != self.expected:
                self.violations.append(f"snapshot {snapshot}: checkpoint {checkpoint_id} has {n}")
            if ids != n:
                self.violations.append(f"snapshot {snapshot}: checkpoint {checkpoint_id} twice")
        missing = self.seen - present
        if missing:
            self.violations.append(f"snapshot {snapshot}: committed {sorted(missing)} missing")
        self.seen |= present
        self.scans += 1
        if snapshot is not None:
            self.snapshots.add(snapshot)


@contextmanager
def reader(lake: LakeLocation, log: ReaderLog) -> Iterator[None]:
    stop = threading.Event()

    def scan() -> None:
        with open_lake(lake) as catalog:
            while not stop.is_set():
                table = catalog.load(TABLE)
                snapshot = table.current_snapshot() if table is not None else None
                if table is None or snapshot is None:
                    time.sleep(0.05)
                    continue
                rows = table.scan(
                    snapshot_id=snapshot.snapshot_id,
                    selected_fields=("event_id", "checkpoint_id"),
                ).to_arrow()
                log.check(rows, snapshot.snapshot_id)
                stop.wait(SCAN_PAUSE_S)

    thread = threading.Thread(target=scan, name="lake-reader", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the reader did not stop"


def landing_command(lake: LakeLocation, folders: list[Path], landing_id: str) -> list[str]:
    arguments = [sys.executable, str(ROOT / "spark_jobs" / "land.py")]
    for folder in folders:
        arguments += ["--checkpoint", f"{folder}={','.join(HOSTS)}"]
    return [
        *arguments,
        "--lake", str(lake.warehouse), "--namespace", lake.namespace,
        "--landing-id", landing_id, "--shuffle-partitions", "2",
    ]  # fmt: skip


def run_landing(
    lake: LakeLocation, folders: list[Path], landing_id: str, kill_after: float
) -> tuple[int | None, str]:
    """Run the landing job as spark-submit would (its own JVM); SIGKILL its whole process
    group after ``kill_after`` seconds. Returns its exit status (negative: killed) and the end
    of its standard error."""
    environment = {
        **os.environ,
        "SLUICE_METASTORE_URL": lake.catalog_url,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT),
    }
    errors = folders[0].parent / f"landing-{landing_id}.err"
    with open(errors, "wb") as stderr:
        process = subprocess.Popen(
            landing_command(lake, folders, landing_id),
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            stop_group(process, signal.SIGKILL, 10)
            if kill_after is None:
                raise
    return process.returncode, errors.read_text(errors="replace")[-3000:]


@pytest.mark.timeout(900)
def test_a_reader_never_sees_a_partial_missing_or_doubled_checkpoint(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    folders = {i: stage(staging, i, HOSTS) for i in range(1, 8)}

    def landing(ids: list[int], landing_id: str, mode: LandingMode) -> None:
        inputs = tuple(CheckpointInput(str(folders[i]), HOSTS) for i in ids)
        land(spark, Landing(inputs, lake, landing_id, mode))

    landing([1], "first", LandingMode.APPEND)
    expected = table_rows(lake, TABLE, 1).num_rows
    assert expected > 0
    log = ReaderLog(expected)
    rng = random.Random(7)
    with reader(lake, log):
        landing([2, 3], "first-landing", LandingMode.APPEND)
        landing([2], "reprocess-2", LandingMode.REPLACE)
        landing([1, 2, 3], "backfill", LandingMode.REPLACE)
        for kill in range(KILLS):  # killed at random points, then retried to the end
            run_landing(lake, [folders[4], folders[5]], f"killed-{kill}", rng.uniform(4, 20))
        landing([4, 5], "retry", LandingMode.APPEND)  # the killed ones' retry, to its end
        run_landing(lake, [folders[6], folders[7]], "killed-late", rng.uniform(8, 25))
        landing([6, 7], "retry-late", LandingMode.APPEND)
        with open_lake(lake) as catalog:
            table = catalog.load(TABLE)
            assert table is not None
            for day in files_per_day(table):
                if day is not None:
                    compact_table(table, day)
        time.sleep(0.5)

    print(
        f"reader: {log.scans} scans of {len(log.snapshots)} snapshots, checkpoints seen "
        f"{sorted(log.seen)}, {len(log.violations)} violations"
    )
    assert log.violations == []
    assert log.scans > 10 and len(log.snapshots) > 5
    assert log.seen == set(range(1, 8))
    with open_lake(lake) as catalog:
        landed = landed_checkpoints(catalog, SOURCES, range(1, 8))
    for checkpoint_id, found in landed.items():
        assert found.lines == LINES_PER_HOST * len(HOSTS), checkpoint_id
    for table_name in (*SOURCES, "_rejects"):
        assert_exactly_once(lake, table_name)
