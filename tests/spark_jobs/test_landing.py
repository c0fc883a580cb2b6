"""Landing sealed checkpoints into the lake tables: counts, commits, idempotency, schema
evolution, empty and broken batches."""

from __future__ import annotations

import dataclasses
import json
import uuid
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow.compute as pc
import pytest
from pyiceberg.schema import Schema
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.lake import (
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    landed_checkpoints,
    open_lake,
    source_schema,
)
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    EventCut,
    ManifestError,
    checkpoint_dir,
)
from pipeline_core.testing import table_rows
from spark_jobs import landing as landing_module
from spark_jobs import staging
from spark_jobs.checkpoint import FileKey, read_checkpoint, staged_lines
from spark_jobs.formats import _common as formats_common
from spark_jobs.formats import nginx, parse
from spark_jobs.lake import landing_folder, write_files
from spark_jobs.landing import CheckpointInput, land, read_source
from spark_jobs.reconciliation import LandedKey, LandingCountError, files_with_rejects
from spark_jobs.verification import PartChecksumError, PartSizeError, verify_parts
from tests.spark_jobs.support import (
    ACCESS,
    LINES_PER_HOST,
    MISC,
    PIPELINE,
    checkpoint_summary,
    edit_manifest,
    landing,
    stage,
    staged_event_ids,
)
from tests.support.lake import assert_exactly_once, snapshot_operations
from tests.support.staging import (
    DEFAULT_SEALED_AT,
    Event,
    Line,
    LongLine,
    line_offsets,
    write_batch,
    write_empty_batch,
)

# The metastore is only the lake's catalog here: its PostgreSQL side is tested by
# tests/pipeline_core/lake and the fault tests, so make test lands these on SQLite only.
pytestmark = pytest.mark.sqlite_pass

SOURCES = ("access", "app", "misc")
TABLES = (*SOURCES, "_rejects")


def table_files(lake: LakeLocation, table: str) -> set[str]:
    """The data files of ``table``'s current snapshot."""
    with open_lake(lake) as catalog:
        loaded = catalog.load(table)
        assert loaded is not None
        return set(loaded.inspect.files().column("file_path").to_pylist())


def table_commits(lake: LakeLocation, table: str) -> int:
    """How many times ``table`` was committed since it was created (each commit writes one
    metadata file)."""
    with open_lake(lake) as catalog:
        loaded = catalog.load(table)
        assert loaded is not None
        return len(loaded.metadata.metadata_log)


def rows_by_checkpoint(lake: LakeLocation, table: str) -> dict[int, int]:
    counts = Counter(table_rows(lake, table).column("checkpoint_id").to_pylist())
    return dict(sorted(counts.items()))


def event_ids(lake: LakeLocation, table: str, checkpoint_id: int) -> list[str]:
    return sorted(table_rows(lake, table, checkpoint_id).column("event_id").to_pylist())


@dataclasses.dataclass(frozen=True)
class Landed:
    """A landing the module's tests share, made once: its lake, its checkpoints and its summary.
    The tests that use it only read its lake."""

    lake: LakeLocation
    inputs: tuple[CheckpointInput, ...]
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def landed_3(
    spark: SparkSession, module_lake: LakeLocation, tmp_path_factory: pytest.TempPathFactory
) -> Landed:
    """``stage``'s checkpoint 3 (hosts ``web-1``, ``web-2``) landed into a lake of its own."""
    staged = CheckpointInput(str(stage(tmp_path_factory.mktemp("checkpoint-3"), 3)))
    return Landed(module_lake, (staged,), land(spark, landing(module_lake, staged)))


@pytest.fixture(scope="module")
def landed_together(
    spark: SparkSession, module_lake: LakeLocation, tmp_path_factory: pytest.TempPathFactory
) -> Landed:
    """Checkpoints 1 (``web-1``), 2 (``web-1``, ``web-2``) and 3 (``web-1`` and ``web-3`` of
    the three hosts staged) landed together, in one landing, into a lake of their own."""
    folder = tmp_path_factory.mktemp("together")
    lake = dataclasses.replace(module_lake, warehouse=folder / "lake", namespace="together")
    staging = folder / "staging"
    stage(staging, 1, ("web-1",))
    stage(staging, 2, ("web-1", "web-2"))
    stage(staging, 3, ("web-1", "web-2", "web-3"))
    inputs = (
        CheckpointInput(str(checkpoint_dir(staging, PIPELINE, 1))),
        CheckpointInput(str(checkpoint_dir(staging, PIPELINE, 2))),
        CheckpointInput(str(checkpoint_dir(staging, PIPELINE, 3)), ("web-1", "web-3")),
    )
    return Landed(lake, inputs, land(spark, landing(lake, *inputs)))


