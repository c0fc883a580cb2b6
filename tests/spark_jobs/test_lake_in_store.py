"""A lake in an object store (moto's S3 server on loopback): the landing's data files are
written by the executors through Arrow filesystems, the commits, reads and maintenance go
through the tables' FileIO, and nothing needs a shared folder or Hadoop's S3 connector."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from pipeline_core.lake import (
    LakeLocation,
    LandingMode,
    compact_table,
    files_per_day,
    landed_checkpoints,
    open_lake,
    remove_orphan_files,
)
from pipeline_core.metastore import Metastore
from pipeline_core.testing import table_rows
from spark_jobs.landing import CheckpointInput, land
from tests.spark_jobs.support import LINES_PER_HOST, PIPELINE, checkpoint_summary, landing, stage
from tests.support.lake import NAMESPACE, assert_exactly_once, snapshot_operations
from tests.support.object_store import SECRET_KEY, S3Bucket

# The metastore is only the lake's catalog here (see tests/spark_jobs/test_landing.py).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.timeout(600),
    pytest.mark.sqlite_pass,
]

SOURCES = ["access", "app", "misc"]
TABLES = (*SOURCES, "_rejects")
HOSTS = ("web-1", "web-2")


def lake_in(metastore_url: str, bucket: S3Bucket) -> LakeLocation:
    """A lake whose warehouse is ``s3://<bucket>/lake`` on the metastore (migrated)."""
    Metastore.open(metastore_url).close()
    return LakeLocation(metastore_url, bucket.url("lake"), NAMESPACE)


@pytest.fixture
def store_lake(metastore_url: str, s3_bucket: S3Bucket) -> LakeLocation:
    """A lake whose warehouse is ``s3://<bucket>/lake`` on the test's metastore."""
    return lake_in(metastore_url, s3_bucket)


def staged(bucket: S3Bucket, tmp_path: Path, checkpoint_id: int) -> CheckpointInput:
    """``stage``'s checkpoint (hosts ``web-1``, ``web-2``) uploaded into the bucket."""
    folder = stage(tmp_path / "local-staging", checkpoint_id, HOSTS)
    return CheckpointInput(bucket.upload(folder, f"staging/{PIPELINE}/{checkpoint_id:08d}"), HOSTS)


@dataclass(frozen=True)
class StoreLanding:
    """Checkpoints staged in a bucket and landed into a lake in it, and the landing's summary."""

    lake: LakeLocation
    bucket: S3Bucket
    inputs: dict[int, CheckpointInput]
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def landed_1_2(
    spark: SparkSession,
    module_metastore_url: str,
    module_s3_bucket: S3Bucket,
    tmp_path_factory: pytest.TempPathFactory,
) -> StoreLanding:
    """Checkpoints 1 and 2 staged in the module's bucket and landed together into a lake in it,
    once for the tests that read it. None of them changes what the landing committed: one
    lands checkpoint 1 again, which commits nothing."""
    lake = lake_in(module_metastore_url, module_s3_bucket)
    folder = tmp_path_factory.mktemp("store-landing")
    inputs = {i: staged(module_s3_bucket, folder, i) for i in (1, 2)}
    summary = land(spark, landing(lake, *inputs.values()))
    return StoreLanding(lake, module_s3_bucket, inputs, summary)


def test_checkpoints_staged_in_the_store_land_into_a_lake_in_the_store_exactly_once(
    landed_1_2: StoreLanding,
) -> None:
    store_lake, s3_bucket, summary = landed_1_2.lake, landed_1_2.bucket, landed_1_2.summary

    for checkpoint_id in (1, 2):
        found = checkpoint_summary(summary, checkpoint_id)
        assert found["rows"] == {"access": 6, "app": 4, "misc": 4}
        assert sum(found["rows"].values()) + sum(found["rejects"].values()) == 2 * LINES_PER_HOST
        for table in SOURCES:
            assert assert_exactly_once(store_lake, table, checkpoint_id) == found["rows"][table]
        rejects = table_rows(store_lake, "_rejects", checkpoint_id)
        assert rejects.num_rows == sum(found["rejects"].values()) > 0
        assert dict(Counter(rejects.column("reason").to_pylist())) == found["rejects"]
    for table in TABLES:
        assert snapshot_operations(store_lake, table) == [("append", "1,2")]
    with open_lake(store_lake) as catalog:
        landed = landed_checkpoints(catalog, SOURCES, (1, 2))
        access = catalog.load("access")
        assert access is not None
        assert access.location().startswith(f"s3://{s3_bucket.name}/lake/")
        paths = access.inspect.files().column("file_path").to_pylist()
    for checkpoint_id, held in landed.items():
        assert held.lines == 2 * LINES_PER_HOST
        assert held.rows == checkpoint_summary(summary, checkpoint_id)["rows"]
    assert paths and all(p.startswith(f"s3://{s3_bucket.name}/lake/") for p in paths)
    for path in paths:  # <table>/data/landing-<uuid>/checkpoint=N/event_time_date=YYYY-MM-DD/
        folders = path.split("/")
        assert folders[-4].startswith("landing-") and folders[-3] in (
            "checkpoint=1",
            "checkpoint=2",
        )
        assert folders[-2].startswith("event_time_date=") and folders[-1].endswith(".parquet")


def test_landing_a_committed_checkpoint_again_commits_nothing(
    spark: SparkSession, landed_1_2: StoreLanding
) -> None:
    store_lake, checkpoint, first = landed_1_2.lake, landed_1_2.inputs[1], landed_1_2.summary
    before = {table: snapshot_operations(store_lake, table) for table in TABLES}

    again = land(spark, landing(store_lake, checkpoint, landing_id="landing-2"))

    assert {table: snapshot_operations(store_lake, table) for table in TABLES} == before
    for table in TABLES:
        assert again["tables"][table]["already_committed"] == [1]
        assert "committed" not in again["tables"][table]
        assert again["tables"][table]["snapshot_id"] == first["tables"][table]["snapshot_id"]
    assert assert_exactly_once(store_lake, "access", 1) == 6


