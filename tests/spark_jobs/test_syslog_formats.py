"""The ``syslog_rfc5424`` and ``syslog_rfc3164`` formats: messages ``logger`` sent over UDP and
TCP to a real rsyslogd, which wrote each into its files (RFC 5424, the traditional and the
high-precision file formats, and the messages as they came over the wire), landed into the
lake and read back, checked against what ``logger`` was told to send; lines that are no such
message rejected with their reason."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipeline_core.lake import LakeLocation, source_schema
from pipeline_core.staging_contract import checkpoint_dir
from pipeline_core.testing import table_rows
from spark_jobs.formats import RejectReason, parse
from spark_jobs.formats._syslog import SEVERITY_KEYWORDS
from spark_jobs.landing import land
from tests.spark_jobs.support import PIPELINE, ParsedOnce, StagingRows, landing, reason_of
from tests.support.staging import write_batch
from tests.support.syslog_programs import (
    Rsyslog,
    Sent,
    SyslogTools,
    Written,
    running_rsyslog,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HOSTNAME = socket.gethostname()
MESSAGES = (
    Sent(
        "m01", 'café ☕ 日本語, a ] and a " in the text', rfc5424=True, tcp=False,
        facility=19, severity=4, tag="myapp", pid="4711", msg_id="ID47",
        structured_data=(
            ("zoo@32473", (("tiger", 'hungry "very" ] x \\ y'), ("city", "Zürich ☀"))),
        ),
    ),
    Sent(
        "m02", "nil time, host, process and message id", rfc5424=True, tcp=True,
        facility=1, severity=6, tag="nils", nil_time_and_host=True,
    ),
    Sent(
        "m03", "sent as BSD syslog over TCP", rfc5424=False, tcp=True,
        facility=2, severity=3, tag="mailer", pid="4242",
    ),
    Sent(
        "m04", "ünïcode ☃ over UDP", rfc5424=False, tcp=False,
        facility=3, severity=7, tag="daemon-x",
    ),
    Sent(
        "m05", "two elements, a name twice", rfc5424=True, tcp=False,
        facility=16, severity=6, tag="app", pid="77",
        structured_data=(
            ("origin", (("ip", "192.0.2.1"), ("ip", "192.0.2.2"), ("software", "logger"))),
            ("a@1", (("x", ""),)),
        ),
    ),
    Sent(
        "m06", "after a byte order mark", rfc5424=True, tcp=True,
        facility=23, severity=7, tag="bom", bom=True,
    ),
    Sent(
        "m07", "an emergency", rfc5424=True, tcp=True,
        facility=4, severity=0, tag="sec", msg_id="ALARM",
    ),
)  # fmt: skip
"""What is sent: every header field and its NILVALUE, structured data with escapes,
unicode, both transports and both protocols."""


@dataclass(frozen=True)
class Syslog:
    """What rsyslogd wrote of :data:`MESSAGES`, and when."""

    rsyslog: Rsyslog
    written_at: datetime

    def lines(self, written: Written) -> list[bytes]:
        data = self.rsyslog.path(written).read_bytes()
        assert data.endswith(b"\n")
        return data[:-1].split(b"\n")


@pytest.fixture(scope="module")
def syslog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Syslog]:
    """rsyslogd's files once :data:`MESSAGES` were sent through it."""
    tools = SyslogTools.find()
    with running_rsyslog(tools, tmp_path_factory.mktemp("rsyslog")) as rsyslog:
        for message in MESSAGES:
            rsyslog.send(message)
        rsyslog.wait_written()
        yield Syslog(rsyslog, datetime.now(timezone.utc))


