"""Properties of the ``spark_log4j`` format: records generated from their fields, written as
log4j2 writes them with Spark's default pattern (``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``,
the time local to the source's time zone, ``%ex`` as ``Throwable.printStackTrace``), parse back
to those fields; a record damaged in a known way is a reject with the reason the damage calls
for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason
from spark_jobs.formats.spark_log4j import EXCEPTION_START
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, format_columns, landed
from tests.support.staging import Event, Line

pytestmark = pytest.mark.spark

ZONES = ("UTC", "Asia/Tokyo", "Europe/Zurich")
COLUMNS = ("level", "logger", "message", "exception", "event_lines", "cut")
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=30)
"""A message's text, its lines included (a ``\\r`` before a ``\\n`` is a CRLF line end's)."""
THROWABLES = (
    "java.lang.IllegalStateException",
    "java.io.IOException",
    "java.lang.OutOfMemoryError",
    "org.apache.spark.SparkException",
    "org.apache.spark.api.python.PythonException",
    "org.apache.spark.sql.AnalysisException",
    "scala.MatchError",
)
"""Classes a throwable's line starts with. A class whose name does not end in ``Exception``,
``Error``, ``Throwable`` or ``Failure`` is not told apart from the message: the format's limit
(``spark_jobs.formats.spark_log4j``), not drawn."""
THROWABLE_LINE = re.compile(EXCEPTION_START.replace(r"\z", r"\Z"), re.ASCII)
"""Where the format cuts a record's body (Java's ``\\w`` is ASCII's)."""
BAD_TIMES = ("26/13/01 10:00:00", "26/02/30 10:00:00", "26/04/31 10:00:00", "26/11/28 25:00:00")


@dataclass(frozen=True)
class Throwable:
    """A throwable as ``Throwable.printStackTrace`` prints it, with its cause."""

    name: str
    message: str | None
    frames: tuple[str, ...]
    cause: Throwable | None

    def printed(self, caused: bool = False) -> str:
        """Its lines, each ended by a newline; a cause's frames end with ``... n more``."""
        head = self.name if self.message is None else f"{self.name}: {self.message}"
        text = ("Caused by: " if caused else "") + head + "\n"
        text += "".join(f"\tat {frame}\n" for frame in self.frames)
        if caused:
            text += "\t... 4 more\n"
        return text + (self.cause.printed(caused=True) if self.cause else "")


@dataclass(frozen=True)
class Record:
    local_time: datetime
    level: str
    logger: str
    message: str
    throwable: Throwable | None

    def lines(self, time_text: str | None = None, level: str | None = None) -> list[bytes]:
        """The record as log4j2 writes it (its lines, without their newlines): the pattern
        ``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``, with ``time_text`` and ``level`` if given."""
        stamp = time_text or self.local_time.strftime("%y/%m/%d %H:%M:%S")
        printed = self.throwable.printed() if self.throwable else ""
        text = f"{stamp} {level or self.level} {self.logger}: {self.message}\n{printed}"
        return text.removesuffix("\n").encode().split(b"\n")

    def expected(self, zone: str) -> dict[str, Any]:
        lines = self.lines()
        return {
            "level": self.level,
            "logger": self.logger,
            "message": self.message,
            "exception": self.throwable.printed().removesuffix("\n") if self.throwable else None,
            "event_lines": len(lines),
            "cut": None,
            "event_time": self.local_time.replace(tzinfo=ZoneInfo(zone)).astimezone(timezone.utc),
        }


FRAMES = st.lists(
    st.from_regex(r"[a-z]{1,6}(\.[A-Za-z][A-Za-z0-9$]{0,8}){1,3}\.[a-z$][A-Za-z0-9$]{0,8}"
                  r"\(([A-Z][a-z]{0,6}\.(java|scala):[0-9]{1,4}|Native Method|Unknown Source)\)",
                  fullmatch=True),
    max_size=4,
).map(tuple)  # fmt: skip
throwables = st.recursive(
    st.builds(Throwable, st.sampled_from(THROWABLES), st.none() | TEXT, FRAMES, st.none()),
    lambda causes: st.builds(
        Throwable, st.sampled_from(THROWABLES), st.none() | TEXT, FRAMES, st.none() | causes
    ),
    max_leaves=3,
)
records = st.builds(
    Record,
    local_time=st.datetimes(datetime(2000, 1, 1), datetime(2099, 12, 31, 23, 59, 59)).map(
        lambda time: time.replace(microsecond=0)
    ),
    level=st.sampled_from(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]),
    logger=st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,20}", fullmatch=True),
    # A later line of the message naming a throwable would begin its exception: not drawn.
    message=TEXT.filter(lambda text: not THROWABLE_LINE.search(text)),
    throwable=st.none() | throwables,
)


def is_local_time(local: datetime, zone: str) -> bool:
    """Whether ``local`` is the local time of exactly one instant in ``zone`` (not in the hour
    a clock skips, nor in the hour it repeats)."""
    first, second = (local.replace(tzinfo=ZoneInfo(zone), fold=fold) for fold in (0, 1))
    back = first.astimezone(timezone.utc).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return first.utcoffset() == second.utcoffset() and back == local


def staged(lines: list[bytes]) -> Line:
    """A record's lines as the collector stages them: a line, or an event of its lines."""
    return lines[0] if len(lines) == 1 else Event(tuple(lines))


columns = partial(format_columns, COLUMNS)


DAMAGES = st.none() | st.sampled_from(
    ["invalid utf-8", "not a record", "lowercase level", *(f"time {t}" for t in BAD_TIMES)]
)


@SPARK_EXAMPLES
@given(
    zone=st.sampled_from(ZONES),
    generated=st.lists(st.tuples(records, DAMAGES), min_size=1, max_size=30),
)
def test_a_record_log4j_wrote_lands_as_its_fields_and_a_damaged_one_is_a_reject(
    staging_rows: StagingRows, zone: str, generated: list[tuple[Record, str | None]]
) -> None:
    assume(all(is_local_time(record.local_time, zone) for record, _ in generated))
    items: list[Line] = []
    wanted: list[dict[str, Any] | str] = []
    for record, damage in generated:
        lines = record.lines()
        if damage is None:
            wanted.append(record.expected(zone))
        elif damage == "invalid utf-8":
            lines[0] += b"\xff"
            wanted.append(RejectReason.INVALID_UTF8.value)
        elif damage == "not a record":
            lines[0] = b"#" + lines[0]
            wanted.append(RejectReason.NO_MATCH.value)
        elif damage == "lowercase level":
            lines = record.lines(level=record.level.lower())
            wanted.append(RejectReason.NO_MATCH.value)
        else:
            lines = record.lines(time_text=damage.removeprefix("time "))
            wanted.append(RejectReason.BAD_TIMESTAMP.value)
        items.append(staged(lines))

    rows = landed(staging_rows, items, "spark_log4j", timezone=zone)

    assert [columns(row) for row in rows] == wanted
