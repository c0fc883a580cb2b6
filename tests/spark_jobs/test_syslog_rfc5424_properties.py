"""Properties of the ``syslog_rfc5424`` format: RFC 5424 messages generated from their fields
parse back to those fields; any line, a message damaged at random or bytes of any kind, is a
row or a reject with a reason, exactly as a reading of RFC 5424 written apart from the
parser's (:func:`reference`) says."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason
from spark_jobs.formats._syslog import SEVERITY_KEYWORDS
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, format_columns, landed
from tests.support.staging import DEFAULT_SEALED_AT
from tests.support.syslog_programs import sd_escaped

pytestmark = pytest.mark.spark

COLUMNS = (
    "facility", "severity", "level", "version", "hostname", "app_name", "proc_id", "msg_id",
    "structured_data", "message", "event_time",
)  # fmt: skip
PRINTABLE = "".join(chr(c) for c in range(33, 127))
SD_NAME_CHARS = PRINTABLE.translate({ord(c): None for c in '="]'})
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))
"""What a line can hold (the line ends are the staging's)."""


@dataclass(frozen=True)
class Message:
    """An RFC 5424 message's fields (None: the NILVALUE) and the line they make."""

    priority: int
    version: int
    time: datetime | None
    fraction_digits: int
    hostname: str | None
    app_name: str | None
    proc_id: str | None
    msg_id: str | None
    structured_data: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    message: str | None

    def line(self) -> bytes:
        def field(value: str | None) -> str:
            return "-" if value is None else value

        elements = "".join(
            f"[{sd_id}" + "".join(f' {n}="{sd_escaped(v)}"' for n, v in params) + "]"
            for sd_id, params in self.structured_data
        )
        header = [
            f"<{self.priority}>{self.version}",
            self.timestamp(),
            *(field(v) for v in (self.hostname, self.app_name, self.proc_id, self.msg_id)),
            elements or "-",
        ]
        text = " ".join(header) + ("" if self.message is None else f" {self.message}")
        return text.encode()

    def timestamp(self) -> str:
        if self.time is None:
            return "-"
        offset = self.time.utcoffset()
        assert offset is not None
        minutes = int(offset.total_seconds()) // 60
        zone = "Z"
        if minutes:
            sign = "-" if minutes < 0 else "+"
            zone = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        fraction = f"{self.time.microsecond:06d}"[: self.fraction_digits]
        return self.time.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + zone

    def expected(self) -> dict[str, Any]:
        """The columns the line should land as."""
        sd: dict[str, str] = {}
        for sd_id, params in self.structured_data:
            for name, value in params:
                sd.setdefault(f"{sd_id}.{name}", value)
        message = self.message
        if message is not None and message.startswith("\ufeff"):
            message = message[1:]
        kept = 10 ** (6 - self.fraction_digits)
        time = (
            DEFAULT_SEALED_AT
            if self.time is None
            else self.time.replace(microsecond=self.time.microsecond // kept * kept)
        )
        return {
            "facility": self.priority // 8,
            "severity": self.priority % 8,
            "level": SEVERITY_KEYWORDS[self.priority % 8],
            "version": self.version,
            "hostname": self.hostname,
            "app_name": self.app_name,
            "proc_id": self.proc_id,
            "msg_id": self.msg_id,
            "structured_data": sd,
            "message": message,
            "event_time": time.astimezone(timezone.utc),
        }


def header_field(longest: int) -> st.SearchStrategy[str | None]:
    """A header field: NIL, or printable US-ASCII of 1 to ``longest`` characters but ``-``."""
    text = st.text(st.sampled_from(PRINTABLE), min_size=1, max_size=longest)
    return st.none() | text.filter(lambda value: value != "-")


sd_name = st.text(st.sampled_from(SD_NAME_CHARS), min_size=1, max_size=32)
offsets = st.integers(-18 * 60, 18 * 60).map(lambda m: timezone(timedelta(minutes=m)))
times = st.datetimes(datetime(1970, 1, 1), datetime(2200, 12, 31), timezones=offsets)
messages = st.builds(
    Message,
    priority=st.integers(0, 191),
    version=st.integers(1, 999),
    time=st.none() | times,
    fraction_digits=st.integers(0, 6),
    hostname=header_field(255),
    app_name=header_field(48),
    proc_id=header_field(128),
    msg_id=header_field(32),
    structured_data=st.lists(
        st.tuples(sd_name, st.lists(st.tuples(sd_name, TEXT), max_size=4).map(tuple)),
        max_size=3,
        unique_by=lambda element: element[0],
    ).map(tuple),
    message=st.none()
    | st.builds(lambda bom, text: bom + text, st.sampled_from(["", "\ufeff"]), TEXT),
)


columns = partial(format_columns, COLUMNS)


@SPARK_EXAMPLES
@given(generated=st.lists(messages, min_size=1, max_size=40))
def test_a_message_made_of_fields_lands_as_those_fields(
    staging_rows: StagingRows, generated: list[Message]
) -> None:
    rows = landed(staging_rows, [message.line() for message in generated], "syslog_rfc5424")

    assert [columns(row) for row in rows] == [message.expected() for message in generated]


# -- any line: the reference reading ---------------------------------------------------------------

_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)


def reference(line: bytes) -> dict[str, Any] | str:
    """The columns of ``line`` as RFC 5424 reads it (with the format's documented choices), or
    the reason it is rejected: a parser by hand, sharing nothing with the format's."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return RejectReason.INVALID_UTF8.value
    no_match = RejectReason.NO_MATCH.value
    position = 0

    def take_word(longest: int | None = None) -> str | None:
        nonlocal position
        end = position
        while end < len(text) and 33 <= ord(text[end]) <= 126:
            end += 1
        word = text[position:end]
        if not word or (longest is not None and len(word) > longest):
            return None
        position = end
        return word

    def take(expected: str) -> bool:
        nonlocal position
        if text.startswith(expected, position):
            position += len(expected)
            return True
        return False

    if not take("<"):
        return no_match
    digits = re.match(r"[0-9]{1,3}(?=>)", text[position:])
    if digits is None:
        return no_match
    priority = int(digits.group())
    position += len(digits.group()) + 1
    version = re.match(r"[1-9][0-9]{0,2}(?= )", text[position:])
    if version is None:
        return no_match
    position += len(version.group()) + 1
    words = []
    for longest in (None, 255, 48, 128, 32):
        word = take_word(longest)
        if word is None or not take(" "):
            return no_match
        words.append(word)
    stamp, hostname, app_name, proc_id, msg_id = words
    sd = reference_structured_data(text, position)
    if sd is None:
        return no_match
    params, position = sd
    if position == len(text):
        message = None
    elif take(" "):
        message = text[position:].removeprefix("\ufeff")
    else:
        return no_match
    if priority > 191:
        return no_match
    time = reference_time(stamp)
    if time is None:
        return RejectReason.BAD_TIMESTAMP.value
    return {
        "facility": priority // 8,
        "severity": priority % 8,
        "level": SEVERITY_KEYWORDS[priority % 8],
        "version": int(version.group()),
        **{
            name: None if value == "-" else value
            for name, value in (
                ("hostname", hostname),
                ("app_name", app_name),
                ("proc_id", proc_id),
                ("msg_id", msg_id),
            )
        },
        "structured_data": params,
        "message": message,
        "event_time": time,
    }


def reference_structured_data(text: str, position: int) -> tuple[dict[str, str], int] | None:
    """The parameters of the structured data at ``position`` and where it ends; None when
    there is none there."""
    if text.startswith("-", position):
        return {}, position + 1
    params: dict[str, str] = {}
    elements = 0
    while text.startswith("[", position):
        position += 1
        sd_id, position = reference_sd_name(text, position)
        if sd_id is None:
            return None
        while text.startswith(" ", position):
            name, position = reference_sd_name(text, position + 1)
            if name is None or not text.startswith('="', position):
                return None
            position += 2
            value = []
            while position < len(text) and text[position] != '"':
                if text[position] == "\\":
                    if position + 1 == len(text):
                        return None
                    following = text[position + 1]
                    value.append(following if following in '"\\]' else "\\" + following)
                    position += 2
                else:
                    value.append(text[position])
                    position += 1
            if position == len(text):
                return None
            position += 1
            params.setdefault(f"{sd_id}.{name}", "".join(value))
        if not text.startswith("]", position):
            return None
        position += 1
        elements += 1
    return (params, position) if elements else None


def reference_sd_name(text: str, position: int) -> tuple[str | None, int]:
    end = position
    while end < len(text) and text[end] in SD_NAME_CHARS and end - position < 32:
        end += 1
    if end == position or (end < len(text) and text[end] in SD_NAME_CHARS):
        return None, position
    return text[position:end], end


def reference_time(stamp: str) -> datetime | None:
    """An RFC 5424 TIMESTAMP as an instant (the seal time for ``-``); None when it is none."""
    if stamp == "-":
        return DEFAULT_SEALED_AT
    found = _TIME.fullmatch(stamp)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction, utc, sign, zone_h, zone_m = found.groups()
    zone_minutes = 0 if utc else int(zone_h) * 60 + int(zone_m)
    if not utc and (int(zone_m) > 59 or zone_minutes > 18 * 60):
        return None
    try:
        local = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second),
            int((fraction or "0").ljust(6, "0")),
        )  # fmt: skip
    except ValueError:  # a 13th month, a 31st of November, hour 24, year 0
        return None
    offset = timedelta(minutes=-zone_minutes if sign == "-" else zone_minutes)
    return local.replace(tzinfo=timezone(offset)).astimezone(timezone.utc)


DAMAGE = st.sampled_from(list(' -[]"\\=<>T:Z.+0123456789\ufeffé\x00\x85'))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A generated message with characters deleted, replaced or inserted at random places,
    or bytes of any kind."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=80).filter(lambda b: b"\n" not in b and b"\r" not in b))
    text = draw(messages).line().decode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "replace", "insert"]))
        char = draw(DAMAGE)
        if action == "delete":
            text = text[:at] + text[at + 1 :]
        elif action == "replace":
            text = text[:at] + char + text[at + 1 :]
        else:
            text = text[:at] + char + text[at:]
    return text.encode()


@SPARK_EXAMPLES
@given(lines=st.lists(damaged(), min_size=1, max_size=40))
def test_any_line_is_a_row_or_a_reject_with_its_reason_as_rfc5424_reads_it(
    staging_rows: StagingRows, lines: list[bytes]
) -> None:
    rows = landed(staging_rows, lines, "syslog_rfc5424")

    assert [columns(row) for row in rows] == [reference(line) for line in lines]