@pytest.mark.spark
def test_land_writes_rows_rejects_and_summary(landed_3: Landed) -> None:
    lake, summary = landed_3.lake, landed_3.summary

    assert (summary["landing_id"], summary["mode"]) == ("landing-1", "append")
    assert summary["checkpoints"] == [
        {
            "checkpoint_id": 3,
            "rows": {"access": 6, "app": 4, "misc": 4},
            "rejects": {  # per host: 5 from access, 1 from app
                "bad_timestamp": 2,
                "invalid_json": 2,
                "invalid_utf8": 4,
                "no_match": 6,
            },
            "rescued": {},  # no source declares columns
            "input_lines": 2 * LINES_PER_HOST,
            "input_events": 2 * LINES_PER_HOST,
            "batches": 2,
        }
    ]
    with open_lake(lake) as catalog:
        for table in TABLES:
            loaded = catalog.load(table)
            assert loaded is not None
            snapshot = loaded.current_snapshot()
            assert snapshot is not None
            assert summary["tables"][table] == {
                "snapshot_id": snapshot.snapshot_id,
                "committed": [3],
            }
        access = catalog.load("access")
        assert access is not None
        files = access.inspect.files().to_pylist()
    for table, rows in summary["checkpoints"][0]["rows"].items():
        assert table_rows(lake, table, 3).num_rows == rows

    # Partitioned by the UTC day of event_time (23:59:59 -0100 is on the 23rd), each data file
    # in the folder of its day.
    days = {row["partition"]["event_time_day"] for row in files}
    assert days == {date(2026, 11, 21), date(2026, 11, 22), date(2026, 11, 23)}
    for row in files:
        day = row["partition"]["event_time_day"]
        assert f"/checkpoint=3/event_time_date={day.isoformat()}/" in row["file_path"]
    access_rows = table_rows(lake, "access", 3).to_pylist()
    assert {row["host"] for row in access_rows} == {"web-1", "web-2"}
    offsets = line_offsets(ACCESS, 3000)
    assert sorted(row["event_id"] for row in access_rows if row["host"] == "web-1") == sorted(
        f"000000000000aaaa:{offsets[index]}" for index in (0, 1, 7)
    )
    assert {row["event_time"].tzinfo is not None for row in access_rows} == {True}
    rejects = table_rows(lake, "_rejects", 3).to_pylist()
    assert Counter(row["source"] for row in rejects) == {"access": 12, "app": 2}
    assert {row["sealed_at"] for row in rejects} == {DEFAULT_SEALED_AT}


