"""Case 17: what a month of landings leaves in a table's metadata, compressed into commits.

A landing every minute is 1,440 Iceberg commits a day per table. Here ``COMMITS`` commits
(``--quick`` fewer) each add one small Parquet file of a ``raw`` table through
``pipeline_core.lake.commit_files``, as a landing does, on a SQLite catalog in a local folder.
Every ``MAINTENANCE_EVERY`` commits, maintenance runs as the DAG would, compressed in time:
the day's files compacted, the snapshots of all but the last ``SNAPSHOTS_KEPT`` commits
expired, orphans removed (no grace: nothing else writes).

Sluice: a table made by ``LakeCatalog.ensure_table`` (``MANAGED_PROPERTIES``: old metadata
deleted at commit, manifests merged) and the project's ``remove_orphan_files``. Baseline, in
the same run: the same commits and maintenance on a table with pyiceberg's default properties,
with orphans removed under ``data/`` only (what Sluice did before).

Figures: the commit's wall time over the last ``WINDOW`` commits before the last maintenance
round against the same commits of the second round (flat: <= 1.5 x; the baseline stops at
``BASELINE_COMMITS``), and the table's ``metadata/`` folder (files, bytes, the current
``metadata.json``) after the last maintenance, with its growth between the middle and the end
(bounded: no more files at the end than at the middle, give or take the manifests of one
merge cycle, ``MANIFESTS_BEFORE_MERGE``).
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import Table

from bench.common import Context, Row, Stat
from pipeline_core.lake import (
    MANIFESTS_BEFORE_MERGE,
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    compact_table,
    expire_snapshots,
    open_lake,
    remove_orphan_files,
    source_schema,
)
from pipeline_core.metastore import Metastore

COMMITS = 2000
QUICK_COMMITS = 300
BASELINE_COMMITS = 300
"""The baseline's commits slow down as its manifests pile up (over a second each by 400):
it is stopped here."""
MAINTENANCE_EVERY = 100
SNAPSHOTS_KEPT = 50
WINDOW = 50
ROWS_PER_COMMIT = 20
DAY = datetime(2026, 11, 1, tzinfo=timezone.utc)


@dataclass
class Growth:
    """One table's commits: each commit's wall time, and its metadata folder after each
    maintenance round (files, bytes, current ``metadata.json`` bytes)."""

    commit_seconds: list[float]
    folder: list[tuple[int, int, int]]

    @property
    def latency_ratio(self) -> float:
        """The last ``WINDOW`` commits before the last maintenance round against the same
        commits of the second round (the first has not expired anything yet): the same
        number of snapshots kept, one cycle apart or many."""
        rounds = len(self.commit_seconds) // MAINTENANCE_EVERY
        end = rounds * MAINTENANCE_EVERY
        first = statistics.median(
            self.commit_seconds[2 * MAINTENANCE_EVERY - WINDOW : 2 * MAINTENANCE_EVERY]
        )
        last = statistics.median(self.commit_seconds[end - WINDOW : end])
        return last / first

    @property
    def files_growth(self) -> int:
        """Metadata files at the end less those at the middle maintenance round."""
        return self.folder[-1][0] - self.folder[len(self.folder) // 2 - 1][0]


def run(ctx: Context) -> list[Row]:
    commits = QUICK_COMMITS if ctx.quick else COMMITS
    work = ctx.work("lake-metadata")
    sluice = grow(work / "sluice", commits, managed=True)
    baseline = grow(work / "baseline", min(commits, BASELINE_COMMITS), managed=False)
    latency_met = sluice.latency_ratio <= 1.5
    bounded = sluice.files_growth <= MANIFESTS_BEFORE_MERGE
    files, size, current = sluice.folder[-1]
    base_files, base_size, base_current = baseline.folder[-1]
    details = {
        "commits": commits,
        "sluice_folder_per_round": sluice.folder,
        "baseline_folder_per_round": baseline.folder,
    }
    return [
        Row(
            case="17",
            measure=f"commit wall time, round {len(sluice.folder)} / round 2 of {commits} commits",
            sluice=Stat([sluice.latency_ratio], "x", 2),
            baseline=Stat([baseline.latency_ratio], "x", 2),
            baseline_name="pyiceberg's defaults",
            ratio=Stat([sluice.latency_ratio], "x", 2),
            target="<= 1.5 x (flat)",
            met=latency_met,
            note=(
                f"median commit {statistics.median(sluice.commit_seconds) * 1000:.0f} ms, "
                f"defaults {statistics.median(baseline.commit_seconds) * 1000:.0f} ms"
            ),
            details=details,
        ),
        Row(
            case="17",
            measure=f"metadata/ after {commits} commits and maintenance",
            sluice=Stat([files], "files", 0),
            baseline=Stat([base_files], "files", 0),
            baseline_name="pyiceberg's defaults, data/ orphans only",
            ratio=Stat([files / base_files], "x", 3),
            target=f"middle -> end <= +{MANIFESTS_BEFORE_MERGE} files (a merge cycle)",
            met=bounded,
            note=(
                f"{size / 1e6:.1f} MB (defaults {base_size / 1e6:.1f} MB); metadata.json "
                f"{current / 1e3:.0f} KB (defaults {base_current / 1e3:.0f} KB); "
                f"files middle -> end {sluice.files_growth:+d} "
                f"(defaults {baseline.files_growth:+d})"
            ),
        ),
    ]


def grow(folder: Path, commits: int, *, managed: bool) -> Growth:
    folder.mkdir(parents=True)
    url = f"sqlite:///{folder / 'metastore.db'}"
    Metastore.open(url).close()
    location = LakeLocation(url, folder / "lake", "bench")
    growth = Growth([], [])
    stamps: list[float] = []
    with open_lake(location) as lake:
        lake.catalog.create_namespace_if_not_exists(location.namespace)
        if managed:
            table = lake.ensure_table("events", source_schema("raw"), "raw")
        else:
            table = lake.catalog.create_table(
                location.identifier("events"), schema=source_schema("raw")
            )
        for checkpoint_id in range(1, commits + 1):
            data = {checkpoint_id: [_write(table, checkpoint_id)]}
            started = time.perf_counter()
            commit_files(
                table,
                TableCommit(data, (checkpoint_id,), f"run-{checkpoint_id}", LandingMode.APPEND),
            )
            growth.commit_seconds.append(time.perf_counter() - started)
            stamps.append(time.time())
            if checkpoint_id % MAINTENANCE_EVERY == 0:
                _maintain(table, stamps, managed)
                growth.folder.append(_metadata_folder(table))
    return growth


def _maintain(table: Table, stamps: list[float], managed: bool) -> None:
    compact_table(table, DAY.date())
    kept_since = stamps[-SNAPSHOTS_KEPT]
    expire_snapshots(table, retention=timedelta(seconds=time.time() - kept_since))
    if managed:
        remove_orphan_files(table, grace=timedelta(0))
    else:
        _data_orphans_only(table)


def _data_orphans_only(table: Table) -> None:
    """Orphan removal as it was: under ``data/`` only."""
    table.refresh()
    referenced = {
        p.removeprefix("file://") for p in table.inspect.all_files().column("file_path").to_pylist()
    }
    root = Path(table.location().removeprefix("file://"), "data")
    for path in root.rglob("*"):
        if path.is_file() and str(path) not in referenced:
            path.unlink()


def _metadata_folder(table: Table) -> tuple[int, int, int]:
    table.refresh()
    root = Path(table.location().removeprefix("file://"), "metadata")
    files = [p for p in root.iterdir() if p.is_file()]
    current = Path(table.metadata_location.removeprefix("file://")).stat().st_size
    return len(files), sum(p.stat().st_size for p in files), current


def _write(table: Table, checkpoint_id: int) -> str:
    offsets = range(checkpoint_id * ROWS_PER_COMMIT, (checkpoint_id + 1) * ROWS_PER_COMMIT)
    fingerprint = f"{checkpoint_id:016x}"
    rows = pa.table(
        {
            "event_id": [f"{fingerprint}:{o}" for o in offsets],
            "file_fingerprint": [fingerprint] * ROWS_PER_COMMIT,
            "byte_offset": pa.array(offsets, pa.int64()),
            "host": ["bench"] * ROWS_PER_COMMIT,
            "event_time": pa.array(
                [DAY + timedelta(seconds=o % 86_400) for o in offsets], pa.timestamp("us", "UTC")
            ),
            "message": [f"line {o}" for o in offsets],
            "checkpoint_id": pa.array([checkpoint_id] * ROWS_PER_COMMIT, pa.int64()),
        }
    )
    root = Path(table.location().removeprefix("file://"), "data", f"landing-{uuid.uuid4().hex}")
    root.mkdir(parents=True)
    path = root / "part-0.parquet"
    pq.write_table(rows, path)
    return f"file://{path}"
