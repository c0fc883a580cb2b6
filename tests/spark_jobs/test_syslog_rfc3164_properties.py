"""Properties of the ``syslog_rfc3164`` format: BSD syslog lines generated from their fields
(a BSD time or an RFC 3339 one, with or without a ``<PRI>``, a tag with or without its PID and
colon) parse back to those fields, their BSD time in the source's zone and the year the seal
time gives it; any line is a row or a reject with one of the format's reasons."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline_core.formats import FORMATS, SourceFormat
from spark_jobs.formats._syslog import SEVERITY_KEYWORDS
from spark_jobs.formats.syslog_rfc3164 import MONTHS
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, landed

pytestmark = pytest.mark.spark

COLUMNS = ("facility", "severity", "level", "hostname", "app_name", "proc_id", "message")
PRINTABLE = "".join(chr(c) for c in range(33, 127))
ZONES = ("UTC", "Asia/Tokyo", "Asia/Kolkata")
"""Zones without daylight saving time since 1951 (a BSD time names no zone, so a time in an
hour a clock change repeats is ambiguous)."""
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))


@dataclass(frozen=True)
class BsdLine:
    """A BSD syslog line's fields (None: not there) and the line they make."""

    priority: int | None
    time: datetime
    """A BSD time's wall clock in the source's zone (naive), or an RFC 3339 time (aware)."""
    fraction_digits: int
    hostname: str | None
    tag: str
    pid: str | None
    colon: bool
    message: str

    def line(self) -> bytes:
        pri = "" if self.priority is None else f"<{self.priority}>"
        if self.time.tzinfo is None:
            stamp = f"{MONTHS[self.time.month - 1]} {self.time.day:2d} {self.time:%H:%M:%S}"
        else:
            fraction = f"{self.time.microsecond:06d}"[: self.fraction_digits]
            stamp = self.time.isoformat(timespec="seconds").replace("+00:00", "Z")
            stamp = stamp[:19] + (f".{fraction}" if fraction else "") + stamp[19:]
        tag = self.tag + ("" if self.pid is None else f"[{self.pid}]") + (":" if self.colon else "")
        return f"{pri}{stamp} {self.hostname or '-'} {tag} {self.message}".encode()

    def expected(self, zone: str) -> dict[str, Any]:
        if self.time.tzinfo is None:
            time = self.time.replace(tzinfo=ZoneInfo(zone))
        else:
            kept = 10 ** (6 - self.fraction_digits)
            time = self.time.replace(microsecond=self.time.microsecond // kept * kept)
        severity = None if self.priority is None else self.priority % 8
        return {
            "facility": None if self.priority is None else self.priority // 8,
            "severity": severity,
            "level": None if severity is None else SEVERITY_KEYWORDS[severity],
            "hostname": self.hostname,
            "app_name": self.tag,
            "proc_id": self.pid,
            "message": self.message,
            "event_time": time.astimezone(timezone.utc),
        }


def within_the_year_to(sealed_local: datetime) -> st.SearchStrategy[datetime]:
    """Wall clocks the seal time's year rule dates right: from the first day of the month
    after the seal's, a year before, to the seal (to the second)."""
    if sealed_local.month == 12:
        start = datetime(sealed_local.year, 1, 1)
    else:
        start = datetime(sealed_local.year - 1, sealed_local.month + 1, 1)
    end = sealed_local.replace(tzinfo=None, microsecond=0)
    return st.datetimes(start, end).map(lambda wall: wall.replace(microsecond=0))


def bsd_lines(sealed_local: datetime) -> st.SearchStrategy[BsdLine]:
    offsets = st.integers(-18 * 60, 18 * 60).map(lambda m: timezone(timedelta(minutes=m)))
    rfc3339 = st.datetimes(datetime(1970, 1, 1), datetime(2200, 12, 31), timezones=offsets)
    word = st.text(st.sampled_from(PRINTABLE), min_size=1, max_size=40)
    return st.builds(
        BsdLine,
        priority=st.none() | st.integers(0, 191),
        time=within_the_year_to(sealed_local) | rfc3339,
        fraction_digits=st.integers(0, 6),
        hostname=st.none() | word.filter(lambda host: host != "-"),
        tag=st.text(st.sampled_from(PRINTABLE.replace("[", "").replace(":", "")), min_size=1),
        pid=st.none() | st.text(st.sampled_from(PRINTABLE.replace("]", "")), min_size=1),
        colon=st.booleans(),
        message=TEXT,
    )


@st.composite
def examples(draw: st.DrawFn) -> tuple[str, datetime, list[BsdLine]]:
    """A zone, a seal time and lines sealed then."""
    zone = draw(st.sampled_from(ZONES))
    sealed = draw(
        st.datetimes(datetime(1980, 1, 1), datetime(2100, 1, 1), timezones=st.just(timezone.utc))
    )
    lines = draw(st.lists(bsd_lines(sealed.astimezone(ZoneInfo(zone))), min_size=1, max_size=40))
    return zone, sealed, lines


def columns(row: dict[str, Any] | str) -> dict[str, Any] | str:
    """A row's format columns and UTC time (a reason as it is)."""
    if isinstance(row, str):
        return row
    return {name: row[name] for name in COLUMNS} | {
        "event_time": row["event_time"].astimezone(timezone.utc)
    }


@SPARK_EXAMPLES
@given(example=examples())
def test_a_line_made_of_fields_lands_as_those_fields(
    staging_rows: StagingRows, example: tuple[str, datetime, list[BsdLine]]
) -> None:
    zone, sealed, generated = example
    lines = [line.line() for line in generated]

    rows = landed(
        lambda items, source: staging_rows(items, source=source, sealed_at=sealed),
        lines,
        "syslog_rfc3164",
        timezone=zone,
    )

    assert [columns(row) for row in rows] == [line.expected(zone) for line in generated]


@SPARK_EXAMPLES
@given(lines=st.lists(st.binary(max_size=80).filter(lambda b: b"\n" not in b), max_size=40))
def test_any_line_is_a_row_or_a_reject_with_one_of_the_formats_reasons(
    staging_rows: StagingRows, lines: list[bytes]
) -> None:
    lines = [b"<13>Nov 28 10:00:00 host app[1]: one", *lines]

    rows = landed(staging_rows, lines, "syslog_rfc3164")

    reasons = {reason.value for reason in FORMATS[SourceFormat.SYSLOG_RFC3164].rejects}
    assert isinstance(rows[0], dict)
    assert all(isinstance(row, dict) or row in reasons for row in rows)