def test_a_reprocess_replaces_a_checkpoint_in_the_store_in_one_commit(
    spark: SparkSession, store_lake: LakeLocation, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    checkpoint = staged(s3_bucket, tmp_path, 9)
    land(spark, landing(store_lake, checkpoint))
    before = set(table_rows(store_lake, "access", 9).column("event_id").to_pylist())

    land(spark, landing(store_lake, checkpoint, landing_id="reprocess", mode=LandingMode.REPLACE))

    assert snapshot_operations(store_lake, "access")[0] == ("append", "9")
    assert snapshot_operations(store_lake, "access")[-1][1] == "9"
    assert len(snapshot_operations(store_lake, "access")) > 1
    assert assert_exactly_once(store_lake, "access", 9) == 6
    assert set(table_rows(store_lake, "access", 9).column("event_id").to_pylist()) == before


def test_no_credential_is_written_into_the_catalog_or_the_table_metadata(
    landed_1_2: StoreLanding,
) -> None:
    store_lake, s3_bucket = landed_1_2.lake, landed_1_2.bucket

    metadata = [key for key in s3_bucket.keys("lake") if "/metadata/" in key]
    assert metadata
    for key in metadata:
        if key.endswith(".json"):
            document = s3_bucket.read(key)
            assert SECRET_KEY.encode() not in document
            properties = json.loads(document).get("properties", {})
            assert not [name for name in properties if name.startswith("s3.")]
    engine = sa.create_engine(store_lake.catalog_url)
    try:
        with engine.connect() as connection:
            for table in ("iceberg_tables", "iceberg_namespace_properties"):
                for row in connection.execute(sa.text(f"SELECT * FROM {table}")):
                    assert SECRET_KEY not in " ".join(str(value) for value in row)
    finally:
        engine.dispose()


@contextmanager
def reader(lake: LakeLocation, expected: int, violations: list[str]) -> Iterator[list[int]]:
    """A thread scanning ``access`` through the catalog until the block ends: each checkpoint
    it sees must hold ``expected`` rows, each event id once. Each snapshot is scanned once
    (its files never change); yields the ids of the snapshots scanned."""
    stop = threading.Event()
    scans: list[int] = []

    def scan() -> None:
        with open_lake(lake) as catalog:
            while not stop.is_set():
                table = catalog.load("access")
                snapshot = table.current_snapshot() if table is not None else None
                if table is None or snapshot is None or snapshot.snapshot_id in scans[-1:]:
                    time.sleep(0.05)
                    continue
                rows: pa.Table = table.scan(
                    snapshot_id=snapshot.snapshot_id,
                    selected_fields=("event_id", "checkpoint_id"),
                ).to_arrow()
                counts = Counter(rows.column("checkpoint_id").to_pylist())
                for checkpoint_id, n in counts.items():
                    if n != expected:
                        violations.append(f"checkpoint {checkpoint_id}: {n} rows")
                if len(set(rows.column("event_id").to_pylist())) != rows.num_rows:
                    violations.append(f"snapshot {snapshot.snapshot_id}: an event id twice")
                scans.append(snapshot.snapshot_id)

    thread = threading.Thread(target=scan, name="lake-reader", daemon=True)
    thread.start()
    try:
        yield scans
    finally:
        stop.set()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the reader did not stop"


def test_a_reader_never_sees_a_partial_checkpoint_and_a_day_compacts_in_the_store(
    spark: SparkSession, store_lake: LakeLocation, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    inputs = {i: staged(s3_bucket, tmp_path, i) for i in range(5, 9)}
    land(spark, landing(store_lake, inputs[5], landing_id="first"))
    violations: list[str] = []

    with reader(store_lake, 6, violations) as scans:
        land(spark, landing(store_lake, inputs[6], landing_id="second"))
        land(spark, landing(store_lake, inputs[7], inputs[8], landing_id="third"))
        with open_lake(store_lake) as catalog:
            table = catalog.load("access")
            assert table is not None
            days = {day: n for day, n in files_per_day(table).items() if day is not None}
            busiest = max(days, key=lambda day: days[day])
            compaction = compact_table(table, busiest)
            after = files_per_day(table)
        time.sleep(0.5)

    assert violations == []
    assert len(scans) >= 3  # the first landing's snapshot and later ones
    assert days[busiest] > 1
    assert compaction.committed and compaction.files_before == days[busiest]
    assert after[busiest] == compaction.files_after < days[busiest]
    for checkpoint_id in range(5, 9):
        assert assert_exactly_once(store_lake, "access", checkpoint_id) == 6
    with open_lake(store_lake) as catalog:
        table = catalog.load("access")
        assert table is not None
        orphan = f"{table.location().removeprefix('s3://')}/data/orphan.parquet"
        s3_bucket.write(orphan, b"x")
        data = orphan.split("/", 1)[1].rsplit("/", 1)[0]
        before = set(s3_bucket.keys(data))
        removed = remove_orphan_files(table, grace=timedelta(0))
    # Of the data, the orphan only: the files compaction replaced are still referenced by
    # older snapshots. The others removed are manifests the landings' commits merged away.
    assert before - set(s3_bucket.keys(data)) == {orphan}
    assert removed >= 1
    assert sum(assert_exactly_once(store_lake, "access", i) for i in range(5, 9)) == 24
