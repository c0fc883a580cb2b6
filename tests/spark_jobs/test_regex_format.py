"""The ``regex`` format: a source's own pattern read into typed columns. The log is written by a
real Python program through ``logging`` with a format no built-in format knows, in a time zone
other than UTC, read and framed by the collector's reader, staged, parsed by Spark, and checked
against the attributes the program's own handler recorded for each record."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import MultilinePreset, load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import read_framed, table_rows
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import StagingRows, staged_items
from tests.support.faults import land_and_commit_sealed
from tests.support.log_programs import read_truth_fields, write_python_log
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.spark, pytest.mark.sqlite_pass]  # the metastore only as the catalog

ZONE = "America/New_York"
LOG_FORMAT = (
    "%(asctime)s | %(levelname)s | %(name)s | pid=%(process)d | %(filename)s:%(lineno)d | "
    "%(message)s"
)
PATTERN = (
    r"(?s)(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \| (?P<level>[A-Z]+) \| "
    r"(?P<logger>[\w.]+) \| pid=(?P<pid>\d+) \| (?P<file>[^:|]+):(?P<line>\d+) \| "
    r"(?P<text>.*)"
)
COLUMNS = {"time": "timestamp", "pid": "long", "line": "int"}
LAYOUT = "yyyy-MM-dd HH:mm:ss,SSS"


@pytest.mark.timeout(300)
def test_should_land_each_record_of_a_real_log_in_the_columns_of_the_sources_pattern(
    staging_rows: StagingRows, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, truth = tmp_path / "logs" / "app.log", tmp_path / "truth.jsonl"
    log.parent.mkdir()
    monkeypatch.setenv("TZ", ZONE)  # the program writes asctime in its local time
    write_python_log(log, events=300, tracebacks=0.2, fmt=LOG_FORMAT, seed=11, truth=truth)
    received = read_framed(log, MultilinePreset.PYTHON)

    parsed, rejects = parse(
        staging_rows(staged_items(received), source="app"),
        "regex",
        pattern=PATTERN,
        columns=COLUMNS,
        time_column="time",
        time_layout=LAYOUT,
        timezone=ZONE,
    )

    assert parsed.columns == [
        "event_id", "file_fingerprint", "byte_offset", "host", "event_time",
        "time", "level", "logger", "pid", "file", "line", "text", "event_date", "checkpoint_id",
    ]  # fmt: skip
    assert [f.dataType.simpleString() for f in parsed.schema.fields[5:12]] == [
        "timestamp", "string", "string", "bigint", "string", "int", "string",
    ]  # fmt: skip
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    records = read_truth_fields(truth)
    assert rejects.count() == 0
    assert len(rows) == len(records) == 300
    for row, record in zip(rows, records, strict=True):
        assert (row["level"], row["logger"]) == (record["level"], record["logger"])
        assert (row["pid"], row["file"], row["line"]) == (
            record["process"],
            record["filename"],
            record["lineno"],
        )
        exception = record["exception"]
        assert row["text"] == str(record["message"]) + (f"\n{exception}" if exception else "")
        created = datetime.fromtimestamp(float(str(record["created"])), timezone.utc)
        stamp = row["event_time"].astimezone(timezone.utc)
        assert created - timedelta(milliseconds=1) <= stamp <= created  # asctime's milliseconds
        assert row["time"] == row["event_time"]
    assert any("Traceback" in row["text"] for row in rows)


HEAD = b"2026-11-28 10:00:00,123 | INFO | app | "


@pytest.mark.parametrize(
    ("line", "reason", "pid"),
    [
        (HEAD + b"pid=42 | a.py:7 | fine", None, 42),
        (HEAD + b"pid=9999999999999999999 | a.py:7 | over a long", None, None),
        (b"INFO | app | no time", RejectReason.NO_MATCH, None),
        (HEAD.replace(b"-11-", b"-13-") + b"pid=1 | a.py:7 | x", RejectReason.BAD_TIMESTAMP, None),
        (HEAD + b"pid=1 | a.py:7 | caf\xff", RejectReason.INVALID_UTF8, None),
    ],
)
def test_should_reject_what_the_pattern_does_not_read_and_null_a_value_of_another_type(
    staging_rows: StagingRows, line: bytes, reason: RejectReason | None, pid: int | None
) -> None:
    parsed, rejects = parse(
        staging_rows([line], source="app"),
        "regex",
        pattern=PATTERN,
        columns=COLUMNS,
        time_column="time",
        time_layout=LAYOUT,
        timezone="Europe/Zurich",
    )

    assert [row["reason"] for row in rejects.collect()] == ([reason.value] if reason else [])
    if reason is None:
        (row,) = parsed.collect()
        assert (row["level"], row["pid"], row["line"]) == ("INFO", pid, 7)
        assert row["event_time"].astimezone(timezone.utc) == datetime(
            2026, 11, 28, 9, 0, 0, 123000, timezone.utc
        )


def test_should_read_an_iso_time_with_its_offset_and_default_to_the_seal_time(
    staging_rows: StagingRows,
) -> None:
    lines = [b"2026-11-28T10:00:00.5+02:00 up", b"2026-11-28T10:00:00 up"]
    parsed, _ = parse(
        staging_rows(lines, source="app"),
        "regex",
        pattern=r"(?P<at>\S+) (?P<state>\w+)",
        columns={"at": "timestamp"},
        time_column="at",
        timezone="Asia/Tokyo",
    )
    stamps = [
        row["event_time"].astimezone(timezone.utc)
        for row in parsed.orderBy("byte_offset").collect()
    ]
    assert stamps == [
        datetime(2026, 11, 28, 8, 0, 0, 500000, timezone.utc),  # its own offset
        datetime(2026, 11, 28, 1, 0, 0, tzinfo=timezone.utc),  # Tokyo's
    ]

    untimed, _ = parse(
        staging_rows(lines, source="app"), "regex", pattern=r"(?P<at>\S+) (?P<state>\w+)"
    )
    (first, _second) = untimed.orderBy("byte_offset").collect()
    assert first["at"] == "2026-11-28T10:00:00.5+02:00"
    assert first["event_time"] is not None  # the seal time


@pytest.mark.timeout(300)
def test_a_regex_source_is_collected_landed_and_committed_into_its_typed_table(
    spark: SparkSession, tmp_path: Path, metastore_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pattern and its types travel in the batch's manifest to the landing, which makes
    the table with the pattern's columns."""
    log, truth = tmp_path / "logs" / "app.log", tmp_path / "truth.jsonl"
    log.parent.mkdir()
    monkeypatch.setenv("TZ", ZONE)
    write_python_log(log, events=200, tracebacks=0.2, fmt=LOG_FORMAT, seed=3, truth=truth)
    source = {
        "pattern": PATTERN,
        "columns": COLUMNS,
        "time_column": "time",
        "time_layout": LAYOUT,
        "timezone": ZONE,
        "multiline": {"preset": "python"},
    }
    path = write_config(tmp_path, metastore_url, pattern="logs/app.log", fmt="regex", source=source)
    quiet = time.time() - 60  # a log no longer written: its last event is read whole now
    os.utime(log, (quiet, quiet))
    PipelineOperations(path).collect_once()

    (landed,) = land_and_commit_sealed(spark, path)

    assert (landed["rows"], landed.get("rejects", {})) == ({"access": 200}, {})
    rows = table_rows(lake_location(load_pipeline_config(path)), "access").to_pylist()
    records = read_truth_fields(truth)
    assert sorted((r["pid"], r["line"], r["level"]) for r in rows) == sorted(
        (t["process"], t["lineno"], t["level"]) for t in records
    )
    assert {type(r["pid"]) for r in rows} == {int}
    assert all(r["event_time"] == r["time"] for r in rows)
