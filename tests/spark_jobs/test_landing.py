"""Landing sealed checkpoints into the lake: counts, idempotency, empty and broken batches."""

from __future__ import annotations

import json
import shutil
import zlib
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipeline_core.staging_contract import ManifestError, checkpoint_dir
from spark_jobs.checkpoint import read_checkpoint
from spark_jobs.landing import LandingCountError, files_with_rejects, land, read_source
from spark_jobs.verification import PartChecksumError, PartSizeError, verify_parts
from tests.spark_jobs.support import (
    ACCESS,
    LINES_PER_HOST,
    MISC,
    PIPELINE,
    assert_exactly_once,
    edit_manifest,
    lake_rows,
    stage,
)
from tests.support.staging import Line, LongLine, line_offsets, write_batch, write_empty_batch


@pytest.mark.spark
def test_land_writes_rows_rejects_and_summary(spark: SparkSession, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    summary = land(spark, stage(tmp_path / "staging", 3), lake)

    assert summary["checkpoint_id"] == 3
    assert summary["rows"] == {"access": 6, "app": 4, "misc": 4}
    assert summary["rejects"] == {  # per host: 5 from access, 1 from app
        "invalid_utf8": 4,
        "no_match": 6,
        "bad_timestamp": 2,
        "invalid_json": 2,
        "line_too_long": 0,
    }
    assert summary["input_lines"] == 2 * LINES_PER_HOST
    assert sum(summary["rows"].values()) + sum(summary["rejects"].values()) == 2 * LINES_PER_HOST
    assert summary["batches"] == 2
    assert json.loads((lake / "_landings" / "checkpoint_id=3.json").read_text()) == summary

    dates = sorted(path.name for path in (lake / "access").glob("event_date=*"))
    assert dates == ["event_date=2026-11-21", "event_date=2026-11-22", "event_date=2026-11-23"]
    assert (lake / "access" / "event_date=2026-11-23" / "checkpoint_id=3").is_dir()
    assert (lake / "_rejects" / "checkpoint_id=3").is_dir()
    access = lake_rows(spark, lake, "access", 3)
    assert {row["host"] for row in access} == {"web-1", "web-2"}
    offsets = line_offsets(ACCESS, 3000)
    assert sorted(row["event_id"] for row in access if row["host"] == "web-1") == sorted(
        f"000000000000aaaa:{offsets[index]}" for index in (0, 1, 7)
    )
    rejects = lake_rows(spark, lake, "_rejects", 3)
    assert Counter(row["source"] for row in rejects) == {"access": 12, "app": 2}


@pytest.mark.spark
def test_landing_twice_leaves_one_copy(spark: SparkSession, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    staged = stage(tmp_path / "staging", 4)
    first = land(spark, staged, lake)
    stale = lake / "access" / "event_date=1999-01-01" / "checkpoint_id=4"
    stale.mkdir(parents=True)
    shutil.copy(
        next((lake / "access").glob("event_date=2026-11-22/checkpoint_id=4/*.parquet")), stale
    )

    second = land(spark, staged, lake)

    assert {k: v for k, v in second.items() if k != "landed_at"} == {
        k: v for k, v in first.items() if k != "landed_at"
    }
    assert not stale.parent.exists()
    for table, rows in second["rows"].items():
        assert assert_exactly_once(spark, lake, table, 4) == rows
    assert assert_exactly_once(spark, lake, "_rejects", 4) == sum(second["rejects"].values())


@pytest.mark.spark
def test_two_checkpoints_coexist(spark: SparkSession, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    staging = tmp_path / "staging"
    one = land(spark, stage(staging, 1, hosts=("web-1",)), lake)
    two = land(spark, stage(staging, 2), lake)
    land(spark, checkpoint_dir(staging, PIPELINE, 1), lake)  # again: must not touch 2

    for checkpoint_id, summary in [(1, one), (2, two)]:
        assert (
            assert_exactly_once(spark, lake, "access", checkpoint_id) == summary["rows"]["access"]
        )
        rejects = assert_exactly_once(spark, lake, "_rejects", checkpoint_id)
        assert rejects == sum(summary["rejects"].values())
    everything = spark.read.parquet(str(lake / "access")).groupBy("checkpoint_id").count()
    assert {row["checkpoint_id"]: row["count"] for row in everything.collect()} == {1: 3, 2: 6}
    assert sorted(p.name for p in (lake / "_landings").iterdir()) == [
        "checkpoint_id=1.json",
        "checkpoint_id=2.json",
    ]


@pytest.mark.spark
def test_checkpoint_without_rejects_writes_no_rejects(spark: SparkSession, tmp_path: Path) -> None:
    staging = tmp_path / "staging dir %41"  # Spark names files by URI: %-escapes on the way
    write_batch(staging, PIPELINE, 5, "web-1", "access", "nginx_combined", [ACCESS[0]], "f" * 16)
    summary = land(spark, checkpoint_dir(staging, PIPELINE, 5), tmp_path / "lake")

    assert summary["rows"] == {"access": 1}
    assert set(summary["rejects"].values()) == {0}
    assert not (tmp_path / "lake" / "_rejects" / "checkpoint_id=5").exists()


@pytest.mark.spark
def test_empty_checkpoints_land_zero_rows(spark: SparkSession, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    write_empty_batch(staging, PIPELINE, 8, "web-1")
    write_batch(staging, PIPELINE, 8, "web-2", "access", "nginx_combined", [], "e" * 16)
    checkpoint_dir(staging, PIPELINE, 9).mkdir(parents=True)
    lake = tmp_path / "lake"

    with_manifests = land(spark, checkpoint_dir(staging, PIPELINE, 8), lake)
    without = land(spark, checkpoint_dir(staging, PIPELINE, 9), lake)

    assert with_manifests["rows"] == {"access": 0}
    assert (with_manifests["input_lines"], with_manifests["batches"]) == (0, 2)
    assert (without["rows"], without["input_lines"], without["batches"]) == ({}, 0, 0)
    for summary in (with_manifests, without):
        assert set(summary["rejects"].values()) == {0}
    assert (lake / "_landings" / "checkpoint_id=9.json").is_file()


@pytest.mark.spark
def test_part_of_another_size_than_its_manifest_fails_before_the_lake_changes(
    spark: SparkSession, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    batch = write_batch(staging, PIPELINE, 6, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    part = batch / "part-access-00000.lines"
    size = part.stat().st_size
    part.write_bytes(ACCESS[0] + b"\n")

    found = len(ACCESS[0]) + 1
    message = rf"part-access-00000\.lines: manifest says {size} bytes, file has {found}"
    with pytest.raises(PartSizeError, match=message):
        land(spark, checkpoint_dir(staging, PIPELINE, 6), tmp_path / "lake")
    assert not (tmp_path / "lake").exists()


@pytest.mark.spark
def test_part_changed_in_place_fails_and_leaves_the_earlier_landing(
    spark: SparkSession, tmp_path: Path
) -> None:
    staged = stage(tmp_path / "staging", 6, hosts=("web-1",))
    lake = tmp_path / "lake"
    summary = land(spark, staged, lake)
    part = staged / "web-1" / "part-access-00000.lines"
    intact = part.read_bytes()
    part.write_bytes(b"\0" * len(intact))  # a disk error: same size, other bytes

    with pytest.raises(PartChecksumError, match=r"part-access-00000\.lines: manifest says CRC-32"):
        land(spark, staged, lake)

    assert assert_exactly_once(spark, lake, "access", 6) == summary["rows"]["access"]
    assert (lake / "_landings" / "checkpoint_id=6.json").is_file()


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
        read_source(spark, staged, "access", 6).collect()

    part.write_bytes(bytes(data[: second_offset + 10]))
    # Every segment from the second on is cut short; whichever task fails first is reported.
    short = r"part-access-00000\.lines: short read: the segment at part_offset \d+ "
    with pytest.raises(Exception, match=short):
        read_source(spark, staged, "access", 6).collect()


@pytest.mark.spark
def test_read_source_reads_the_lines_of_the_files_asked_for_in_staging_order(
    spark: SparkSession, tmp_path: Path
) -> None:
    staged_dir = stage(tmp_path / "staging", 3)
    staged = verify_parts(read_checkpoint(staged_dir).parts)

    every = read_source(spark, staged, "access", 3).collect()
    only = read_source(spark, staged, "access", 3, {("web-2", "000100000000aaaa")}).collect()

    offsets = line_offsets(ACCESS, 3000)
    assert [(row["host"], row["byte_offset"], row["line"]) for row in every] == [
        (host, offset, line)
        for host in ("web-1", "web-2")
        for offset, line in zip(offsets, ACCESS, strict=True)
    ]
    assert {row["file_fingerprint"] for row in every} == {"000000000000aaaa", "000100000000aaaa"}
    assert [row["line"] for row in only] == ACCESS
    assert {(row["host"], row["file_fingerprint"]) for row in only} == {
        ("web-2", "000100000000aaaa")
    }
    assert {(row["checkpoint_id"], row["source"]) for row in every} == {(3, "access")}
    assert {row["sealed_at"] for row in every} == {datetime(2026, 11, 22, 10, 0, 0, 123456)}


@pytest.mark.spark
def test_unterminated_last_line_is_a_line(spark: SparkSession, tmp_path: Path) -> None:
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
    summary = land(spark, checkpoint_dir(tmp_path, PIPELINE, 5), tmp_path / "lake")

    assert summary["rows"] == {"misc": 4}
    messages = [row["message"] for row in lake_rows(spark, tmp_path / "lake", "misc", 5)]
    assert sorted(messages) == sorted(["free text", "\ufffd\ufffd", "", "last"])


@pytest.mark.spark
def test_an_over_long_line_lands_as_one_line_too_long_reject(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Its prefix would parse as a whole line; the line still lands only as its reject."""
    access: list[Line] = [ACCESS[0], LongLine(ACCESS[1], 5_000_000), ACCESS[7]]
    misc: list[Line] = [b"free text", LongLine(b"caf\xc3", 2_000_000)]
    write_batch(tmp_path, PIPELINE, 8, "web-1", "access", "nginx_combined", access, "a" * 16, 100)
    write_batch(tmp_path, PIPELINE, 8, "web-1", "misc", "raw", misc, "c" * 16)
    lake = tmp_path / "lake"

    summary = land(spark, checkpoint_dir(tmp_path, PIPELINE, 8), lake)

    assert summary["rows"] == {"access": 2, "misc": 1}
    assert summary["rejects"]["line_too_long"] == 2
    assert sum(summary["rejects"].values()) == 2
    offsets = line_offsets(access, 100)
    assert sorted(row["byte_offset"] for row in lake_rows(spark, lake, "access", 8)) == [
        offsets[0],
        offsets[2],
    ]
    rejects = sorted(
        (row.asDict() for row in lake_rows(spark, lake, "_rejects", 8)),
        key=lambda row: str(row["source"]),
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
            "checkpoint_id": 8,
        },
    ]


@pytest.mark.spark
def test_unsealed_batch_fails(spark: SparkSession, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    write_batch(staging, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    (checkpoint_dir(staging, PIPELINE, 7) / "web-2").mkdir()

    with pytest.raises(ManifestError, match="web-2"):
        land(spark, checkpoint_dir(staging, PIPELINE, 7), tmp_path / "lake")


def test_files_with_rejects_are_the_short_ones() -> None:
    staged = Counter(
        {("access", "web-1", "a"): 3, ("access", "web-2", "b"): 2, ("app", "web-1", "c"): 1}
    )
    landed = Counter({("access", "web-1", "a"): 3, ("access", "web-2", "b"): 1})

    assert files_with_rejects(staged, landed) == {("access", "web-2", "b"), ("app", "web-1", "c")}
    with pytest.raises(LandingCountError, match="web-1"):
        files_with_rejects(staged, landed + Counter({("access", "web-1", "a"): 1}))
