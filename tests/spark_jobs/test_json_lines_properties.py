"""Properties of the ``json_lines`` format: objects generated from their keys, written by
``json.dumps`` (on one line or pretty-printed over several), land as they were written, their
time key read as the time it states and each declared key in its typed column (or, of another
type, in ``rescued``); a line damaged in a known way is a reject with the reason the damage
calls for."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, landed
from tests.support.staging import DEFAULT_SEALED_AT, Event, Line

pytestmark = pytest.mark.spark

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
"""Any text: JSON escapes what a line cannot hold."""
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
TIMES = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 12, 31),
    timezones=st.one_of(
        st.none(), st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
    ),
)
EPOCH_SECONDS = (31_536_000, 7_258_118_400)
"""1971 to 2200."""


def instant(time: datetime) -> datetime:
    """``time`` as an instant: a time without an offset is UTC's (the landing's session's)."""
    return time.replace(tzinfo=time.tzinfo or timezone.utc).astimezone(timezone.utc)


def epoch_instant(seconds: float | int | str) -> datetime:
    """Epoch seconds, as written (a float as ``json.dumps`` writes it), to the microsecond."""
    written = Decimal(seconds if isinstance(seconds, str) else json.dumps(seconds))
    micros = written.quantize(Decimal("0.000001"), ROUND_HALF_UP) * 1_000_000
    return EPOCH + timedelta(microseconds=int(micros))


@st.composite
def written_times(draw: st.DrawFn) -> tuple[Any, datetime]:
    """A time as an object states it, and the instant it is (the seal time when it states
    none: JSON ``null``)."""
    kind = draw(st.sampled_from(["iso", "utc", "epoch", "epoch float", "epoch text", "null"]))
    if kind == "null":
        return None, DEFAULT_SEALED_AT
    if kind in ("iso", "utc"):
        time = draw(TIMES)
        text = time.isoformat()
        return (text.replace("+00:00", "Z") if kind == "utc" else text), instant(time)
    seconds: int | float | str = draw(st.integers(*EPOCH_SECONDS))
    if kind == "epoch float":
        seconds = draw(st.floats(*EPOCH_SECONDS))
    elif kind == "epoch text":
        seconds = json.dumps(draw(st.floats(*EPOCH_SECONDS)))
    return seconds, epoch_instant(seconds)


@st.composite
def objects(draw: st.DrawFn) -> tuple[dict[str, Any], datetime]:
    """An object with a ``time`` key or without one, and the instant it lands at."""
    found = draw(st.dictionaries(TEXT.filter(lambda key: key != "time"), JSON_VALUES, max_size=5))
    stamp = DEFAULT_SEALED_AT
    if draw(st.booleans()):
        found["time"], stamp = draw(written_times())
    if draw(st.booleans()):
        found["Time"] = "not the time key"  # a key is its name exactly
    return found, stamp


def written(found: Any, ascii_only: bool, pretty: bool) -> str:
    return json.dumps(found, ensure_ascii=ascii_only, indent=2 if pretty else None)


def staged(text: bytes) -> Line:
    """A line, or a pretty-printed object as the event of its lines."""
    lines = tuple(text.split(b"\n"))
    return lines[0] if len(lines) == 1 else Event(lines)


def payload_and_time(row: dict[str, Any] | str) -> dict[str, Any] | str:
    """A row's payload and UTC time (a reason as it is)."""
    if isinstance(row, str):
        return row
    return {"payload": row["payload"], "event_time": row["event_time"].astimezone(timezone.utc)}


DAMAGES: dict[str, tuple[Callable[[str], bytes], RejectReason]] = {
    "truncated": (lambda text: text[:-1].encode(), RejectReason.INVALID_JSON),
    "trailing text": (lambda text: (text + " x").encode(), RejectReason.INVALID_JSON),
    "in an array": (lambda text: f"[{text}]".encode(), RejectReason.INVALID_JSON),
    "a string": (lambda text: json.dumps(text).encode(), RejectReason.INVALID_JSON),
    "invalid utf-8": (lambda text: text.encode()[:-1] + b',"x":"\xc3"}', RejectReason.INVALID_UTF8),
}
BAD_TIMES: tuple[Any, ...] = (
    "not a date",
    "",
    True,
    {},
    [1],
    "2026-13-01T00:00:00Z",
    253_402_300_800,
    "1e12",
)
"""Times that are none: no date, not a string nor a number, epoch seconds past year 9999."""


@dataclass(frozen=True)
class BadTime:
    """The damage of a time key holding ``value``."""

    value: Any


@SPARK_EXAMPLES
@given(
    generated=st.lists(
        st.tuples(
            objects(),
            st.none() | st.sampled_from(sorted(DAMAGES)) | st.sampled_from(BAD_TIMES).map(BadTime),
        ),
        min_size=1,
        max_size=30,
    ),
    ascii_only=st.booleans(),
    pretty=st.booleans(),
)
def test_an_object_lands_as_written_at_its_time_and_a_damaged_one_is_a_reject(
    staging_rows: StagingRows,
    generated: list[tuple[tuple[dict[str, Any], datetime], str | BadTime | None]],
    ascii_only: bool,
    pretty: bool,
) -> None:
    items: list[Line] = []
    wanted: list[dict[str, Any] | str] = []
    for (found, stamp), damage in generated:
        text = written(found, ascii_only, pretty)
        if damage is None:
            items.append(staged(text.encode()))
            wanted.append({"payload": text, "event_time": stamp})
        elif isinstance(damage, BadTime):
            bad = {**found, "time": damage.value}
            items.append(staged(written(bad, ascii_only, pretty).encode()))
            wanted.append(RejectReason.BAD_TIMESTAMP.value)
        else:
            change, reason = DAMAGES[damage]
            items.append(staged(change(text)))
            wanted.append(reason.value)

    rows = landed(staging_rows, items, "json_lines")

    assert [payload_and_time(row) for row in rows] == wanted


