"""Properties of the ``python_logging`` format: records generated from their attributes, formatted
by ``logging.Formatter`` itself (its time in the source's time zone), parse back to those
attributes; a record damaged in a known way is a reject with the reason the damage calls for."""

from __future__ import annotations

import io
import logging
import re
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from types import TracebackType
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pipeline_core.formats import TRACEBACK_PATTERN, RejectReason
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, format_columns, landed
from tests.support.log_programs import PYTHON_FORMATS
from tests.support.staging import DEFAULT_SEALED_AT, Event, Line

pytestmark = pytest.mark.spark

FORMATS = {
    **PYTHON_FORMATS,
    "padded": "%(asctime)s %(levelname)-8s [%(threadName)s] %(process)d %(funcName)s: %(message)s",
    "created": "%(created)f %(name)s %(levelname)s %(message)s",
}
ZONES = ("UTC", "Asia/Kolkata", "America/New_York")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=30)
"""A message's text, its lines included (a ``\\r`` before a ``\\n`` is a CRLF line end's)."""
ONE_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=20)
EXCEPTIONS = (
    "raised",
    "chained",
    "cause never raised",
    *(("group",) if sys.version_info >= (3, 11) else ()),
)
COLUMNS = (
    "level", "logger", "message", "exception", "filename", "lineno", "func_name", "process",
    "thread_name", "event_lines", "cut",
)  # fmt: skip


