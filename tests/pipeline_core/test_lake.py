"""Reading back a lake: its Iceberg tables, created through the catalog and appended to here
with pyiceberg (no Spark), summarized and counted per checkpoint."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline_core.config import (
    LakeConfig,
    MetastoreConfig,
    PipelineConfig,
    SourceConfig,
    SourceFormat,
)
from pipeline_core.lake import (
    REJECTS_TABLE,
    LakeLocation,
    LakeSummary,
    LandedCheckpoint,
    lake_location,
    landed_checkpoints,
    open_lake,
    summarize_lake,
)
from tests.support.lake import append_rows

HOST = "web-1"
FP = "00000000000000aa"
SOURCES = ["access", "app", "audit"]
FORMATS = {"access": "nginx_combined", "app": "json_lines", "audit": "raw"}


@pytest.fixture
def config(tmp_path: Path, metastore_url: str, lake: LakeLocation) -> PipelineConfig:
    """A pipeline of three sources whose lake is ``lake``."""
    return PipelineConfig(
        name="web_access",
        data_dir=tmp_path,
        metastore=MetastoreConfig(url=metastore_url),
        sources=[
            SourceConfig(
                name="access", paths=["/logs/access.log*"], format=SourceFormat.NGINX_COMBINED
            ),
            SourceConfig(name="app", paths=["/logs/app.jsonl"], format=SourceFormat.JSON_LINES),
            SourceConfig(name="audit", paths=["/logs/audit.log"], format=SourceFormat.RAW),
        ],
    )


def rows(
    checkpoint_id: int,
    offsets: list[int],
    statuses: list[int] | None = None,
    day: int = 22,
) -> list[dict[str, Any]]:
    """Parsed rows of one source file, one per offset."""
    return [
        {
            "event_id": f"{FP}:{offset}",
            "file_fingerprint": FP,
            "byte_offset": offset,
            "host": HOST,
            "event_time": datetime(2026, 11, day, 10, 0, tzinfo=timezone.utc),
            "checkpoint_id": checkpoint_id,
            **({"status": statuses[i]} if statuses is not None else {}),
        }
        for i, offset in enumerate(offsets)
    ]


def rejects(checkpoint_id: int, reasons: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "event_id": f"{FP}:{9000 + 10 * checkpoint_id + i}",
            "file_fingerprint": FP,
            "byte_offset": 9000 + 10 * checkpoint_id + i,
            "host": HOST,
            "source": "access",
            "raw_line": "garbage",
            "reason": reason,
            "sealed_at": datetime(2026, 11, 22, 10, 5, tzinfo=timezone.utc),
            "checkpoint_id": checkpoint_id,
        }
        for i, reason in enumerate(reasons)
    ]


def add(lake: LakeLocation, table: str, added: list[dict[str, Any]]) -> int | None:
    return append_rows(lake, table, added, FORMATS.get(table, "raw"))


def landed_lake(lake: LakeLocation) -> dict[str, int | None]:
    """Two checkpoints in the source tables and the rejects; each table's last snapshot."""
    add(lake, "access", rows(1, [0, 100, 200], statuses=[200, 200, 404], day=21))
    snapshots = {
        "access": add(lake, "access", rows(2, [300, 400], statuses=[200, 500])),
        "app": add(lake, "app", rows(2, [0, 50])),
    }
    add(lake, REJECTS_TABLE, rejects(1, ["no_match", "no_match", "invalid_utf8"]))
    snapshots[REJECTS_TABLE] = add(lake, REJECTS_TABLE, rejects(2, ["bad_timestamp"]))
    return snapshots


# -- where the lake is -------------------------------------------------------------------------


def test_should_locate_the_lake_in_the_metastore_under_the_pipelines_name(
    config: PipelineConfig, lake: LakeLocation, metastore_url: str
) -> None:
    assert lake_location(config) == LakeLocation(metastore_url, config.lake_dir, "web_access")
    assert lake_location(config) == lake


def test_should_use_the_configured_warehouse_and_namespace(
    config: PipelineConfig, tmp_path: Path, metastore_url: str
) -> None:
    configured = config.model_copy(
        update={"lake": LakeConfig(path=tmp_path / "warehouse", namespace="web")}
    )

    assert lake_location(configured) == LakeLocation(metastore_url, tmp_path / "warehouse", "web")


# -- summarize_lake ----------------------------------------------------------------------------


def test_should_count_rows_statuses_and_rejects(config: PipelineConfig, lake: LakeLocation) -> None:
    snapshots = landed_lake(lake)

    summary = summarize_lake(config)

    assert summary.rows == {"access": 5, "app": 2, "audit": 0}
    assert summary.statuses == {"access": Counter({200: 3, 404: 1, 500: 1})}
    assert summary.rejects == {"no_match": 2, "invalid_utf8": 1, "bad_timestamp": 1}
    assert summary.distinct_event_ids == 7
    assert summary.snapshots == {**snapshots, "audit": None}
    assert f"lake table access: 5 rows (snapshot {snapshots['access']})" in summary.lines()


