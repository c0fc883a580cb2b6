"""Properties of the ``airflow_task`` and ``spark_json`` formats: records generated from their
fields, written as those programs write them (one JSON object a line), parse back to those
fields; a record damaged in a known way is a reject with the reason the damage calls for."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, landed

pytestmark = pytest.mark.spark

TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
"""Any text: JSON escapes what a line cannot hold."""
TIMES = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 12, 31),
    timezones=st.builds(
        timezone, st.integers(-14 * 60, 14 * 60).map(lambda m: timedelta(minutes=m))
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
AIRFLOW_KEYS = ("timestamp", "level", "event", "logger", "error_detail")


def iso(time: datetime) -> str:
    """ISO 8601 with the offset (``Z`` for UTC, as structlog writes it)."""
    return time.isoformat().replace("+00:00", "Z")


def written(record: dict[str, Any], ascii_only: bool) -> bytes:
    return json.dumps(record, ensure_ascii=ascii_only, allow_nan=False).encode()


airflow_records = st.fixed_dictionaries(
    {
        "timestamp": TIMES.map(iso),
        "level": st.sampled_from(["debug", "info", "warning", "error", "critical"]),
        "event": TEXT,
        "logger": st.sampled_from(["task", "task.stdout", "airflow.task", "sluice.probe"]),
    },
    optional={
        "error_detail": st.lists(
            st.fixed_dictionaries({"exc_type": TEXT, "exc_value": TEXT, "frames": JSON_VALUES}),
            min_size=1,
            max_size=2,
        )
    },
).flatmap(
    lambda known: st.dictionaries(
        TEXT.filter(lambda k: k not in AIRFLOW_KEYS), JSON_VALUES, max_size=5
    ).map(lambda extra: {**extra, **known})
)


def assert_extra(found: dict[str, str | None], record: dict[str, Any]) -> None:
    expected = {k: v for k, v in record.items() if k not in AIRFLOW_KEYS}
    assert set(found) == set(expected)
    for key, value in expected.items():
        if value is None or isinstance(value, str):
            assert found[key] == value, key
        else:
            text = found[key]
            assert text is not None
            assert json.loads(text) == value, key


@SPARK_EXAMPLES
@given(
    records=st.lists(airflow_records, min_size=1, max_size=30),
    ascii_only=st.booleans(),
)
def test_an_airflow_record_lands_as_its_fields(
    staging_rows: StagingRows, records: list[dict[str, Any]], ascii_only: bool
) -> None:
    rows = landed(staging_rows, [written(r, ascii_only) for r in records], "airflow_task")

    for row, record in zip(rows, records, strict=True):
        assert isinstance(row, dict), (row, record)
        assert row["event_time"].astimezone(timezone.utc) == datetime.fromisoformat(
            record["timestamp"]
        )
        assert (row["level"], row["logger"]) == (record["level"], record["logger"])
        assert row["message"] == record["event"]
        if "error_detail" in record:
            assert json.loads(row["error"]) == record["error_detail"]
        else:
            assert row["error"] is None
        assert_extra(dict(row["extra"]), record)


FRAMES = st.lists(
    st.fixed_dictionaries(
        {
            "class": st.from_regex(r"[a-z]{1,5}(\.[A-Z][A-Za-z$]{0,8}){1,3}", fullmatch=True),
            "method": st.from_regex(r"[a-z<][A-Za-z0-9$>]{0,8}", fullmatch=True),
            "file": st.none() | st.from_regex(r"[A-Z][a-z]{0,6}\.(java|scala)", fullmatch=True),
            "line": st.sampled_from([-2, -1]) | st.integers(0, 100_000),
        }
    ),
    max_size=6,
)
spark_records = st.fixed_dictionaries(
    {
        "ts": TIMES.map(
            lambda t: (
                t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
                + f"{t.microsecond // 1000:03d}Z"
            )
        ),
        "level": st.sampled_from(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]),
        "msg": TEXT,
        "logger": st.sampled_from(["Executor", "SparkContext", "TaskSetManager"]),
    },
    optional={
        "context": st.dictionaries(TEXT, TEXT, max_size=4),
        "exception": st.fixed_dictionaries(
            {"class": TEXT, "stacktrace": FRAMES}, optional={"msg": TEXT}
        ),
    },
)


@SPARK_EXAMPLES
@given(records=st.lists(spark_records, min_size=1, max_size=30), ascii_only=st.booleans())
def test_a_spark_record_lands_as_its_fields(
    staging_rows: StagingRows, records: list[dict[str, Any]], ascii_only: bool
) -> None:
    rows = landed(staging_rows, [written(r, ascii_only) for r in records], "spark_json")

    for row, record in zip(rows, records, strict=True):
        assert isinstance(row, dict), (row, record)
        assert row["event_time"].astimezone(timezone.utc) == datetime.fromisoformat(record["ts"])
        assert (row["level"], row["logger"]) == (record["level"], record["logger"])
        assert row["message"] == record["msg"]
        assert row["context"] == record.get("context", {})
        exception = record.get("exception")
        if exception is None:
            assert row["exception"] is None
            continue
        assert row["exception"].asDict(recursive=True) == {
            "class": exception["class"],
            "message": exception.get("msg"),
            "frames": exception["stacktrace"],
        }


DAMAGES: dict[str, tuple[Callable[[bytes], bytes], RejectReason]] = {
    "truncated": (lambda line: line[:-1], RejectReason.INVALID_JSON),
    "trailing text": (lambda line: line + b" x", RejectReason.INVALID_JSON),
    "not json": (lambda line: line.replace(b"{", b"<", 1), RejectReason.INVALID_JSON),
    "in an array": (lambda line: b"[" + line + b"]", RejectReason.NO_MATCH),
    "invalid utf-8": (lambda line: line[:-1] + b',"x":"\xc3"}', RejectReason.INVALID_UTF8),
}


@SPARK_EXAMPLES
@given(
    damaged=st.lists(st.sampled_from(sorted(DAMAGES)), min_size=1, max_size=10),
    airflow=airflow_records,
    spark=spark_records,
)
def test_a_damaged_record_is_a_reject_with_the_damages_reason(
    staging_rows: StagingRows,
    damaged: list[str],
    airflow: dict[str, Any],
    spark: dict[str, Any],
) -> None:
    for fmt, record, time_key in (
        ("airflow_task", airflow, "timestamp"),
        ("spark_json", spark, "ts"),
    ):
        lines: list[bytes] = []
        reasons: list[str] = []
        for damage in damaged:
            change, reason = DAMAGES[damage]
            lines.append(change(written(record, ascii_only=True)))
            reasons.append(reason.value)
        timeless = {k: v for k, v in record.items() if k != time_key}
        lines += [written(timeless, True), written({**record, time_key: "no time"}, True)]
        reasons += [RejectReason.BAD_TIMESTAMP.value] * 2
        assert landed(staging_rows, lines, fmt) == reasons
