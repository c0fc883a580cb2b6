"""The ``spark_json`` format: the log a real PySpark job wrote with Spark's structured logging
(``spark.log.structuredLogging.enabled``, Spark's ``SparkLayout.json``), staged and parsed by
Spark; checked against what log4j2 itself recorded of each record (its level, logger, message,
MDC, exception and time, by a template of its own beside the log)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import NestedField, StringType
from pyspark.sql import SparkSession

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import lake_location, open_lake, source_schema
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import table_rows
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import ParsedOnce, StagingRows, java_frame, reason_of
from tests.support.faults import land_and_commit_sealed
from tests.support.log_programs import SparkJobLogs, paired_with_truth, read_truth_fields
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.spark]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def top_frames(printed: str, header: str) -> list[str]:
    """The frames of the exception Java printed (``printStackTrace``), without its causes' and
    suppressed exceptions': the ``\\tat`` lines after its header."""
    assert printed.startswith(header + "\n"), printed[:300]
    frames: list[str] = []
    for line in printed[len(header) + 1 :].split("\n"):
        if not line.startswith("\tat "):
            break
        frames.append(line.removeprefix("\tat "))
    return frames


def row_fields(row: dict[str, Any]) -> tuple[Any, ...]:
    millis = (row["event_time"].astimezone(timezone.utc) - EPOCH) // timedelta(milliseconds=1)
    context = sorted((row["context"] or {}).items())
    return (millis, row["level"], row["logger"], row["message"], context)


def record_fields(record: dict[str, object]) -> tuple[Any, ...]:
    mdc = record.get("mdc") or {}
    assert isinstance(mdc, dict)
    logger = str(record["logger"]).rsplit(".", 1)[-1]
    return (
        int(str(record["millis"])),
        record["level"],
        logger,
        record["message"],
        sorted(mdc.items()),
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_should_parse_each_record_of_a_spark_jobs_json_log_as_log4j_recorded_it(
    staging_rows: StagingRows, spark_json_job: SparkJobLogs
) -> None:
    log = spark_json_job.log4j.path
    lines = [event.rstrip(b"\n") for event in spark_json_job.log4j.events]

    parsed, rejects = parse(staging_rows(lines, source="spark"), "spark_json")
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    records = read_truth_fields(log.with_name("spark.truth.jsonl"))
    assert rejects.count() == 0
    assert len(rows) == len(records) == len(lines)
    for row, record in paired_with_truth(rows, records, row_fields, record_fields):
        assert row["level"] == record["level"]
        assert row["logger"] == str(record["logger"]).rsplit(".", 1)[-1]
        assert row["message"] == record["message"], record
        assert row["context"] == record.get("mdc", {}), record
        written = EPOCH + timedelta(milliseconds=int(str(record["millis"])))
        assert row["event_time"].astimezone(timezone.utc) == written, record
        if "exception_class" not in record:
            assert row["exception"] is None, record
            continue
        exception = row["exception"].asDict(recursive=True)
        assert exception["class"] == record["exception_class"]
        assert exception["message"] == record.get("exception_message")
        message = record.get("exception_message")
        header = f"{record['exception_class']}: {message}" if message else ""
        java = top_frames(str(record["stack_trace"]), header or str(record["exception_class"]))
        ours = [java_frame(frame) for frame in exception["frames"]]
        assert len(ours) == len(java), record
        for frame, printed in zip(ours, java, strict=True):
            # Java puts a frame's class loader and module first (java.base/...).
            assert printed == frame or printed.endswith("/" + frame), (frame, printed)
    exceptions = [row["exception"] for row in rows if row["exception"] is not None]
    assert len(exceptions) >= 4
    assert any(row["context"] for row in rows)
    assert any(frame["file"] is None for exception in exceptions for frame in exception["frames"])


SPARK_JSON_CASES: list[tuple[bytes, RejectReason | None]] = [
    (b'{"ts":"2026-11-28T20:24:53.504Z","level":"INFO","msg":"x","logger":"Utils"}', None),
    (b'{"ts":"2026-11-28T20:24:53.504Z","msg":"x"', RejectReason.INVALID_JSON),
    (b"26/11/28 20:24:53 INFO Utils: the pattern layout", RejectReason.INVALID_JSON),
    (b'["2026-11-28T20:24:53.504Z"]', RejectReason.NO_MATCH),
    (b'{"level":"INFO","msg":"no time"}', RejectReason.BAD_TIMESTAMP),
    (b'{"ts":"2026-13-28T20:24:53.504Z","msg":"13th month"}', RejectReason.BAD_TIMESTAMP),
    (b'{"ts":"2026-11-28T20:24:53.504Z","msg":"caf\xff"}', RejectReason.INVALID_UTF8),
]


@pytest.mark.parametrize(("line", "reason"), SPARK_JSON_CASES)
def test_should_reject_what_spark_did_not_write_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: RejectReason | None
) -> None:
    lines = [case[0] for case in SPARK_JSON_CASES]
    outcome = parsed_once.of(lines, "spark_json", source="spark")[line]

    assert reason_of(outcome) == (reason.value if reason else None)