@pytest.mark.spark
def test_a_session_without_the_java_functions_lands_the_same_rows(
    spark: SparkSession, landed_3: Landed, lake: LakeLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_jvm = landed_3.summary
    for module in (staging, nginx, formats_common):  # as in a session without the jar
        monkeypatch.setattr(module, "enable_jvm_functions", lambda session: False)
    in_python = land(spark, landing(lake, *landed_3.inputs))

    assert (in_jvm["segment_reader"], in_python["segment_reader"]) == ("jvm", "python")
    assert (in_jvm["nginx_scanner"], in_python["nginx_scanner"]) == ("jvm", "regex")
    assert (in_jvm["pattern_matcher"], in_python["pattern_matcher"]) == ("jvm", "regex")
    assert in_jvm["checkpoints"] == in_python["checkpoints"]
    for table in TABLES:
        jvm_rows, python_rows = table_rows(landed_3.lake, table), table_rows(lake, table)
        assert jvm_rows.num_rows > 0
        assert jvm_rows.sort_by("event_id").equals(python_rows.sort_by("event_id"))


@pytest.mark.spark
def test_checkpoints_landed_together_make_one_snapshot_per_table(landed_together: Landed) -> None:
    lake, summary = landed_together.lake, landed_together.summary

    assert [c["checkpoint_id"] for c in summary["checkpoints"]] == [1, 2, 3]
    for table in TABLES:
        assert snapshot_operations(lake, table) == [("append", "1,2,3")]
        assert summary["tables"][table]["committed"] == [1, 2, 3]
        assert "already_committed" not in summary["tables"][table]
        assert table_commits(lake, table) == 1
    assert rows_by_checkpoint(lake, "access") == {1: 3, 2: 6, 3: 6}  # 3: two hosts of three
    for checkpoint in summary["checkpoints"]:
        for table, rows in checkpoint["rows"].items():
            assert assert_exactly_once(lake, table, checkpoint["checkpoint_id"]) == rows


@pytest.mark.spark
def test_append_leaves_out_the_checkpoints_a_table_holds_and_landing_them_again_commits_nothing(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    """An append lands the checkpoints its tables do not hold yet. A retried landing (the job
    crashed after its commits, before the metastore's) finds every checkpoint in the tables:
    the files it wrote again are orphans, never read."""
    staging = tmp_path / "staging"
    one, two = stage(staging, 1, hosts=("web-1",)), stage(staging, 2)
    first = land(spark, landing(lake, one))

    both = land(spark, landing(lake, one, two, landing_id="landing-2"))

    for table in TABLES:
        assert {k: v for k, v in both["tables"][table].items() if k != "snapshot_id"} == {
            "already_committed": [1],
            "committed": [2],
        }
        assert snapshot_operations(lake, table) == [("append", "1"), ("append", "2")]
    assert checkpoint_summary(both, 1) == checkpoint_summary(first, 1)
    assert rows_by_checkpoint(lake, "access") == {1: 3, 2: 6}
    for table in TABLES:
        assert assert_exactly_once(lake, table) == sum(rows_by_checkpoint(lake, table).values())
    files = {table: table_files(lake, table) for table in TABLES}

    again = land(spark, landing(lake, one, two, landing_id="landing-3"))  # landing-2, retried

    assert again["checkpoints"] == both["checkpoints"]
    for table in TABLES:
        assert again["tables"][table] == {
            "snapshot_id": both["tables"][table]["snapshot_id"],
            "already_committed": [1, 2],
        }
        assert snapshot_operations(lake, table) == [("append", "1"), ("append", "2")]
        assert table_files(lake, table) == files[table]
    for table in SOURCES:
        total = sum(c["rows"][table] for c in both["checkpoints"])
        assert assert_exactly_once(lake, table) == total
    assert assert_exactly_once(lake, "_rejects") == sum(
        sum(c["rejects"].values()) for c in both["checkpoints"]
    )
    with open_lake(lake) as catalog:
        access = catalog.load("access")
        assert access is not None
        data = Path(urlparse(access.location()).path) / "data"
    assert len(list(data.glob("landing-*"))) == 3  # every landing wrote; two were committed


@pytest.mark.spark
def test_replace_swaps_a_checkpoints_rows_in_one_commit(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    one, two = stage(staging, 1), stage(staging, 2)
    land(spark, landing(lake, one, two))
    kept = {table: event_ids(lake, table, 1) for table in TABLES}
    files = {table: table_files(lake, table) for table in TABLES}
    commits = {table: table_commits(lake, table) for table in TABLES}
    # Reprocess checkpoint 2 as made of web-1's batch only.
    reprocess = landing(
        lake,
        CheckpointInput(str(two), ("web-1",)),
        landing_id="reprocess-1",
        mode=LandingMode.REPLACE,
    )

    summary = land(spark, reprocess)

    assert checkpoint_summary(summary, 2)["batches"] == 1
    for table in TABLES:
        assert summary["tables"][table]["committed"] == [2]
        assert table_commits(lake, table) == commits[table] + 1  # readers see old or new rows
        assert snapshot_operations(lake, table) == [
            ("append", "1,2"),
            ("delete", "2"),
            ("append", "2"),
        ]
        assert event_ids(lake, table, 1) == kept[table]
        assert {path for path in table_files(lake, table) if "/checkpoint=1/" in path} == {
            path for path in files[table] if "/checkpoint=1/" in path
        }
        assert set(table_rows(lake, table, 2).column("host").to_pylist()) == {"web-1"}
    for table, rows in checkpoint_summary(summary, 2)["rows"].items():
        assert assert_exactly_once(lake, table, 2) == rows
    rejects = sum(checkpoint_summary(summary, 2)["rejects"].values())
    assert assert_exactly_once(lake, "_rejects", 2) == rejects
    replaced = {table: event_ids(lake, table, 2) for table in TABLES}

    retried = land(spark, reprocess)  # the same landing again: its task was retried

    for table in TABLES:
        assert retried["tables"][table] == {
            "snapshot_id": summary["tables"][table]["snapshot_id"],
            "already_committed": [2],
        }
        assert table_commits(lake, table) == commits[table] + 1
        assert event_ids(lake, table, 2) == replaced[table]
        assert event_ids(lake, table, 1) == kept[table]


@pytest.mark.spark
def test_a_column_the_declared_schema_gained_is_added_and_old_rows_read_it_as_null(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    older = Schema(
        *(f for f in source_schema("nginx_combined").fields if f.name != "http_user_agent")
    )
    parts = verify_parts(read_checkpoint(stage(staging, 1, hosts=("web-1",))).parts)
    with open_lake(lake) as catalog:  # checkpoint 1 landed when access had no user agent
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        table = catalog.ensure_table("access", older, "nginx_combined")
        rows = parse(read_source(spark, parts, "access"), "nginx_combined")[0]
        written = write_files(
            rows.drop("http_user_agent"), landing_folder(table.location()), "event_time"
        )
        commit_files(table, TableCommit(written.files, (1,), "older-job", LandingMode.APPEND))
    old_files = table_files(lake, "access")
    assert len(old_files) > 0

    land(spark, landing(lake, stage(staging, 2, hosts=("web-1",))))

    with open_lake(lake) as catalog:
        access = catalog.load("access")
        assert access is not None
        assert [s.schema_id for s in access.schemas().values()] == [0, 1]
        assert [f.name for f in access.schema().fields][-1] == "http_user_agent"
        assert "http_user_agent" not in {f.name for f in access.schemas()[0].fields}
    assert snapshot_operations(lake, "access") == [("append", "1"), ("append", "2")]
    new_files = table_files(lake, "access") - old_files
    assert old_files < table_files(lake, "access")
    assert {"/checkpoint=2/" in path for path in new_files} == {True}
    old = table_rows(lake, "access", 1)
    assert old.num_rows == 3
    assert old.column("http_user_agent").null_count == 3
    assert pc.min(old.column("event_time")).as_py() == datetime(
        2026, 11, 21, 8, tzinfo=timezone.utc
    )
    new = table_rows(lake, "access", 2)
    assert sorted(new.column("http_user_agent").to_pylist()) == ["-", "curl/8.5.0", "probe"]


@pytest.mark.spark
def test_rows_and_rejects_of_each_checkpoint_are_its_staged_lines(landed_together: Landed) -> None:
    lake, inputs, summary = landed_together.lake, landed_together.inputs, landed_together.summary

    staged: Counter[FileKey] = Counter()
    for item in inputs:
        staged.update(staged_lines(read_checkpoint(item.folder, item.hosts).parts))
    landed: Counter[FileKey] = Counter()
    ids: set[tuple[int, str]] = set()
    for table in TABLES:
        for row in table_rows(lake, table).to_pylist():
            source = row["source"] if table == "_rejects" else table
            landed[(row["checkpoint_id"], source, row["host"], row["file_fingerprint"])] += 1
            ids.add((row["checkpoint_id"], row["event_id"]))
    assert landed == staged
    assert ids == (
        staged_event_ids(1, {"web-1": 0})
        | staged_event_ids(2, {"web-1": 0, "web-2": 1})
        | staged_event_ids(3, {"web-1": 0, "web-3": 2})
    )
    assert sum(landed.values()) == len(ids) == 5 * LINES_PER_HOST
    with open_lake(lake) as catalog:
        found = landed_checkpoints(catalog, list(SOURCES), [1, 2, 3])
    for checkpoint in summary["checkpoints"]:
        read_back = found[checkpoint["checkpoint_id"]]
        assert read_back.rows == checkpoint["rows"]
        assert read_back.rejects == checkpoint["rejects"]
        assert read_back.lines == checkpoint["input_lines"]


@pytest.mark.spark
def test_checkpoint_without_rejects_writes_no_rejects(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging dir %41"  # Spark names files by URI: %-escapes on the way
    lake = dataclasses.replace(lake, warehouse=tmp_path / "lake dir %41")
    write_batch(staging, PIPELINE, 5, "web-1", "access", "nginx_combined", [ACCESS[0]], "f" * 16)

    summary = land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 5)))

    assert checkpoint_summary(summary, 5)["rows"] == {"access": 1}
    assert checkpoint_summary(summary, 5)["rejects"] == {}
    assert summary["tables"]["_rejects"] == {"snapshot_id": None, "committed": [5]}
    assert snapshot_operations(lake, "_rejects") == []
    assert table_rows(lake, "_rejects").num_rows == 0
    assert event_ids(lake, "access", 5) == [f"{'f' * 16}:0"]


@pytest.mark.spark
def test_empty_checkpoints_land_zero_rows(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    write_empty_batch(staging, PIPELINE, 8, "web-1")
    write_batch(staging, PIPELINE, 8, "web-2", "access", "nginx_combined", [], "e" * 16)
    checkpoint_dir(staging, PIPELINE, 9).mkdir(parents=True)

    with_manifests = land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 8)))
    without = land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 9)))

    eight, nine = checkpoint_summary(with_manifests, 8), checkpoint_summary(without, 9)
    assert eight["rows"] == {"access": 0}
    assert (eight["input_lines"], eight["batches"]) == (0, 2)
    assert (nine["rows"], nine["input_lines"], nine["batches"]) == ({}, 0, 0)
    assert eight["rejects"] == nine["rejects"] == {}
    assert with_manifests["tables"] == {
        "access": {"snapshot_id": None, "committed": [8]},
        "_rejects": {"snapshot_id": None, "committed": [8]},
    }
    assert without["tables"] == {"_rejects": {"snapshot_id": None, "committed": [9]}}
    for table in ("access", "_rejects"):
        assert snapshot_operations(lake, table) == []
        assert table_rows(lake, table).num_rows == 0


