"""``json_lines`` with declared columns: a service's JSON log written by structlog (the library
Airflow 3 logs with), its declared keys landed as typed columns, the values that did not fit
in ``rescued``, the row always kept."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import structlog
from pyspark.sql import SparkSession

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import ConfigError
from pipeline_core.lake import lake_location
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import table_rows
from spark_jobs.formats import parse
from tests.spark_jobs.support import StagingRows
from tests.support.faults import land_and_commit_sealed
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.spark, pytest.mark.sqlite_pass]  # the metastore only as the catalog

COLUMNS = {
    "level": "string",
    "status": "int",
    "http.duration_ms": "double",
    "cached": "boolean",
    "timestamp": "timestamp",
}


def write_structlog(path: Path, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Log ``events`` (each the keyword arguments of one call, ``event`` its message) through a
    real structlog JSON logger into ``path``; returns what each line holds."""
    with path.open("w") as file:
        logger = structlog.wrap_logger(
            structlog.WriteLogger(file),
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.JSONRenderer(),
            ],
        )
        for event in events:
            fields = dict(event)
            logger.info(fields.pop("event"), **fields)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_should_land_declared_keys_typed_and_rescue_the_values_of_another_type(
    staging_rows: StagingRows, tmp_path: Path
) -> None:
    written = write_structlog(
        tmp_path / "service.log",
        [
            {"event": "served", "status": 200, "http": {"duration_ms": 12.5}, "cached": True},
            {"event": "served", "status": "404", "http": {"duration_ms": 3}, "cached": False},
            {"event": "odd", "status": "n/a", "http": {"duration_ms": {"p50": 1}}, "cached": "yes"},
            {"event": "partial", "status": 4.5},
            {"event": "huge", "status": 2**40, "http": None},
            {"event": "huger", "status": 2**80},  # past a bigint: no overflow, rescued
        ],
    )
    lines = (tmp_path / "service.log").read_bytes().splitlines()

    parsed, rejects = parse(staging_rows(lines, source="app"), "json_lines", columns=COLUMNS)

    assert rejects.count() == 0
    assert parsed.columns[5:13] == [
        "payload", "level", "status", "http_duration_ms", "cached", "timestamp", "rescued",
        "event_date",
    ]  # fmt: skip
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    assert [(r["status"], r["http_duration_ms"], r["cached"]) for r in rows] == [
        (200, 12.5, True),
        (404, 3.0, False),
        (None, None, None),
        (None, None, None),
        (None, None, None),
        (None, None, None),
    ]
    assert [r["rescued"] for r in rows] == [
        None,
        None,
        {"status": "n/a", "http.duration_ms": '{"p50":1}', "cached": "yes"},
        {"status": "4.5"},
        {"status": str(2**40)},
        {"status": str(2**80)},
    ]
    assert all(r["level"] == "info" for r in rows)
    for row, line in zip(rows, written, strict=True):
        stamp = datetime.fromisoformat(line["timestamp"]).astimezone(timezone.utc)
        assert row["timestamp"].astimezone(timezone.utc) == stamp
        assert json.loads(row["payload"]) == line  # the whole object, always


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"a b": "int"}, "is not a dotted path of names"),
        ({"host": "string"}, "would land in column 'host', which is taken"),
        ({"a.b": "int", "a_b": "long"}, "both make column 'a_b'"),
        ({"tags": "map<string,string>"}, "a declared key is a scalar"),
    ],
)
def test_should_refuse_json_columns_it_cannot_land_naming_the_key(
    tmp_path: Path, metastore_url: str, columns: dict[str, str], message: str
) -> None:
    path = write_config(tmp_path, metastore_url, fmt="json_lines", source={"columns": columns})

    with pytest.raises(ConfigError) as refused:
        load_pipeline_config(path)

    assert message in str(refused.value) and "columns" in str(refused.value)


@pytest.mark.timeout(300)
def test_declared_json_columns_are_collected_landed_and_committed_with_their_rescues(
    spark: SparkSession, tmp_path: Path, metastore_url: str
) -> None:
    log = tmp_path / "logs" / "service.log"
    log.parent.mkdir()
    write_structlog(
        log,
        [{"event": "served", "status": 200 + n, "http": {"duration_ms": n / 4}} for n in range(50)]
        + [{"event": "odd", "status": "n/a"}],
    )
    source = {"columns": COLUMNS, "time_field": "timestamp"}
    path = write_config(
        tmp_path, metastore_url, pattern="logs/*.log", fmt="json_lines", source=source
    )
    PipelineOperations(path).collect_once()

    (landed,) = land_and_commit_sealed(spark, path)

    assert (landed["rows"], landed["rescued"]) == ({"access": 51}, {"access": 1})
    rows = table_rows(lake_location(load_pipeline_config(path)), "access").to_pylist()
    by_status = sorted((r["status"] is None, r["status"], r["http_duration_ms"]) for r in rows)
    assert by_status[:2] == [(False, 200, 0.0), (False, 201, 0.25)]
    (odd,) = [r for r in rows if r["rescued"]]
    assert dict(odd["rescued"]) == {"status": "n/a"}