def test_should_count_distinct_event_ids_apart_from_rows(
    config: PipelineConfig, lake: LakeLocation
) -> None:
    add(lake, "access", rows(1, [0, 100], statuses=[200, 200], day=21))
    add(lake, "access", rows(1, [100], statuses=[200]))

    summary = summarize_lake(config)

    assert summary.rows["access"] == 3
    assert summary.distinct_event_ids == 2
    assert "distinct event ids: 2 (DUPLICATES in the lake)" in summary.lines()


def test_should_summarize_an_empty_lake(config: PipelineConfig) -> None:
    summary = summarize_lake(config)

    assert summary == LakeSummary(
        rows={"access": 0, "app": 0, "audit": 0},
        rejects={},
        snapshots={"access": None, "app": None, "audit": None, REJECTS_TABLE: None},
    )


def test_should_count_nothing_of_tables_created_but_never_committed_to(
    config: PipelineConfig, lake: LakeLocation
) -> None:
    with open_lake(lake) as catalog:
        catalog.ensure_tables({name: FORMATS[name] for name in SOURCES})

    assert summarize_lake(config) == LakeSummary(
        rows={"access": 0, "app": 0, "audit": 0},
        rejects={},
        snapshots={"access": None, "app": None, "audit": None, REJECTS_TABLE: None},
    )


def test_should_ignore_data_files_no_commit_added(
    config: PipelineConfig, lake: LakeLocation
) -> None:
    """A landing that wrote its files and died before its commit left them in the table's
    folder: readers of the table never see them."""
    add(lake, "access", rows(1, [0, 100], statuses=[200, 200]))
    with open_lake(lake) as catalog:
        table = catalog.load("access")
        assert table is not None
        schema = table.schema().as_arrow()
        folder = Path(table.location().removeprefix("file://")) / "data" / "uncommitted"
    folder.mkdir(parents=True)
    stray = pa.Table.from_pylist(rows(2, [200, 300], statuses=[500, 500]), schema=schema)
    pq.write_table(stray, folder / "part-00000.parquet")

    summary = summarize_lake(config)

    assert summary.rows["access"] == 2
    assert summary.statuses["access"] == Counter({200: 2})


# -- landed_checkpoints ------------------------------------------------------------------------


def test_should_count_what_each_checkpoint_landed_per_table_and_reason(
    lake: LakeLocation,
) -> None:
    snapshots = landed_lake(lake)

    with open_lake(lake) as catalog:
        landed = landed_checkpoints(catalog, SOURCES, [2, 1])

    all_snapshots = {**snapshots, "audit": None}
    assert landed == {
        1: LandedCheckpoint(
            1,
            rows={"access": 3, "app": 0, "audit": 0},
            rejects={"no_match": 2, "invalid_utf8": 1},
            snapshots=all_snapshots,
        ),
        2: LandedCheckpoint(
            2,
            rows={"access": 2, "app": 2, "audit": 0},
            rejects={"bad_timestamp": 1},
            snapshots=all_snapshots,
        ),
    }
    assert (landed[1].lines, landed[2].lines) == (6, 5)
    assert landed[2].to_json() == {
        "checkpoint_id": 2,
        "rows": {"access": 2, "app": 2, "audit": 0},
        "rejects": {"bad_timestamp": 1},
        "snapshots": all_snapshots,
    }


def test_should_count_rows_from_the_data_files_metadata_without_reading_them(
    lake: LakeLocation,
) -> None:
    landed_lake(lake)
    with open_lake(lake) as catalog:
        table = catalog.load("access")
        assert table is not None
        files = [task.file.file_path for task in table.scan().plan_files()]
    for path in files:  # unreadable now: only the metadata can give the counts
        Path(path.removeprefix("file://")).write_bytes(b"not parquet")

    with open_lake(lake) as catalog:
        landed = landed_checkpoints(catalog, ["access"], [1, 2])

    assert {i: landed[i].rows for i in (1, 2)} == {1: {"access": 3}, 2: {"access": 2}}


def test_should_read_the_rows_of_a_file_holding_several_checkpoints(lake: LakeLocation) -> None:
    add(lake, "access", rows(1, [0, 100]) + rows(2, [200]))  # one file, two checkpoints
    add(lake, "access", rows(3, [300]))

    with open_lake(lake) as catalog:
        landed = landed_checkpoints(catalog, ["access"], [1, 2, 3])

    assert {i: landed[i].rows["access"] for i in (1, 2, 3)} == {1: 2, 2: 1, 3: 1}


def test_should_count_nothing_of_a_checkpoint_the_lake_does_not_hold(lake: LakeLocation) -> None:
    landed_lake(lake)

    with open_lake(lake) as catalog:
        (absent,) = landed_checkpoints(catalog, SOURCES, [3]).values()

    assert (absent.checkpoint_id, absent.lines, absent.rejects) == (3, 0, {})
    assert absent.rows == {"access": 0, "app": 0, "audit": 0}


def test_should_count_nothing_in_a_lake_without_tables(lake: LakeLocation) -> None:
    with open_lake(lake) as catalog:
        landed = landed_checkpoints(catalog, ["access"], [1])

    assert landed == {
        1: LandedCheckpoint(
            1, rows={"access": 0}, rejects={}, snapshots={"access": None, REJECTS_TABLE: None}
        )
    }


# -- printing ----------------------------------------------------------------------------------


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