def by_token(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows by the token their message starts with (after a space or a byte order mark)."""
    found = {str(row["message"]).lstrip(" \ufeff").split(" ", 1)[0]: row for row in rows}
    assert len(found) == len(rows)
    return found


def landed_rows(
    spark: SparkSession,
    lake: LakeLocation,
    staging: Path,
    syslog: Syslog,
    written: Written,
    fmt: str,
) -> dict[str, dict[str, Any]]:
    """Every line of ``written`` landed as a source of ``fmt`` (sealed now; a BSD time read in
    UTC) and read back from its table, by token; none rejected."""
    lines = syslog.lines(written)
    write_batch(
        staging, PIPELINE, 1, "web-1", "syslog", fmt, lines, "00000000000005a1",
        sealed_at=syslog.written_at,
    )  # fmt: skip
    summary = land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 1)))
    assert summary["checkpoints"][0]["rows"] == {"syslog": len(lines)}, table_rows(
        lake, "_rejects"
    ).to_pylist()
    rows = table_rows(lake, "syslog").to_pylist()
    for row in rows:
        if fmt == "syslog_rfc5424":
            row["structured_data"] = dict(row["structured_data"])
    return by_token(rows)


def assert_sent_time(syslog: Syslog, stamp: datetime, whole_seconds: bool) -> None:
    """``stamp`` is within the sending (a BSD time to the second), before the files were
    read."""
    sent_from = syslog.rsyslog.sent_from
    assert sent_from is not None
    earliest = sent_from.replace(microsecond=0) if whole_seconds else sent_from
    assert earliest <= stamp.astimezone(timezone.utc) <= syslog.written_at
    if whole_seconds:
        assert stamp.microsecond == 0


@pytest.mark.metastore
@pytest.mark.sqlite_pass
@pytest.mark.timeout(300)
@pytest.mark.parametrize("written", [Written.RFC5424, Written.WIRE_RFC5424], ids=str)
def test_should_land_rfc5424_messages_with_the_fields_logger_sent(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path, syslog: Syslog, written: Written
) -> None:
    rows = landed_rows(spark, lake, tmp_path / "staging", syslog, written, "syslog_rfc5424")

    wire = written is Written.WIRE_RFC5424
    expected = [m for m in MESSAGES if m.rfc5424 or not wire]
    assert sorted(rows) == [m.token for m in expected]
    for message in expected:
        row = rows[message.token]
        assert (row["facility"], row["severity"]) == (message.facility, message.severity)
        assert row["level"] == SEVERITY_KEYWORDS[message.severity]
        assert row["version"] == 1
        assert row["hostname"] == (None if message.nil_time_and_host else HOSTNAME)
        assert (row["app_name"], row["proc_id"]) == (message.tag, message.pid)
        assert row["msg_id"] == message.msg_id
        # rsyslog keeps the space a BSD message has after its tag: its MSG starts with it.
        assert row["message"] == (message.message if message.rfc5424 else f" {message.message}")
        params = row["structured_data"]
        sent: dict[str, str] = {}
        for sd_id, pairs in message.structured_data:
            for name, value in pairs:
                sent.setdefault(f"{sd_id}.{name}", value)  # a repeated name: its first value
        assert {key: params.get(key) for key in sent} == sent
        # logger adds its element timeQuality unless told not to (notq).
        quality = {key for key in params if key.startswith("timeQuality.")}
        assert set(params) == set(sent) | quality
        told = message.rfc5424 and not message.nil_time_and_host
        assert ("timeQuality.tzKnown" in quality) == told
        if wire and message.nil_time_and_host:  # a "-" time: the seal time
            assert row["event_time"].astimezone(timezone.utc) == syslog.written_at
        else:
            assert_sent_time(syslog, row["event_time"], whole_seconds=not message.rfc5424)


@pytest.mark.metastore
@pytest.mark.sqlite_pass
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "written", [Written.TRADITIONAL, Written.FILE_FORMAT, Written.WIRE_RFC3164], ids=str
)
def test_should_land_bsd_lines_with_the_fields_logger_sent(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path, syslog: Syslog, written: Written
) -> None:
    rows = landed_rows(spark, lake, tmp_path / "staging", syslog, written, "syslog_rfc3164")

    wire = written is Written.WIRE_RFC3164
    expected = [m for m in MESSAGES if not (wire and m.rfc5424)]
    assert sorted(rows) == [m.token for m in expected]
    short_host = HOSTNAME.split(".")[0]
    for message in expected:
        row = rows[message.token]
        if wire:  # the <PRI> it came with
            assert (row["facility"], row["severity"]) == (message.facility, message.severity)
            assert row["level"] == SEVERITY_KEYWORDS[message.severity]
        else:
            assert (row["facility"], row["severity"], row["level"]) == (None, None, None)
        host = short_host if not message.rfc5424 else HOSTNAME
        assert row["hostname"] == (None if message.nil_time_and_host else host)
        assert (row["app_name"], row["proc_id"]) == (message.tag, message.pid)
        assert row["message"].lstrip("\ufeff") == message.message
        precise = written is Written.FILE_FORMAT and message.rfc5424
        assert_sent_time(syslog, row["event_time"], whole_seconds=not precise)


RFC5424_CASES: list[tuple[bytes, RejectReason | None]] = [
    (b'<34>1 2026-11-28T10:00:00.5+01:00 host app 12 ID [a@1 k="v"] fine', None),
    (b"<34>1 2026-11-28T10:00:00Z host app - - -", None),
    (b"not syslog at all", RejectReason.NO_MATCH),
    (b"<192>1 2026-11-28T10:00:00Z host app - - - over 191", RejectReason.NO_MATCH),
    (b'<34>1 2026-11-28T10:00:00Z host app - - [a@1 k="v] open quote', RejectReason.NO_MATCH),
    (b"<34>1 2026-11-28T10:00:00Z host app - - [a@1 k=v] unquoted", RejectReason.NO_MATCH),
    (b"<34>1 2026-11-28T10:00:00Z host app - - - ", None),
    (b"<34>1 2026-11-28T10:00:00Z host app - - -\xc2\x85", RejectReason.NO_MATCH),  # NEL
    (b"<34>1 2026-11-28T10:00:00Z host app - -  no structured data", RejectReason.NO_MATCH),
    (b"<34>1 2026-13-28T10:00:00Z host app - - - a 13th month", RejectReason.BAD_TIMESTAMP),
    (b"<34>1 2026-11-28T10:00:00 host app - - - no offset", RejectReason.BAD_TIMESTAMP),
    (b"<34>1 2026-11-28T10:00:00.1234567Z h a - - - 7 digits", RejectReason.BAD_TIMESTAMP),
    (b"<34>1 yesterday host app - - - what time", RejectReason.BAD_TIMESTAMP),
    (b"<34>1 2026-11-28T10:00:00Z host app - - - caf\xff", RejectReason.INVALID_UTF8),
]


@pytest.mark.parametrize(("line", "reason"), RFC5424_CASES)
def test_should_reject_what_is_no_rfc5424_message_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: RejectReason | None
) -> None:
    outcome = parsed_once.of(
        [case[0] for case in RFC5424_CASES], "syslog_rfc5424", source="syslog"
    )[line]

    assert reason_of(outcome) == (reason.value if reason else None)


def test_should_read_an_rfc5424_message_into_its_columns(staging_rows: StagingRows) -> None:
    line = (
        b"<165>1 2026-11-28T13:00:00.123456+01:00 mymachine.example.com evntslog - ID47 "
        b'[exampleSDID@32473 iut="3" eventSource="Appl\\"ication\\\\" eventID="10\\]11"]'
        b'[examplePriority@32473 class="high"] \xef\xbb\xbfAn application event\r'
    )
    parsed, rejects = parse(staging_rows([line], source="syslog"), "syslog_rfc5424")

    assert rejects.count() == 0
    (row,) = parsed.collect()
    assert row.asDict() | {"structured_data": None} == {
        "event_id": row["event_id"],
        "file_fingerprint": row["file_fingerprint"],
        "byte_offset": 0,
        "host": row["host"],
        "event_time": row["event_time"],
        "facility": 20,
        "severity": 5,
        "level": "notice",
        "version": 1,
        "hostname": "mymachine.example.com",
        "app_name": "evntslog",
        "proc_id": None,
        "msg_id": "ID47",
        "structured_data": None,
        "message": "An application event",
        "event_date": row["event_date"],
        "checkpoint_id": row["checkpoint_id"],
    }
    assert row["structured_data"] == {
        "exampleSDID@32473.iut": "3",
        "exampleSDID@32473.eventSource": 'Appl"ication\\',
        "exampleSDID@32473.eventID": "10]11",
        "examplePriority@32473.class": "high",
    }
    assert row["event_time"].astimezone(timezone.utc) == datetime(
        2026, 11, 28, 12, 0, 0, 123456, tzinfo=timezone.utc
    )


BSD_CASES: list[tuple[bytes, RejectReason | None]] = [
    (b"Nov 28 10:00:00 host app[12]: fine", None),
    (b"<13>Nov  8 10:00:00 host app: with a PRI", None),
    (b"2026-11-28T10:00:00.123456+01:00 host app[1]: RFC 3339", None),
    (b"not syslog at all", RejectReason.NO_MATCH),
    (b"<192>Nov 28 10:00:00 host app: over 191", RejectReason.NO_MATCH),
    (b"Nov 28 10:00 host app: no seconds", RejectReason.NO_MATCH),
    (b"Noe 28 10:00:00 host app: no month", RejectReason.BAD_TIMESTAMP),
    (b"Nov 31 10:00:00 host app: no 31st", RejectReason.BAD_TIMESTAMP),
    (b"Nov 28 24:00:00 host app: hour 24", RejectReason.BAD_TIMESTAMP),
    (b"2026-11-28T10:00:00 host app: no offset", RejectReason.BAD_TIMESTAMP),
    (b"Nov 28 10:00:00 host app: caf\xff", RejectReason.INVALID_UTF8),
]


@pytest.mark.parametrize(("line", "reason"), BSD_CASES)
def test_should_reject_what_is_no_bsd_line_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: RejectReason | None
) -> None:
    outcome = parsed_once.of([case[0] for case in BSD_CASES], "syslog_rfc3164", source="syslog")[
        line
    ]

    assert reason_of(outcome) == (reason.value if reason else None)


@pytest.mark.parametrize(
    ("line", "sealed_at", "local"),
    [
        # The seal time's year in the zone...
        (b"Nov 28 09:00:00 h a: x", datetime(2026, 11, 28, 12, 0), datetime(2026, 11, 28, 9)),
        # ... where it is already the next year ...
        (b"Jan  1 00:30:00 h a: x", datetime(2026, 12, 31, 16, 0), datetime(2027, 1, 1, 0, 30)),
        # ... or the year before for a later month.
        (b"Dec 31 23:59:59 h a: x", datetime(2027, 1, 1, 0, 0), datetime(2026, 12, 31, 23, 59, 59)),
        (b"Feb 29 12:00:00 h a: x", datetime(2028, 3, 1, 0, 0), datetime(2028, 2, 29, 12)),
    ],
)
def test_a_bsd_time_is_in_the_sources_zone_and_the_year_of_its_seal(
    staging_rows: StagingRows, line: bytes, sealed_at: datetime, local: datetime
) -> None:
    zone = "Asia/Tokyo"  # UTC+9, no daylight saving time
    sealed = sealed_at.replace(tzinfo=timezone.utc)
    parsed, rejects = parse(
        staging_rows([line], source="syslog", sealed_at=sealed), "syslog_rfc3164", timezone=zone
    )

    assert rejects.count() == 0
    (row,) = parsed.collect()
    assert row["event_time"].astimezone(timezone.utc) == (local - timedelta(hours=9)).replace(
        tzinfo=timezone.utc
    )


def test_february_29th_in_a_year_without_it_is_a_bad_timestamp(
    staging_rows: StagingRows,
) -> None:
    sealed = datetime(2027, 3, 1, tzinfo=timezone.utc)
    _, rejects = parse(
        staging_rows([b"Feb 29 12:00:00 h a: x"], source="syslog", sealed_at=sealed),
        "syslog_rfc3164",
    )

    assert [row["reason"] for row in rejects.collect()] == [RejectReason.BAD_TIMESTAMP.value]


@pytest.mark.metastore
@pytest.mark.sqlite_pass
def test_a_table_with_structured_data_lands_and_reads_back_its_map(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path
) -> None:
    lines = [
        b'<14>1 2026-11-22T09:00:00Z h app 1 - [a@1 k="v" k2="\\"q\\""][b@2 n="1"] one',
        b"<14>1 2026-11-22T09:00:01Z h app 1 - - two",
        b"a line that is not syslog",
    ]
    write_batch(
        tmp_path / "staging", PIPELINE, 4, "web-1", "events", "syslog_rfc5424", lines,
        "0000000000005424",
    )  # fmt: skip

    summary = land(spark, landing(lake, checkpoint_dir(tmp_path / "staging", PIPELINE, 4)))

    assert summary["checkpoints"][0]["rows"] == {"events": 2}
    assert summary["checkpoints"][0]["rejects"] == {"no_match": 1}
    rows = sorted(table_rows(lake, "events", 4).to_pylist(), key=lambda row: row["byte_offset"])
    assert [dict(row["structured_data"]) for row in rows] == [
        {"a@1.k": "v", "a@1.k2": '"q"', "b@2.n": "1"},
        {},
    ]
    assert [row["message"] for row in rows] == ["one", "two"]
    with_maps = source_schema("syslog_rfc5424").find_field("structured_data")
    assert str(with_maps.field_type) == "map<string, string>"
