"""The ``spark_log4j`` format: a real PySpark job's log4j2 log (Spark's default pattern), read
and framed by the collector's reader (``multiline`` ``java``), staged, and parsed by Spark;
checked against what log4j2 itself recorded of each record (its level, logger, message,
exception class and time, by a ``JsonTemplateLayout`` beside the log)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.config import MultilinePreset
from pipeline_core.testing import read_framed
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import ParsedOnce, StagingRows, reason_of, staged_items
from tests.support.log_programs import SparkJobLogs, paired_with_truth, read_truth_fields

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def row_fields(row: dict[str, Any]) -> tuple[Any, ...]:
    # Java prints an exception's class first, then ": " and its message, if any.
    exception_class = (row["exception"] or "").split("\n", 1)[0].split(":", 1)[0]
    return (row["level"], row["logger"], row["message"], exception_class)


def record_fields(record: dict[str, object]) -> tuple[Any, ...]:
    logger = str(record["logger"]).rsplit(".", 1)[-1]
    return (record["level"], logger, record["message"], str(record.get("exception_class") or ""))


@pytest.mark.timeout(600)
def test_should_land_each_record_of_a_spark_jobs_log_with_what_log4j_recorded(
    staging_rows: StagingRows, spark_job: SparkJobLogs, tmp_path: Path
) -> None:
    log = spark_job.log4j.path
    received = read_framed(log, MultilinePreset.JAVA)

    parsed, rejects = parse(
        staging_rows(staged_items(received), source="spark"), "spark_log4j", timezone="UTC"
    )
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    records = read_truth_fields(log.with_name("spark.truth.jsonl"))
    assert rejects.count() == 0
    assert len(rows) == len(records) == len(spark_job.log4j.events)
    for row, record in paired_with_truth(rows, records, row_fields, record_fields):
        assert row["level"] == record["level"]
        assert row["logger"] == str(record["logger"]).rsplit(".", 1)[-1]
        assert row["message"] == record["message"], record
        if "exception_class" in record:
            assert row["exception"].startswith(str(record["exception_class"])), record
        else:
            assert row["exception"] is None, record
        # The JVM wrote its local time; read as UTC, it is the UTC time plus the local offset.
        written = datetime.fromtimestamp(int(str(record["millis"])) // 1000, timezone.utc)
        offset = written.astimezone().utcoffset()
        assert offset is not None
        assert row["event_time"].astimezone(timezone.utc) == written + offset, record
    assert sum(row["exception"] is not None for row in rows) >= 4


LOG4J_CASES: list[tuple[bytes, RejectReason | None]] = [
    (b"26/11/28 10:00:00 INFO SparkContext: Running Spark version 4.0.0", None),
    (b"Running Spark version", RejectReason.NO_MATCH),
    (b"26/13/28 10:00:00 INFO SparkContext: a 13th month", RejectReason.BAD_TIMESTAMP),
    (b"26/11/28 10:00:00 INFO SparkContext: caf\xff", RejectReason.INVALID_UTF8),
]


@pytest.mark.parametrize(("line", "reason"), LOG4J_CASES)
def test_should_reject_what_spark_did_not_write_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: RejectReason | None
) -> None:
    lines = [case[0] for case in LOG4J_CASES]
    row = parsed_once.of(lines, "spark_log4j", source="spark", timezone="Asia/Tokyo")[line]

    assert reason_of(row) == (reason.value if reason else None)
    if reason is None:
        assert isinstance(row, dict)
        assert (row["level"], row["logger"]) == ("INFO", "SparkContext")
        assert row["message"] == "Running Spark version 4.0.0"
        assert row["exception"] is None
        assert row["event_time"].astimezone(timezone.utc) == datetime(
            2026, 11, 28, 1, 0, 0, tzinfo=timezone.utc
        )
