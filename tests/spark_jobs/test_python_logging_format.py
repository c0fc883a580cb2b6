"""The ``python_logging`` format: records a real Python program wrote through ``logging``, in
several format strings and a time zone other than UTC, read and framed by the collector's
reader (``multiline`` ``python``), staged, and parsed by Spark into their attributes, checked
against the attributes the program's own handler recorded for each record."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pipeline_core.config import MultilinePreset
from pipeline_core.testing import read_framed
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import ParsedOnce, StagingRows, reason_of, staged_items
from tests.support.log_programs import PYTHON_FORMATS, read_truth_fields, write_python_log

pytestmark = pytest.mark.spark

ZONE = "America/New_York"
FORMATS = {
    **PYTHON_FORMATS,
    "padded": "%(asctime)s %(levelname)-8s [%(threadName)s] %(process)d %(funcName)s: %(message)s",
    "created": "%(created)f %(name)s %(levelname)s %(message)s",
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(FORMATS))
def test_should_land_each_record_with_the_attributes_logging_gave_it(
    staging_rows: StagingRows, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    log_format = FORMATS[name]
    log, truth = tmp_path / "logs" / "app.log", tmp_path / "truth.jsonl"
    log.parent.mkdir()
    monkeypatch.setenv("TZ", ZONE)  # the program writes asctime in its local time
    write_python_log(
        log, events=300, tracebacks=0.2, stacks=0.05, fmt=log_format, seed=5, truth=truth
    )
    received = read_framed(log, MultilinePreset.PYTHON)

    parsed, rejects = parse(
        staging_rows(staged_items(received), source="app"),
        "python_logging",
        log_format=log_format,
        timezone=ZONE,
    )
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    records = read_truth_fields(truth)
    assert rejects.count() == 0
    assert len(rows) == len(records) == 300
    for row, record in zip(rows, records, strict=True):
        for column, placeholder in (
            ("level", "levelname"),
            ("logger", "name"),
            ("filename", "filename"),
            ("lineno", "lineno"),
            ("func_name", "funcName"),
            ("process", "process"),
            ("thread_name", "threadName"),
        ):
            named = f"%({placeholder})" in log_format
            assert row[column] == (record[column] if named else None), (column, record)
        assert row["message"] == record["message"]
        assert row["exception"] == record["exception"]
        assert row["event_lines"] == str(record["record"]).count("\n")
        created = datetime.fromtimestamp(float(str(record["created"])), timezone.utc)
        stamp = row["event_time"].astimezone(timezone.utc)
        if "%(asctime)" in log_format:  # to the millisecond, as asctime writes it
            assert created - timedelta(milliseconds=1) <= stamp <= created
        elif "%(created)" in log_format:  # to the microsecond, as %f writes it
            assert abs(stamp - created) <= timedelta(microseconds=1)
    assert any(row["exception"] for row in rows)
    assert any(row["exception"] is None for row in rows)


PYTHON_LOGGING_CASES: list[tuple[bytes, RejectReason | None]] = [
    (b"2026-11-28 10:00:00,123 INFO app: fine", None),
    (b"not a record", RejectReason.NO_MATCH),
    (b"2026-13-28 10:00:00,123 INFO app: a 13th month", RejectReason.BAD_TIMESTAMP),
    (b"2026-11-28 10:00:00,123 INFO app: caf\xff", RejectReason.INVALID_UTF8),
]


@pytest.mark.parametrize(("line", "reason"), PYTHON_LOGGING_CASES)
def test_should_reject_what_the_format_did_not_write_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: RejectReason | None
) -> None:
    row = parsed_once.of(
        [case[0] for case in PYTHON_LOGGING_CASES],
        "python_logging",
        source="app",
        log_format=PYTHON_FORMATS["common"],
        timezone="Europe/Zurich",
    )[line]

    assert reason_of(row) == (reason.value if reason else None)
    if reason is None:
        assert isinstance(row, dict)
        assert (row["level"], row["logger"], row["message"]) == ("INFO", "app", "fine")
        assert row["event_time"].astimezone(timezone.utc) == datetime(
            2026, 11, 28, 9, 0, 0, 123000, timezone.utc
        )