# -- declared columns ---------------------------------------------------------------------------

DECLARED = {
    "level": "string",
    "status": "int",
    "size": "long",
    "http.duration_ms": "double",
    "cached": "boolean",
    "at": "timestamp",
}
COLUMN_NAMES = {key: key.replace(".", "_") for key in DECLARED}
NOT_A_NUMBER = TEXT.filter(
    lambda text: not any(c.isdigit() for c in text) and text not in ("true", "false")
)
"""Text that is no number, no boolean and no time (a string ``true`` is the JSON ``true``)."""
OTHER_VALUES = st.one_of(
    st.booleans(),
    NOT_A_NUMBER,
    st.lists(SCALARS, max_size=2),
    st.dictionaries(TEXT, SCALARS, max_size=2),
)


def fitting(kind: str) -> st.SearchStrategy[tuple[Any, Any]]:
    """A value of the column's type (as JSON writes it, or as its text where the column takes
    that), and what the column holds of it."""
    if kind == "string":
        return JSON_VALUES.filter(lambda value: value is not None).map(lambda value: (value, value))
    if kind == "boolean":
        return st.booleans().map(lambda value: (value, value))
    if kind == "timestamp":
        return written_times().filter(lambda time: time[0] is not None)
    if kind == "double":
        numbers = st.floats(allow_nan=False, allow_infinity=False)
        return st.one_of(
            numbers.map(lambda value: (value, value)),
            numbers.map(lambda value: (json.dumps(value), value)),
        )
    bits = 32 if kind == "int" else 64
    integers = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return integers.map(lambda value: (value, value)) | integers.map(lambda v: (str(v), v))


def misfit(kind: str) -> st.SearchStrategy[Any]:
    """A value of another type than the column's (``rescued``, the column null)."""
    if kind == "boolean":
        return st.one_of(st.integers(), NOT_A_NUMBER, st.lists(SCALARS, max_size=2))
    if kind == "int":
        return st.one_of(
            OTHER_VALUES,
            st.integers(2**31, 2**80) | st.integers(-(2**80), -(2**31) - 1),
            st.floats(-1e9, 1e9).filter(lambda value: value != int(value)),
        )
    if kind == "long":
        return OTHER_VALUES | st.floats(-1e9, 1e9).filter(lambda value: value != int(value))
    return OTHER_VALUES


@st.composite
def declared_objects(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """An object with each declared key missing, null, of its type or of another, and the
    columns it lands in (``rescued``: the keys of another type, with their values)."""
    found: dict[str, Any] = draw(
        st.dictionaries(
            TEXT.filter(lambda key: key not in (*DECLARED, "http", "time")),
            JSON_VALUES,
            max_size=3,
        )
    )
    columns: dict[str, Any] = {}
    rescued: dict[str, Any] = {}
    for key, kind in DECLARED.items():
        how = draw(st.sampled_from(["missing", "null", "fitting", "misfit"]))
        value: Any = None
        columns[COLUMN_NAMES[key]] = None
        if how == "fitting":
            value, columns[COLUMN_NAMES[key]] = draw(fitting(kind))
        elif how == "misfit" and kind != "string":  # a string column takes every value
            value = rescued[key] = draw(misfit(kind))
        if how == "missing":
            continue
        if key == "http.duration_ms":
            found["http"] = {
                **draw(st.dictionaries(TEXT, SCALARS, max_size=2)),
                "duration_ms": value,
            }
        else:
            found[key] = value
    if "http" not in found:
        found["http"] = draw(st.sampled_from([None, 5, {}, "text"]))  # no duration in it
    columns["rescued"] = rescued or None
    return found, columns


def same_value(landed_text: str | None, value: Any) -> bool:
    """Whether a column of text holds ``value``: a string as it is, other values as JSON."""
    if isinstance(value, str) or landed_text is None:
        return bool(landed_text == value)
    return bool(json.loads(landed_text) == value)


def declared_columns(row: dict[str, Any] | str, expected: dict[str, Any]) -> dict[str, Any] | str:
    """The row's declared columns, each the expected one where it holds the same value as
    JSON (a number Spark writes as ``1.0E10``, an object with other spaces)."""
    if isinstance(row, str):
        return row
    got = {name: row[name] for name in (*COLUMN_NAMES.values(), "rescued")}
    got["at"] = got["at"] and got["at"].astimezone(timezone.utc)
    if same_value(got["level"], expected["level"]):
        got["level"] = expected["level"]
    rescued, wanted = got["rescued"] or {}, expected["rescued"] or {}
    if set(rescued) == set(wanted) and all(same_value(rescued[k], wanted[k]) for k in wanted):
        got["rescued"] = expected["rescued"]
    return got


@SPARK_EXAMPLES
@given(generated=st.lists(st.tuples(declared_objects(), st.booleans()), min_size=1, max_size=30))
def test_a_declared_key_lands_in_its_typed_column_or_is_rescued_with_its_value(
    staging_rows: StagingRows, generated: list[tuple[tuple[dict[str, Any], dict[str, Any]], bool]]
) -> None:
    lines = [written(found, ascii_only, False).encode() for (found, _), ascii_only in generated]

    rows = landed(staging_rows, lines, "json_lines", columns=DECLARED)

    for row, line, ((_, expected), _) in zip(rows, lines, generated, strict=True):
        assert isinstance(row, dict), (row, line)
        assert payload_and_time(row) == {"payload": line.decode(), "event_time": DEFAULT_SEALED_AT}
        assert declared_columns(row, expected) == expected, line