@pytest.mark.spark
def test_part_of_another_size_than_its_manifest_fails_before_the_lake_changes(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    batch = write_batch(staging, PIPELINE, 6, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    part = batch / "part-access-00000.lines"
    size = part.stat().st_size
    part.write_bytes(ACCESS[0] + b"\n")

    found = len(ACCESS[0]) + 1
    message = rf"part-access-00000\.lines: manifest says {size} bytes, file has {found}"
    with pytest.raises(PartSizeError, match=message):
        land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 6)))
    assert not Path(lake.warehouse).exists()
    with open_lake(lake) as catalog:
        assert catalog.load("access") is None


@pytest.mark.spark
def test_part_changed_in_place_fails_and_leaves_the_earlier_landing(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staged = stage(tmp_path / "staging", 6, hosts=("web-1",))
    summary = land(spark, landing(lake, staged))
    part = staged / "web-1" / "part-access-00000.lines"
    intact = part.read_bytes()
    part.write_bytes(b"\0" * len(intact))  # a disk error: same size, other bytes

    with pytest.raises(PartChecksumError, match=r"part-access-00000\.lines: manifest says CRC-32"):
        land(spark, landing(lake, staged, mode=LandingMode.REPLACE))

    assert (
        assert_exactly_once(lake, "access", 6) == checkpoint_summary(summary, 6)["rows"]["access"]
    )
    for table in TABLES:
        assert snapshot_operations(lake, table) == [("append", "6")]


@pytest.mark.spark
def test_checkpoints_that_declare_a_source_differently_are_refused(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    write_batch(staging, PIPELINE, 1, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    write_batch(staging, PIPELINE, 2, "web-1", "access", "raw", MISC, "b" * 16)
    folders = [checkpoint_dir(staging, PIPELINE, 1), checkpoint_dir(staging, PIPELINE, 2)]

    message = r"source 'access' is declared as .* in checkpoint 2, as .*: land those checkpoints"
    with pytest.raises(ManifestError, match=message):
        land(spark, landing(lake, *folders))
    assert not Path(lake.warehouse).exists()


@pytest.mark.spark
def test_segment_whose_lines_differ_when_read_fails_the_spark_job(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The executors check every segment again (the part changed after the driver checked)."""
    batch = write_batch(
        tmp_path, PIPELINE, 6, "web-1", "access", "nginx_combined", ACCESS, "a" * 16,
        lines_per_segment=4,
    )  # fmt: skip
    checkpoint = read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 6))
    staged = verify_parts(checkpoint.parts)
    part = batch / "part-access-00000.lines"
    data = bytearray(part.read_bytes())
    second_offset = sum(len(line) + 1 for line in ACCESS[:4])
    data[second_offset + 1] = ord("\n")  # one more line in the second segment
    part.write_bytes(bytes(data))

    more = rf"part-access-00000\.lines: the segment at part_offset {second_offset} \("
    with pytest.raises(Exception, match=more + r"\d+ bytes\) holds 5 lines, the manifest says 4"):
        read_source(spark, staged, "access").collect()

    part.write_bytes(bytes(data[: second_offset + 10]))
    # Every segment from the second on is cut short; whichever task fails first is reported.
    short = r"part-access-00000\.lines: short read: the segment at part_offset \d+ "
    with pytest.raises(Exception, match=short):
        read_source(spark, staged, "access").collect()


@pytest.mark.spark
def test_read_source_reads_the_lines_of_the_files_asked_for_in_staging_order(
    spark: SparkSession, tmp_path: Path
) -> None:
    staged = verify_parts(
        [
            *read_checkpoint(stage(tmp_path / "staging", 3)).parts,
            *read_checkpoint(stage(tmp_path / "staging", 4, ("web-1",))).parts,
        ]
    )

    every = read_source(spark, staged, "access").collect()
    only = read_source(spark, staged, "access", {(3, "web-2", "000100000000aaaa")}).collect()

    assert [
        (row["checkpoint_id"], row["host"], row["byte_offset"], row["line"]) for row in every
    ] == [
        (checkpoint_id, host, offset, line)
        for checkpoint_id, hosts in ((3, ("web-1", "web-2")), (4, ("web-1",)))
        for host in hosts
        for offset, line in zip(line_offsets(ACCESS, 1000 * checkpoint_id), ACCESS, strict=True)
    ]
    assert {row["file_fingerprint"] for row in every} == {"000000000000aaaa", "000100000000aaaa"}
    assert [row["line"] for row in only] == ACCESS
    assert {(row["checkpoint_id"], row["host"], row["file_fingerprint"]) for row in only} == {
        (3, "web-2", "000100000000aaaa")
    }
    assert {row["source"] for row in every} == {"access"}
    assert {row["sealed_at"] for row in every} == {datetime(2026, 11, 22, 10, 0, 0, 123456)}


@pytest.mark.spark
def test_unterminated_last_line_is_a_line(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    batch = write_batch(
        tmp_path, PIPELINE, 5, "web-1", "misc", "raw", [*MISC, b"", b"last\r"], "c" * 16,
        lines_per_segment=2,
    )  # fmt: skip
    part = batch / "part-misc-00000.lines"
    part.write_bytes(part.read_bytes()[:-1])  # the last line loses its \n

    def unterminate(manifest: dict[str, Any]) -> None:
        entry = manifest["parts"][0]
        entry["bytes"] -= 1
        entry["segments"][-1]["length"] -= 1
        entry["crc32"] = f"{zlib.crc32(part.read_bytes()):08x}"

    edit_manifest(batch, unterminate)
    summary = land(spark, landing(lake, checkpoint_dir(tmp_path, PIPELINE, 5)))

    assert checkpoint_summary(summary, 5)["rows"] == {"misc": 4}
    messages = table_rows(lake, "misc", 5).column("message").to_pylist()
    assert sorted(messages) == sorted(["free text", "\ufffd\ufffd", "", "last"])


@pytest.mark.spark
def test_an_over_long_line_lands_as_one_line_too_long_reject(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    """Its prefix would parse as a whole line; the line still lands only as its reject."""
    access: list[Line] = [ACCESS[0], LongLine(ACCESS[1], 5_000_000), ACCESS[7]]
    misc: list[Line] = [b"free text", LongLine(b"caf\xc3", 2_000_000)]
    write_batch(tmp_path, PIPELINE, 8, "web-1", "access", "nginx_combined", access, "a" * 16, 100)
    write_batch(tmp_path, PIPELINE, 8, "web-1", "misc", "raw", misc, "c" * 16)

    summary = land(spark, landing(lake, checkpoint_dir(tmp_path, PIPELINE, 8)))

    assert checkpoint_summary(summary, 8)["rows"] == {"access": 2, "misc": 1}
    assert checkpoint_summary(summary, 8)["rejects"] == {"line_too_long": 2}
    offsets = line_offsets(access, 100)
    assert sorted(table_rows(lake, "access", 8).column("byte_offset").to_pylist()) == [
        offsets[0],
        offsets[2],
    ]
    rejects = sorted(
        table_rows(lake, "_rejects", 8).to_pylist(), key=lambda row: str(row["source"])
    )
    assert rejects == [
        {
            "event_id": f"{'a' * 16}:{offsets[1]}",
            "file_fingerprint": "a" * 16,
            "byte_offset": offsets[1],
            "host": "web-1",
            "source": "access",
            "raw_line": ACCESS[1].decode(),
            "line_bytes": 5_000_000,
            "reason": "line_too_long",
            "sealed_at": DEFAULT_SEALED_AT,
            "checkpoint_id": 8,
        },
        {
            "event_id": f"{'c' * 16}:10",
            "file_fingerprint": "c" * 16,
            "byte_offset": 10,
            "host": "web-1",
            "source": "misc",
            "raw_line": "caf\ufffd",
            "line_bytes": 2_000_000,
            "reason": "line_too_long",
            "sealed_at": DEFAULT_SEALED_AT,
            "checkpoint_id": 8,
        },
    ]


SERVICE: list[Line] = [
    b"2026-11-22 10:00:00,001 INFO started",
    Event(
        (
            b"2026-11-22 10:00:01,002 ERROR app: request failed",
            b"Traceback (most recent call last):",
            b'  File "/srv/app.py", line 3, in <module>',
            b"KeyError: 'caf\xc3\xa9'",
        )
    ),
    b"2026-11-22 10:00:02,003 INFO ok",
    Event(
        (
            b"java.lang.IllegalStateException: boom\r",
            b"\tat sluice.Main.run(Main.java:10)\r",
            b"\t... 3 more\r",
        )
    ),
    Event((b"\tat the.tail.Of(A.java:1)", b"\tat a.cut.One(B.java:2)"), EventCut.HEADLESS),
    Event((b"2026-11-22 10:00:03,004 ERROR closed at max_lines",), EventCut.LINES),
]
"""A raw source's events: 6 events of 12 lines, a Python traceback, a Java stack trace of CRLF
lines, an event whose head is missing and one a bound closed."""
SERVICE_MESSAGES = [
    ("2026-11-22 10:00:00,001 INFO started", 1, None),
    (
        "2026-11-22 10:00:01,002 ERROR app: request failed\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 3, in <module>\n'
        "KeyError: 'café'",
        4,
        None,
    ),
    ("2026-11-22 10:00:02,003 INFO ok", 1, None),
    (
        "java.lang.IllegalStateException: boom\n\tat sluice.Main.run(Main.java:10)\n\t... 3 more",
        3,
        None,
    ),
    ("\tat the.tail.Of(A.java:1)\n\tat a.cut.One(B.java:2)", 2, "headless"),
    ("2026-11-22 10:00:03,004 ERROR closed at max_lines", 1, "lines"),
]
PRETTY: list[Line] = [
    Event((b"{", b'  "ts": "2026-11-22T09:00:00Z",', b'  "msg": "pretty"', b"}")),
    b'{"ts": "2026-11-22T11:00:00Z", "msg": "one line"}',
    Event((b"{", b'  "msg": "never closed"')),
]
"""A JSON source's events: 3 events of 7 lines, one a reject."""
STACKED_ACCESS: list[Line] = [ACCESS[0], Event((ACCESS[7], b"  a stray continuation"))]
"""An nginx source's events: 2 events of 3 lines, one a reject."""


def stage_events(staging: Path, checkpoint_id: int) -> Path:
    """A checkpoint of one host whose manifest lists multiline events (format 5): the raw,
    JSON and nginx events above, in segments of two events (or lines)."""
    for source, fmt, items, suffix in (
        ("service", "raw", SERVICE, "dddd"),
        ("app", "json_lines", PRETTY, "bbbb"),
        ("access", "nginx_combined", STACKED_ACCESS, "aaaa"),
    ):
        write_batch(
            staging, PIPELINE, checkpoint_id, "web-1", source, fmt, items, f"{'0' * 12}{suffix}",
            100, time_field="ts", lines_per_segment=2,
        )  # fmt: skip
    return checkpoint_dir(staging, PIPELINE, checkpoint_id)


@pytest.mark.spark
@pytest.mark.parametrize("reader", ["jvm", "python"])
def test_a_multiline_event_lands_as_one_row_and_the_counts_are_of_events(
    spark: SparkSession,
    lake: LakeLocation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reader: str,
) -> None:
    folder = stage_events(tmp_path / "staging", 6)
    manifest = json.loads((folder / "web-1" / MANIFEST_NAME).read_text())
    assert manifest["format_version"] == 5
    assert manifest["line_count"] == 12 + 7 + 3
    if reader == "python":  # as in a session without the jar
        for module in (staging, nginx):
            monkeypatch.setattr(module, "enable_jvm_functions", lambda session: False)

    summary = land(spark, landing(lake, folder))

    assert summary["segment_reader"] == reader
    assert summary["checkpoints"] == [
        {
            "checkpoint_id": 6,
            "rows": {"access": 1, "app": 2, "service": 6},
            "rejects": {"invalid_json": 1, "no_match": 1},
            "rescued": {},
            "input_lines": 22,
            "input_events": 11,
            "batches": 1,
        }
    ]
    offsets = line_offsets(SERVICE, 100)
    service = sorted(table_rows(lake, "service", 6).to_pylist(), key=lambda row: row["byte_offset"])
    assert [row["byte_offset"] for row in service] == offsets
    assert [row["event_id"] for row in service] == [f"{'0' * 12}dddd:{o}" for o in offsets]
    assert [(row["message"], row["event_lines"], row["cut"]) for row in service] == (
        SERVICE_MESSAGES
    )
    assert {row["event_time"] for row in service} == {DEFAULT_SEALED_AT}
    app = sorted(table_rows(lake, "app", 6).to_pylist(), key=lambda row: row["byte_offset"])
    json_offsets = line_offsets(PRETTY, 100)
    assert json_offsets == [100, 154, 204]
    assert [(row["byte_offset"], row["payload"]) for row in app] == [
        (100, '{\n  "ts": "2026-11-22T09:00:00Z",\n  "msg": "pretty"\n}'),
        (154, '{"ts": "2026-11-22T11:00:00Z", "msg": "one line"}'),
    ]
    assert app[0]["event_time"] == datetime(2026, 11, 22, 9, tzinfo=timezone.utc)
    rejects = sorted(table_rows(lake, "_rejects", 6).to_pylist(), key=lambda row: row["source"])
    stacked = ACCESS[7] + b"\n  a stray continuation"
    assert [
        (row["source"], row["byte_offset"], row["reason"], row["raw_line"], row["line_bytes"])
        for row in rejects
    ] == [
        ("access", 100 + len(ACCESS[0]) + 1, "no_match", stacked.decode(), len(stacked)),
        ("app", 204, "invalid_json", '{\n  "msg": "never closed"', 25),
    ]
    with open_lake(lake) as catalog:
        found = landed_checkpoints(catalog, ["access", "app", "service"], [6])[6]
    assert found.lines == 11


@pytest.mark.spark
def test_a_raw_table_made_before_multiline_events_gains_their_columns(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    older = Schema(
        *(f for f in source_schema("raw").fields if f.name not in ("event_lines", "cut"))
    )
    write_batch(staging, PIPELINE, 1, "web-1", "service", "raw", MISC, "c" * 16)
    parts = verify_parts(read_checkpoint(checkpoint_dir(staging, PIPELINE, 1)).parts)
    with open_lake(lake) as catalog:  # checkpoint 1 landed before multiline events
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        table = catalog.ensure_table("service", older, "raw")
        assert [f.name for f in table.schema().fields][-2:] == ["message", "checkpoint_id"]
        rows = parse(read_source(spark, parts, "service"), "raw")[0]
        written = write_files(
            rows.drop("event_lines", "cut"), landing_folder(table.location()), "event_time"
        )
        commit_files(table, TableCommit(written.files, (1,), "older-job", LandingMode.APPEND))

    summary = land(spark, landing(lake, stage_events(staging, 2)))

    assert checkpoint_summary(summary, 2)["rows"]["service"] == 6
    with open_lake(lake) as catalog:
        service = catalog.load("service")
        assert service is not None
        assert [s.schema_id for s in service.schemas().values()] == [0, 1]
        assert [f.name for f in service.schema().fields][-3:] == [
            "checkpoint_id",
            "event_lines",
            "cut",
        ]
        assert str(service.schema().find_field("event_lines").field_type) == "int"
    assert snapshot_operations(lake, "service") == [("append", "1"), ("append", "2")]
    old = table_rows(lake, "service", 1).to_pylist()
    assert sorted(row["message"] for row in old) == ["free text", "\ufffd\ufffd"]
    assert {(row["event_lines"], row["cut"]) for row in old} == {(None, None)}
    new = sorted(table_rows(lake, "service", 2).to_pylist(), key=lambda row: row["byte_offset"])
    assert [(row["message"], row["event_lines"], row["cut"]) for row in new] == SERVICE_MESSAGES


@pytest.mark.spark
def test_unsealed_batch_fails(spark: SparkSession, lake: LakeLocation, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    write_batch(staging, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    (checkpoint_dir(staging, PIPELINE, 7) / "web-2").mkdir()

    with pytest.raises(ManifestError, match="web-2"):
        land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 7)))


def test_files_with_rejects_are_the_short_ones() -> None:
    staged = Counter(
        {
            (1, "access", "web-1", "a"): 3,
            (1, "access", "web-2", "b"): 2,
            (1, "app", "web-1", "c"): 1,
            (2, "access", "web-1", "a"): 3,
        }
    )
    landed: Counter[LandedKey] = Counter(
        {
            (1, "access", "web-1", "a"): 3,
            (1, "access", "web-2", "b"): 1,
            (2, "access", "web-1", "a"): 2,
        }
    )

    assert files_with_rejects(staged, landed) == {
        (1, "access", "web-2", "b"),
        (1, "app", "web-1", "c"),
        (2, "access", "web-1", "a"),
    }
    with pytest.raises(LandingCountError, match=r"\(1, 'access', 'web-1', 'a'\)"):
        files_with_rejects(staged, landed + Counter({(1, "access", "web-1", "a"): 1}))
    with pytest.raises(LandingCountError, match=r"\(1, 'access', 'web-2', 'b'\)"):
        files_with_rejects(staged, landed + Counter({(1, "access", "web-2", "b"): 1}), {
            (1, "access", "web-2", "b"),
        })  # fmt: skip


def test_files_with_rejects_counted_per_checkpoint_are_the_rejected_ones() -> None:
    """Spark's writer counts rows per checkpoint and source: the files with rejects are those the
    parse observed, and a surplus is found per checkpoint and source, each file with rejects
    holding one reject at least."""
    staged = Counter(
        {
            (1, "access", "web-1", "a"): 3,
            (1, "access", "web-2", "b"): 2,
            (1, "app", "web-1", "c"): 1,
            (2, "access", "web-1", "a"): 3,
        }
    )
    rejected = {(1, "access", "web-2", "b"), (1, "app", "web-1", "c")}
    landed: Counter[LandedKey] = Counter({(1, "access"): 4, (2, "access"): 3})

    assert files_with_rejects(staged, landed, rejected) == rejected
    with pytest.raises(LandingCountError, match=r"\[\(1, 'access'\)\]"):
        files_with_rejects(staged, landed + Counter({(1, "access"): 1}), rejected)
    with pytest.raises(LandingCountError, match=r"\[\(2, 'access'\)\]"):
        files_with_rejects(staged, landed + Counter({(2, "access"): 1}), rejected)
    with pytest.raises(LandingCountError, match=r"\[\(1, 'app'\)\]"):
        files_with_rejects(staged, landed + Counter({(1, "app"): 1}), rejected)
    with pytest.raises(LandingCountError, match=r"\[\(0, 'access'\)\]"):  # no checkpoint's
        files_with_rejects(staged, landed + Counter({(0, "access"): 1}), rejected)


def jobs_in_and_out_of_writes(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, run: Callable[[], object]
) -> tuple[list[set[int]], list[set[int]], set[int]]:
    """The ids of the Spark jobs that ``run`` (a landing, on a classic session) ran within each
    of its calls of ``write_files``, within each of ``staged_checksum`` (its one job over the
    staged files' counts, reading no file), and of those it ran outside them."""
    context = spark.sparkContext
    tracker = context.statusTracker()
    group = f"landing-{uuid.uuid4().hex}"
    seen: dict[str, list[set[int]]] = {"write_files": [], "staged_checksum": []}

    def tracked(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            before = set(tracker.getJobIdsForGroup(group))
            try:
                return function(*args, **kwargs)
            finally:
                seen[name].append(set(tracker.getJobIdsForGroup(group)) - before)

        return call

    for name in seen:
        monkeypatch.setattr(landing_module, name, tracked(name, getattr(landing_module, name)))
    context.setJobGroup(group, "the jobs of one landing")
    try:
        run()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    writes, checks = seen["write_files"], seen["staged_checksum"]
    outside = set(tracker.getJobIdsForGroup(group)) - set().union(*writes, *checks)
    return writes, checks, outside


@pytest.mark.spark
@pytest.mark.parametrize("with_rejects", [False, True], ids=["without-rejects", "with-rejects"])
def test_the_counts_come_from_the_jobs_that_write_and_nothing_is_read_back(
    spark: SparkSession,
    lake: LakeLocation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    with_rejects: bool,
) -> None:
    staging = tmp_path / "staging"
    lines = ACCESS if with_rejects else [ACCESS[0], ACCESS[1], ACCESS[7]]
    for host, fingerprint, other in (("web-1", "a" * 16, "c" * 16), ("web-2", "b" * 16, "d" * 16)):
        write_batch(staging, PIPELINE, 4, host, "access", "nginx_combined", lines, fingerprint,
                    rows_per_part=4, lines_per_segment=3)  # fmt: skip
        write_batch(staging, PIPELINE, 4, host, "misc", "raw", MISC, other)

    def no_read_back(*args: object, **kwargs: object) -> None:
        raise AssertionError("the landing read the lake back")

    monkeypatch.setattr("pyspark.sql.readwriter.DataFrameReader.parquet", no_read_back)
    summaries: list[dict[str, Any]] = []
    writes, checks, outside = jobs_in_and_out_of_writes(
        spark,
        monkeypatch,
        lambda: summaries.append(land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 4)))),
    )

    (summary,) = summaries[0]["checkpoints"]
    assert summary["rows"] == {"access": 6, "misc": 4}
    assert summary["rejects"] == (
        {"bad_timestamp": 2, "invalid_utf8": 4, "no_match": 6} if with_rejects else {}
    )
    assert summary["input_lines"] == 2 * (len(lines) + len(MISC))
    # A write per table (the rejects' only with rejects), each running jobs; none outside them.
    assert len(writes) == (3 if with_rejects else 2)
    assert all(writes)
    assert len(checks) == 1 and all(checks)  # one check of the staged files, with its jobs
    assert outside == set()
    assert table_rows(lake, "_rejects", 4).num_rows == (12 if with_rejects else 0)


def misread_misc(
    monkeypatch: pytest.MonkeyPatch, misread: Callable[[DataFrame], DataFrame]
) -> None:
    """Make the landing's read of source ``misc`` return ``misread`` of its rows."""
    read = landing_module.read_source

    def read_source(spark: SparkSession, parts: Any, source: str, *args: Any, **kw: Any) -> Any:
        rows = read(spark, parts, source, *args, **kw)
        return misread(rows) if source == "misc" else rows

    monkeypatch.setattr(landing_module, "read_source", read_source)


@pytest.mark.spark
def test_rows_landed_under_another_source_file_fail_the_landing_and_commit_nothing(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every count per checkpoint and source right, but web-1's ``misc`` lines read as web-2's
    (the same file names, so as many of each): only the files' checksum differs."""
    checkpoint = stage(tmp_path / "staging", 6)
    misread_misc(monkeypatch, lambda rows: rows.withColumn("host", F.lit("web-2")))

    with pytest.raises(LandingCountError, match=r"not of the source files staged"):
        land(spark, landing(lake, checkpoint))

    for table in TABLES:
        assert snapshot_operations(lake, table) == []


@pytest.mark.spark
def test_a_surplus_found_in_the_write_counts_fails_the_landing_and_commits_nothing(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line of ``misc`` read twice: its write job counts more rows than were staged."""
    checkpoint = stage(tmp_path / "staging", 6)
    misread_misc(monkeypatch, lambda rows: rows.unionByName(rows))

    with pytest.raises(LandingCountError, match=r"more rows landed than staged.*\(6, 'misc'\)"):
        land(spark, landing(lake, checkpoint))

    for table in TABLES:
        assert snapshot_operations(lake, table) == []
