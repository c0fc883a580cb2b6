"""Reading back a lake (hand-written here with pyarrow, laid out as the landing job writes it)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline_core.config import PipelineConfig, SourceConfig, SourceFormat
from pipeline_core.lake import LakeSummary, summarize_lake

HOST = "web-1"
FP = "00000000000000aa"


@pytest.fixture
def config(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig(
        name="web_access",
        data_dir=tmp_path,
        sources=[
            SourceConfig(
                name="access", paths=["/logs/access.log*"], format=SourceFormat.NGINX_COMBINED
            ),
            SourceConfig(name="app", paths=["/logs/app.jsonl"], format=SourceFormat.JSON_LINES),
            SourceConfig(name="audit", paths=["/logs/audit.log"], format=SourceFormat.RAW),
        ],
    )


def write_rows(
    lake: Path,
    source: str,
    event_date: str,
    checkpoint_id: int,
    offsets: list[int],
    statuses: list[int] | None = None,
) -> None:
    folder = lake / source / f"event_date={event_date}" / f"checkpoint_id={checkpoint_id}"
    folder.mkdir(parents=True, exist_ok=True)
    columns: dict[str, pa.Array] = {
        "event_id": pa.array([f"{FP}:{o}" for o in offsets], pa.string()),
        "file_fingerprint": pa.array([FP] * len(offsets), pa.string()),
        "byte_offset": pa.array(offsets, pa.int64()),
        "host": pa.array([HOST] * len(offsets), pa.string()),
        "event_time": pa.array(
            [datetime(2026, 11, 22, 10, 0, tzinfo=UTC)] * len(offsets), pa.timestamp("us", "UTC")
        ),
    }
    if statuses is not None:
        columns["status"] = pa.array(statuses, pa.int32())
    pq.write_table(pa.table(columns), folder / "part-00000-c000.snappy.parquet")
    (lake / source / "_SUCCESS").touch()


def write_rejects(lake: Path, checkpoint_id: int, reasons: list[str]) -> None:
    folder = lake / "_rejects" / f"checkpoint_id={checkpoint_id}"
    folder.mkdir(parents=True, exist_ok=True)
    count = len(reasons)
    table = pa.table(
        {
            "event_id": pa.array([f"{FP}:{9000 + i}" for i in range(count)], pa.string()),
            "file_fingerprint": pa.array([FP] * count, pa.string()),
            "byte_offset": pa.array([9000 + i for i in range(count)], pa.int64()),
            "host": pa.array([HOST] * count, pa.string()),
            "source": pa.array(["access"] * count, pa.string()),
            "raw_line": pa.array(["garbage"] * count, pa.string()),
            "reason": pa.array(reasons, pa.string()),
        }
    )
    pq.write_table(table, folder / "part-00000-c000.snappy.parquet")


def test_should_count_rows_statuses_and_rejects(config: PipelineConfig) -> None:
    lake = config.lake_dir
    write_rows(lake, "access", "2026-11-21", 1, [0, 100, 200], statuses=[200, 200, 404])
    write_rows(lake, "access", "2026-11-22", 2, [300, 400], statuses=[200, 500])
    write_rows(lake, "app", "2026-11-22", 2, [0, 50])
    write_rejects(lake, 1, ["no_match", "no_match", "invalid_utf8"])
    write_rejects(lake, 2, ["bad_timestamp"])
    (lake / "_landings").mkdir()
    (lake / "_landings" / "checkpoint_id=1.json").write_text(json.dumps({"rows": {"access": 3}}))

    summary = summarize_lake(config)

    assert summary.rows == {"access": 5, "app": 2, "audit": 0}
    assert summary.statuses == {"access": Counter({200: 3, 404: 1, 500: 1})}
    assert summary.rejects == {"no_match": 2, "invalid_utf8": 1, "bad_timestamp": 1}
    assert summary.distinct_event_ids == 7


def test_should_count_distinct_event_ids_apart_from_rows(config: PipelineConfig) -> None:
    lake = config.lake_dir
    write_rows(lake, "access", "2026-11-21", 1, [0, 100], statuses=[200, 200])
    write_rows(lake, "access", "2026-11-22", 1, [100], statuses=[200])

    summary = summarize_lake(config)

    assert summary.rows["access"] == 3
    assert summary.distinct_event_ids == 2


def test_should_summarize_an_empty_lake(config: PipelineConfig) -> None:
    summary = summarize_lake(config)

    assert summary == LakeSummary(rows={"access": 0, "app": 0, "audit": 0}, rejects={})


def test_should_ignore_a_source_folder_without_parquet_files(config: PipelineConfig) -> None:
    (config.lake_dir / "access").mkdir(parents=True)
    (config.lake_dir / "access" / "_SUCCESS").touch()

    assert summarize_lake(config).rows["access"] == 0


def test_should_print_rows_statuses_and_rejects() -> None:
    summary = LakeSummary(
        rows={"access": 5, "app": 2},
        rejects={"no_match": 2, "bad_timestamp": 1},
        statuses={"access": Counter({404: 1, 200: 4})},
        distinct_event_ids=7,
    )

    assert summary.lines() == [
        "lake table access: 5 rows",
        "  status 200: 4",
        "  status 404: 1",
        "lake table app: 2 rows",
        "distinct event ids: 7 (one per row: no duplicates)",
        "rejects: 3 lines",
        "  bad_timestamp: 1",
        "  no_match: 2",
    ]


def test_should_flag_duplicate_event_ids() -> None:
    summary = LakeSummary(rows={"access": 3}, rejects={}, distinct_event_ids=2)

    assert "distinct event ids: 2 (DUPLICATES in the lake)" in summary.lines()