def test_should_read_a_record_into_its_columns(staging_rows: StagingRows) -> None:
    line = (
        b'{"ts":"2026-11-28T20:24:53.504Z","level":"ERROR","msg":"Task failed\\nbadly",'
        b'"context":{"task_name":"task 0.0","executor_id":"driver"},'
        b'"exception":{"class":"java.io.IOException","msg":"disk",'
        b'"stacktrace":[{"class":"a.B","method":"run","file":"B.java","line":12},'
        b'{"class":"a.C$$Lambda/0x1","method":"apply","file":null,"line":-1},'
        b'{"class":"sun.nio.ch.Net","method":"poll","file":"Net.java","line":-2},'
        b'{"class":"a.D","method":"go","file":"D.scala","line":-1}]},"logger":"Executor"}\r'
    )
    parsed, rejects = parse(staging_rows([line], source="spark"), "spark_json")

    assert rejects.count() == 0
    (row,) = parsed.collect()
    assert row["event_time"].astimezone(timezone.utc) == datetime(
        2026, 11, 28, 20, 24, 53, 504000, tzinfo=timezone.utc
    )
    assert (row["level"], row["logger"]) == ("ERROR", "Executor")
    assert row["message"] == "Task failed\nbadly"
    assert row["context"] == {"task_name": "task 0.0", "executor_id": "driver"}
    assert row["exception"].asDict(recursive=True) == {
        "class": "java.io.IOException",
        "message": "disk",
        "frames": [
            {"class": "a.B", "method": "run", "file": "B.java", "line": 12},
            {"class": "a.C$$Lambda/0x1", "method": "apply", "file": None, "line": -1},
            {"class": "sun.nio.ch.Net", "method": "poll", "file": "Net.java", "line": -2},
            {"class": "a.D", "method": "go", "file": "D.scala", "line": -1},
        ],
    }
    (plain,) = parse(
        staging_rows([b'{"ts":"2026-11-28T20:24:53Z","level":"INFO","msg":"m","logger":"L"}']),
        "spark_json",
    )[0].collect()
    assert (plain["context"], plain["exception"]) == ({}, None)


FLAT_EXCEPTION = ("exception_class", "exception_message", "stack_trace")
"""The columns a ``spark_json`` table had before its exception was a struct."""


@pytest.mark.slow
@pytest.mark.sqlite_pass
@pytest.mark.timeout(600)
def test_a_spark_jobs_json_log_lands_its_exceptions_as_structs_in_a_table_of_flat_ones(
    spark: SparkSession, spark_json_job: SparkJobLogs, tmp_path: Path, metastore_url: str
) -> None:
    log = tmp_path / "logs" / "spark.log"
    log.parent.mkdir()
    shutil.copyfile(spark_json_job.log4j.path, log)
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="spark_json")
    lake = lake_location(load_pipeline_config(path))
    current = source_schema("spark_json")
    before = [f for f in current.fields if f.name != "exception"]
    flat = [NestedField(0, name, StringType(), required=False) for name in FLAT_EXCEPTION]
    PipelineOperations(path).collect_once()
    with open_lake(lake) as catalog:  # the table as an earlier release created it
        old = assign_fresh_schema_ids(Schema(*before[:-1], *flat, before[-1]))
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        catalog.ensure_table("access", old, "spark_json")

    (landed,) = land_and_commit_sealed(spark, path)

    events = len(spark_json_job.log4j.events)
    assert landed["rows"] == {"access": events}
    rows = table_rows(lake, "access").to_pylist()
    assert len(rows) == events
    assert all(row[name] is None for row in rows for name in FLAT_EXCEPTION)
    truth = read_truth_fields(spark_json_job.log4j.path.with_name("spark.truth.jsonl"))
    thrown = sorted(str(r["exception_class"]) for r in truth if "exception_class" in r)
    exceptions = [row["exception"] for row in rows if row["exception"] is not None]
    assert sorted(e["class"] for e in exceptions) == thrown and len(thrown) >= 4
    assert all(e["frames"] and all(f["method"] for f in e["frames"]) for e in exceptions)