@dataclass(frozen=True)
class Attributes:
    """What a record is made of: a ``LogRecord``'s attributes, and what ``logging`` appends."""

    level: int
    name: str
    message: str
    created_us: int
    """Microseconds since the epoch (``LogRecord.created`` as a float of them)."""
    module: str
    lineno: int
    func: str
    process: int
    thread_name: str
    exception: str | None
    """One of :data:`EXCEPTIONS`, or None."""
    exception_text: str
    stack: bool

    def record(self) -> logging.LogRecord:
        record = logging.LogRecord(
            self.name, self.level, f"/opt/app/{self.module}.py", self.lineno, self.message,
            None, exc_info(self.exception, self.exception_text), self.func,
            stack_info() if self.stack else None,
        )  # fmt: skip
        record.created = self.created_us / 1e6
        record.msecs = float(self.created_us % 1_000_000 // 1000)
        record.process = self.process
        record.threadName = self.thread_name
        return record


def exc_info(
    kind: str | None, text: str
) -> tuple[type[BaseException], BaseException, TracebackType | None] | None:
    """A real exception of ``kind``, caught as ``logger.exception`` would catch it."""
    if kind is None:
        return None
    try:
        if kind == "raised":
            raise ValueError(text)
        if kind == "chained":
            try:
                raise KeyError(text)
            except KeyError as cause:
                raise RuntimeError("while reading") from cause
        if kind == "cause never raised":
            raise RuntimeError("failed") from OSError(text)
        if sys.version_info >= (3, 11):
            raise ExceptionGroup("several", [ValueError(text), TypeError("t")])  # noqa: F821
        raise AssertionError(kind)
    except Exception:
        found = sys.exc_info()
        assert found[0] is not None and found[1] is not None
        return found[0], found[1], found[2]


def stack_info() -> str:
    """``stack_info`` as ``Logger.findCaller`` writes it (its last frames only)."""
    written = io.StringIO()
    written.write("Stack (most recent call last):\n")
    traceback.print_stack(sys._getframe(), limit=3, file=written)
    return written.getvalue().removesuffix("\n")


def formatter(log_format: str, zone: str) -> logging.Formatter:
    """``logging``'s own formatter, writing ``asctime`` in ``zone`` (as a process whose local
    time zone it is)."""

    def local_time(seconds: float | None) -> time.struct_time:
        assert seconds is not None  # a record's ``created``
        return datetime.fromtimestamp(seconds, ZoneInfo(zone)).timetuple()

    written = logging.Formatter(log_format)
    written.converter = local_time
    return written


def ambiguous(created_us: int, zone: str) -> bool:
    """Whether the local time of ``created_us`` in ``zone`` is also another instant's (the
    hour a clock goes back repeats): no reading of the local time can tell them apart."""
    local = datetime.fromtimestamp(created_us // 1_000_000, ZoneInfo(zone))
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


@st.composite
def attributes(draw: st.DrawFn) -> Attributes:
    exception = draw(st.none() | st.sampled_from(EXCEPTIONS))
    stack = draw(st.booleans())
    message = draw(TEXT)
    if exception is not None or stack:
        # logging writes no newline between a message ending with one and what it appends.
        message = message.rstrip("\n")
    # A cause never raised is told by its one line before "The above exception was...".
    exception_text = draw(ONE_LINE if exception == "cause never raised" else TEXT)
    return Attributes(
        level=draw(st.sampled_from([10, 20, 30, 40, 50]) | st.integers(1, 60)),
        name=draw(st.from_regex(r"root|[a-z_][a-z0-9_]{0,8}(\.[A-Za-z_][A-Za-z0-9_]{0,8}){0,3}",
                                fullmatch=True)),
        message=message,
        created_us=draw(st.integers(946_684_800 * 10**6, 4_102_444_799 * 10**6)),  # 2000-2099
        module=draw(st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)),
        lineno=draw(st.integers(1, 100_000)),
        func=draw(st.from_regex(r"<module>|[a-z_][a-z0-9_]{0,15}", fullmatch=True)),
        process=draw(st.integers(1, 2**31)),
        thread_name=draw(st.from_regex(r"[A-Za-z][A-Za-z0-9_ ()-]{0,20}", fullmatch=True)),
        exception=exception,
        exception_text=exception_text,
        stack=stack,
    )  # fmt: skip


def staged(lines: list[bytes]) -> Line:
    """A record's lines as the collector stages them: a line, or an event of its lines."""
    return lines[0] if len(lines) == 1 else Event(tuple(lines))


def expected(
    generated: Attributes, record: logging.LogRecord, written: logging.Formatter, log_format: str
) -> dict[str, Any]:
    """The columns a record lands in: each attribute the format names, the rest null;
    ``exception`` what ``logging`` appended to the message (its traceback, its stack), after
    the newline it put between them."""
    text = written.format(record)
    head = written.formatMessage(record)  # the format's text, the message its end
    assert text.startswith(head) and head.endswith(generated.message)
    appended = text[len(head) :].removeprefix("\n")

    def named(placeholder: str, value: Any) -> Any:
        return value if f"%({placeholder})" in log_format else None

    if "%(asctime)" in log_format:
        stamp = EPOCH + timedelta(microseconds=generated.created_us // 1000 * 1000)
    elif "%(created)" in log_format:
        stamp = EPOCH + timedelta(microseconds=generated.created_us)
    else:
        stamp = DEFAULT_SEALED_AT
    return {
        "level": named("levelname", record.levelname),
        "logger": named("name", generated.name),
        "message": generated.message,
        "exception": appended or None,
        "filename": named("filename", f"{generated.module}.py"),
        "lineno": named("lineno", generated.lineno),
        "func_name": named("funcName", generated.func),
        "process": named("process", generated.process),
        "thread_name": named("threadName", generated.thread_name),
        "event_lines": text.count("\n") + 1,
        "cut": None,
        "event_time": stamp,
    }


def damaged(line: bytes, damage: str) -> tuple[bytes, RejectReason]:
    """The first line of a record damaged by ``damage``, and the reject it makes."""
    if damage == "invalid utf-8":
        return line + b"\xff", RejectReason.INVALID_UTF8
    if damage == "not a record":
        return b"#" + line, RejectReason.NO_MATCH
    date = damage.removeprefix("no such date ")
    return re.sub(rb"\d{4}-\d\d-\d\d", date.encode(), line, count=1), RejectReason.BAD_TIMESTAMP


columns = partial(format_columns, COLUMNS)


BAD_DATES = ("2026-13-01", "2026-02-30", "2026-04-31", "2026-00-10")


@SPARK_EXAMPLES
@given(
    log_format=st.sampled_from(sorted(FORMATS.values())),
    zone=st.sampled_from(ZONES),
    records=st.lists(
        st.tuples(
            attributes(),
            st.none()
            | st.sampled_from(
                ["invalid utf-8", "not a record", *(f"no such date {d}" for d in BAD_DATES)]
            ),
        ),
        min_size=1,
        max_size=30,
    ),
)
def test_a_record_logging_wrote_lands_as_its_attributes_and_a_damaged_one_is_a_reject(
    staging_rows: StagingRows,
    log_format: str,
    zone: str,
    records: list[tuple[Attributes, str | None]],
) -> None:
    assume(not any(ambiguous(generated.created_us, zone) for generated, _ in records))
    written = formatter(log_format, zone)
    items: list[Line] = []
    wanted: list[dict[str, Any] | str] = []
    for generated, damage in records:
        record = generated.record()
        text = written.format(record)
        assert not re.search(TRACEBACK_PATTERN, generated.message)  # the message's own end
        lines = text.encode().split(b"\n")
        if damage is not None and (
            "%(asctime)" in log_format or not damage.startswith("no such date")
        ):
            lines[0], reason = damaged(lines[0], damage)
            wanted.append(reason.value)
        else:
            wanted.append(expected(generated, record, written, log_format))
        items.append(staged(lines))

    rows = landed(staging_rows, items, "python_logging", log_format=log_format, timezone=zone)

    assert [columns(row) for row in rows] == wanted
