"""The source-format parsers, on staging rows read from part files as the landing job reads
them."""

from __future__ import annotations

from datetime import datetime
from random import Random
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.staging_contract import EventCut
from spark_jobs.formats import REJECT_COLUMNS, NginxScanner, RejectReason, nginx_scanner, parse
from tests.spark_jobs.support import CHECKPOINT_ID, FINGERPRINT, HOST, StagingRows
from tests.support.staging import (
    DEFAULT_SEALED_AT,
    Event,
    Line,
    LongLine,
    line_offsets,
)

pytestmark = pytest.mark.spark


SEALED_AT_TEXT = "2026-11-22 10:00:00.123456"
COLLECTED_SEALED_AT = datetime.fromtimestamp(DEFAULT_SEALED_AT.timestamp())
"""``DEFAULT_SEALED_AT`` as ``collect()`` returns it: naive, in the process's local time."""
UA = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0"

NGINX_GOOD = [
    b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET /index.html?q=1 HTTP/1.1" 200 612 '
    b'"-" "' + UA + b'"',
    b'198.51.100.23 - alice [22/Nov/2026:11:30:00 +0100] "POST /api/v1/items HTTP/2.0" 201 48 '
    b'"https://example.com/form" "curl/8.5.0"',
    b'2001:db8::1 - - [21/Nov/2026:23:59:59 -0500] "-" 400 0 "-" "-"',
    b'192.0.2.1 - - [22/Nov/2026:10:00:02 +0000] "\\x16\\x03\\x01\\x00\\xFC\\x01" 400 157 "-" "-"',
    b'192.0.2.9 - - [22/Nov/2026:10:00:03 +0000] "GET /a b HTTP/1.1" 400 0 "-" "-"',
    b'192.0.2.10 - - [22/Nov/2026:10:00:04 +0000] "GET / HTTP/1.1" 304 0 "-" "'
    + b"A" * 100 * 1024
    + b'"',
    b'192.0.2.11 - - [22/Nov/2026:10:00:05 +0000] "GET /crlf HTTP/1.1" 200 5 "-" "-"\r',
    b'192.0.2.12 - - [22/Nov/2026:10:00:06 +0000] "GET /caf\xc3\xa9 HTTP/1.1" 200 - "" ""',
]
NGINX_BAD = [
    (b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET /\xff\xfe HTTP/1.1" 200 1 "-" "-"',
     RejectReason.INVALID_UTF8),
    (NGINX_GOOD[7][: NGINX_GOOD[7].index(b"\xc3") + 1], RejectReason.INVALID_UTF8),
    (b"garbage \xff line", RejectReason.INVALID_UTF8),
    (b"\x00" * 64, RejectReason.NO_MATCH),
    (b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET /\x00 HTTP/1.1" 200 1 "-" "-"',
     RejectReason.NO_MATCH),
    (b"x" * 100 * 1024, RejectReason.NO_MATCH),
    (NGINX_GOOD[0][:70], RejectReason.NO_MATCH),
    (b"hello world", RejectReason.NO_MATCH),
    (b"", RejectReason.NO_MATCH),
    (b'203.0.113.7 - - [32/Nov/2026:10:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
     RejectReason.BAD_TIMESTAMP),
    (b'203.0.113.7 - - [yesterday] "GET / HTTP/1.1" 200 1 "-" "-"', RejectReason.BAD_TIMESTAMP),
    (b'203.0.113.7 - - [22/Nov/2026:10:00:01 +9999] "GET / HTTP/1.1" 200 1 "-" "-"',
     RejectReason.BAD_TIMESTAMP),
    (b'203.0.113.7 - - [22/Nov/-2026:10:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
     RejectReason.BAD_TIMESTAMP),
    (b'203.0.113.7 - - [22/Nov/0000:10:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
     RejectReason.BAD_TIMESTAMP),
]  # fmt: skip

NGINX_SCHEMA = {
    "event_id": "string",
    "file_fingerprint": "string",
    "byte_offset": "bigint",
    "host": "string",
    "event_time": "timestamp",
    "remote_addr": "string",
    "remote_user": "string",
    "request": "string",
    "method": "string",
    "path": "string",
    "protocol": "string",
    "status": "int",
    "body_bytes_sent": "bigint",
    "http_referer": "string",
    "http_user_agent": "string",
    "event_date": "date",
    "checkpoint_id": "bigint",
}
COMMON = ["event_id", "file_fingerprint", "byte_offset", "host", "event_time"]
REJECT_SCHEMA = {
    "event_id": "string",
    "file_fingerprint": "string",
    "byte_offset": "bigint",
    "host": "string",
    "source": "string",
    "raw_line": "string",
    "line_bytes": "bigint",
    "reason": "string",
    "sealed_at": "timestamp",
    "checkpoint_id": "bigint",
}


@pytest.fixture(params=list(NginxScanner), ids=lambda scanner: scanner.value)
def scanner(request: pytest.FixtureRequest, spark: SparkSession) -> NginxScanner:
    """Each way of splitting nginx lines into fields; the suite's session has the Java one."""
    assert nginx_scanner(spark) is NginxScanner.JVM
    return NginxScanner(request.param)


def schema_of(frame: DataFrame) -> dict[str, str]:
    return {field.name: field.dataType.simpleString() for field in frame.schema.fields}


def by_offset(frame: DataFrame, *columns: str) -> dict[int, dict[str, Any]]:
    """Rows keyed by byte offset; timestamps and dates as UTC text."""
    texts = [
        F.col(name).cast("string").alias(name)
        if name in ("event_time", "event_date")
        else F.col(name)
        for name in columns
    ]
    rows = frame.select("byte_offset", *texts).collect()
    return {row["byte_offset"]: row.asDict() for row in rows}


def reasons(rejects: DataFrame) -> dict[int, str]:
    return {row["byte_offset"]: row["reason"] for row in rejects.collect()}


def planted(
    good: list[bytes], bad: list[tuple[bytes, RejectReason]]
) -> tuple[list[bytes], dict[int, str], list[int]]:
    """Interleave good and bad lines; return the lines, the expected reason by offset and the
    offsets of the good lines."""
    lines: list[bytes] = []
    kinds: list[RejectReason | None] = []
    for index in range(max(len(good), len(bad))):
        if index < len(good):
            lines.append(good[index])
            kinds.append(None)
        if index < len(bad):
            lines.append(bad[index][0])
            kinds.append(bad[index][1])
    offsets = line_offsets(lines, 0)
    expected = {off: kind.value for off, kind in zip(offsets, kinds, strict=True) if kind}
    good_offsets = [off for off, kind in zip(offsets, kinds, strict=True) if kind is None]
    return lines, expected, good_offsets


# ---------------------------------------------------------------------------- nginx_combined


def test_nginx_combined_columns_and_types(staging_rows: StagingRows, scanner: NginxScanner) -> None:
    parsed, rejects = parse(staging_rows(NGINX_GOOD), "nginx_combined", scanner=scanner)

    assert schema_of(parsed) == NGINX_SCHEMA
    assert schema_of(rejects) == REJECT_SCHEMA
    assert rejects.count() == 0
    offsets = line_offsets(NGINX_GOOD, 0)
    rows = by_offset(parsed, *NGINX_SCHEMA)
    assert sorted(rows) == offsets

    first = rows[offsets[0]]
    assert first == {
        "byte_offset": 0,
        "event_id": f"{FINGERPRINT}:0",
        "file_fingerprint": FINGERPRINT,
        "host": HOST,
        "event_time": "2026-11-22 10:00:01",
        "remote_addr": "203.0.113.7",
        "remote_user": None,
        "request": "GET /index.html?q=1 HTTP/1.1",
        "method": "GET",
        "path": "/index.html?q=1",
        "protocol": "HTTP/1.1",
        "status": 200,
        "body_bytes_sent": 612,
        "http_referer": "-",
        "http_user_agent": UA.decode(),
        "event_date": "2026-11-22",
        "checkpoint_id": CHECKPOINT_ID,
    }
    second = rows[offsets[1]]
    assert second["remote_user"] == "alice"
    assert second["event_time"] == "2026-11-22 10:30:00"  # +0100
    assert (second["method"], second["status"], second["body_bytes_sent"]) == ("POST", 201, 48)
    assert second["http_referer"] == "https://example.com/form"


def test_nginx_combined_event_date_is_the_utc_date(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    parsed, _ = parse(staging_rows(NGINX_GOOD), "nginx_combined", scanner=scanner)
    row = by_offset(parsed, "event_time", "event_date")[line_offsets(NGINX_GOOD, 0)[2]]

    assert row["event_time"] == "2026-11-22 04:59:59"  # 23:59:59 -0500
    assert row["event_date"] == "2026-11-22"


def test_nginx_combined_request_that_is_not_three_words(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    parsed, _ = parse(staging_rows(NGINX_GOOD), "nginx_combined", scanner=scanner)
    rows = by_offset(parsed, "request", "method", "path", "protocol", "status")
    offsets = line_offsets(NGINX_GOOD, 0)

    for index, request in [
        (2, "-"),
        (3, "\\x16\\x03\\x01\\x00\\xFC\\x01"),
        (4, "GET /a b HTTP/1.1"),
    ]:
        row = rows[offsets[index]]
        assert row["request"] == request
        assert (row["method"], row["path"], row["protocol"]) == (None, None, None)
        assert row["status"] == 400


def test_nginx_combined_long_crlf_and_utf8_lines(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    parsed, _ = parse(staging_rows(NGINX_GOOD), "nginx_combined", scanner=scanner)
    rows = by_offset(parsed, "path", "http_user_agent", "http_referer", "body_bytes_sent")
    offsets = line_offsets(NGINX_GOOD, 0)

    assert len(rows[offsets[5]]["http_user_agent"]) == 100 * 1024
    assert rows[offsets[6]]["path"] == "/crlf"
    assert rows[offsets[6]]["http_user_agent"] == "-"
    assert rows[offsets[7]]["path"] == "/café"
    assert rows[offsets[7]]["body_bytes_sent"] is None
    assert (rows[offsets[7]]["http_referer"], rows[offsets[7]]["http_user_agent"]) == ("", "")


def test_nginx_combined_reject_reasons(staging_rows: StagingRows, scanner: NginxScanner) -> None:
    lines, expected, good = planted(NGINX_GOOD, NGINX_BAD)
    parsed, rejects = parse(staging_rows(lines), "nginx_combined", scanner=scanner)

    assert reasons(rejects) == expected
    assert sorted(row["byte_offset"] for row in parsed.select("byte_offset").collect()) == good
    assert parsed.count() + rejects.count() == len(lines)


def test_rejects_carry_the_line_with_invalid_utf8_replaced(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    line = b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET /\xff HTTP/1.1" 200 1 "-" "-"'
    _, rejects = parse(
        staging_rows([b"ok", line], source="edge"), "nginx_combined", scanner=scanner
    )
    rows = {row["byte_offset"]: row.asDict() for row in rejects.collect()}

    assert rows[3] == {
        "event_id": f"{FINGERPRINT}:3",
        "file_fingerprint": FINGERPRINT,
        "byte_offset": 3,
        "host": HOST,
        "source": "edge",
        "raw_line": line.decode("utf-8", errors="replace"),
        "line_bytes": len(line),
        "reason": "invalid_utf8",
        "sealed_at": COLLECTED_SEALED_AT,
        "checkpoint_id": CHECKPOINT_ID,
    }
    assert rows[0]["reason"] == "no_match"
    assert list(rejects.columns) == list(REJECT_COLUMNS)


def test_nginx_combined_parses_each_line_once(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    """The reason filters must not copy the scan into a pushed-down filter."""
    parsed, rejects = parse(staging_rows(NGINX_GOOD), "nginx_combined", scanner=scanner)
    scan = "regexp_replace(" if scanner is NginxScanner.REGEX else "sluice_nginx_fields("

    for frame in (parsed, rejects):
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert plan.count(scan) == 1, plan
        assert plan.count("gettimestamp(") == 1, plan


def test_both_nginx_scanners_split_and_reject_every_line_alike(staging_rows: StagingRows) -> None:
    """Lines near the format's edges, and random bytes planted into good lines: the Java
    scanner decides every one as the pattern does, to the same fields."""
    lines = [*NGINX_GOOD, *(line for line, _ in NGINX_BAD), *nginx_edge_lines()]
    rows = staging_rows(lines)
    results = {}
    for scanner in NginxScanner:
        parsed, rejects = parse(rows, "nginx_combined", scanner=scanner)
        results[scanner] = (
            sorted(tuple(row) for row in parsed.drop("event_date").collect()),  # times valid
            reasons(rejects),
        )

    jvm, regex = results[NginxScanner.JVM], results[NginxScanner.REGEX]
    assert len(jvm[0]) > len(NGINX_GOOD) and len(set(jvm[1].values())) == 3  # both kinds occur
    assert jvm[1] == regex[1]
    assert jvm[0] == regex[0]


def nginx_edge_lines(count: int = 3000, seed: int = 20) -> list[bytes]:
    """Good lines cut short, and with a byte replaced or inserted: quotes, brackets, spaces,
    digits, dashes, control bytes, a CR, multi-byte UTF-8."""
    random = Random(seed)
    pieces = [
        b'"',
        b"[",
        b"]",
        b" ",
        b"  ",
        b"-",
        b"0",
        b"12",
        b"\x00",
        b"\x01",
        b"\x1f",
        b"\x7f",
        b"\t",
        b"\r",
        b"\xc3\xa9",
        b"\xf0\x9f\x99\x82",
        b"a",
        b'" "',
        b"",
    ]
    bases = [line for line in NGINX_GOOD if len(line) < 1000]
    edges: list[bytes] = []
    for _ in range(count):
        line = random.choice(bases)
        at = random.randrange(len(line) + 1)
        kind = random.randrange(3)
        if kind == 0:
            edges.append(line[:at])
        else:
            piece = random.choice(pieces)
            edges.append(line[:at] + piece + line[at + (kind == 1) :])
    return edges


# ---------------------------------------------------------------------------- json_lines

JSON_GOOD = [
    b'{"time": "2026-11-22T09:15:00.5+01:00", "level": "info", "msg": "started"}',
    b'{"time": 1700000000.25, "level": "debug", "nested": {"a": [1, 2]}}',
    b'{"time": "1700000000", "msg": "numeric string"}',
    b'{"level": "warn", "msg": "no time"}',
    b'  {"time": "2026-11-21 23:00:00", "msg": "naive, padded"}  ',
    b'{"msg": "caf\xc3\xa9", "time": null}',
    b"{}",
]
JSON_BAD = [
    (b"[1, 2, 3]", RejectReason.INVALID_JSON),
    (b"not json at all", RejectReason.INVALID_JSON),
    (b'{"time": "2026-11-22T10:00:00Z", "msg": "trunc', RejectReason.INVALID_JSON),
    (b'{"msg": "\xff\xfe"}', RejectReason.INVALID_UTF8),
    (b'{"msg": "a\x00b"}', RejectReason.INVALID_JSON),
    (b"\x00" * 16, RejectReason.INVALID_JSON),
    (b"", RejectReason.INVALID_JSON),
    (b'{"a": 1} trailing', RejectReason.INVALID_JSON),
    (b'"just a string"', RejectReason.INVALID_JSON),
    (b"null", RejectReason.INVALID_JSON),
    (b"x" * 100 * 1024, RejectReason.INVALID_JSON),
    (b'{"time": "not a time"}', RejectReason.BAD_TIMESTAMP),
    (b'{"time": 1e30}', RejectReason.BAD_TIMESTAMP),
]


def test_json_lines_columns_types_and_times(staging_rows: StagingRows) -> None:
    parsed, rejects = parse(staging_rows(JSON_GOOD, source="app"), "json_lines")

    assert schema_of(parsed) == {
        **{name: NGINX_SCHEMA[name] for name in COMMON},
        "payload": "string",
        "event_date": "date",
        "checkpoint_id": "bigint",
    }
    assert rejects.count() == 0
    offsets = line_offsets(JSON_GOOD, 0)
    rows = by_offset(parsed, "event_time", "event_date", "payload")
    times = [rows[offset]["event_time"] for offset in offsets]
    assert times == [
        "2026-11-22 08:15:00.5",
        "2023-11-14 22:13:20.25",
        "2023-11-14 22:13:20",
        SEALED_AT_TEXT,  # missing
        "2026-11-21 23:00:00",  # no offset: the session time zone, UTC
        SEALED_AT_TEXT,  # null
        SEALED_AT_TEXT,  # empty object
    ]
    assert rows[offsets[1]]["payload"] == JSON_GOOD[1].decode()
    assert rows[offsets[1]]["event_date"] == "2023-11-14"
    assert rows[offsets[5]]["payload"] == '{"msg": "café", "time": null}'


def test_json_lines_custom_time_field(staging_rows: StagingRows) -> None:
    lines = [
        b'{"@timestamp": "2026-01-02T03:04:05Z", "time": "1999-01-01T00:00:00Z"}',
        b'{"time": 5}',
        b'{"@timestamp": "soon", "time": 5}',
    ]
    offsets = line_offsets(lines, 0)
    parsed, rejects = parse(
        staging_rows(lines, source="app"), "json_lines", time_field="@timestamp"
    )
    rows = by_offset(parsed, "event_time")

    assert [rows[offset]["event_time"] for offset in offsets[:2]] == [
        "2026-01-02 03:04:05",
        SEALED_AT_TEXT,
    ]
    assert reasons(rejects) == {offsets[2]: "bad_timestamp"}


def test_json_lines_reject_a_present_but_unreadable_time_as_bad_timestamp(
    staging_rows: StagingRows,
) -> None:
    lines = [
        b'{"time": "not a date", "msg": "unreadable"}',
        b'{"time": "2026-13-45T99:00:00Z"}',
        b'{"time": 1e30}',
        b'{"time": -1e30}',
        b'{"time": true}',
        b'{"time": {"seconds": 5}}',
        b'{"time": [1700000000]}',
        b'{"time": ""}',
        b'{"msg": "no time field"}',
        b'{"time": null}',
        b'{"time": 1700000000}',
    ]
    offsets = line_offsets(lines, 0)

    parsed, rejects = parse(staging_rows(lines, source="app"), "json_lines")

    assert reasons(rejects) == {offset: "bad_timestamp" for offset in offsets[:8]}
    rows = by_offset(parsed, "event_time")
    assert {offset: row["event_time"] for offset, row in rows.items()} == {
        offsets[8]: SEALED_AT_TEXT,  # missing: the batch's seal time
        offsets[9]: SEALED_AT_TEXT,  # null: as missing
        offsets[10]: "2023-11-14 22:13:20",
    }
    raw = {row["byte_offset"]: row["raw_line"] for row in rejects.collect()}
    assert raw[offsets[0]] == lines[0].decode()


def test_json_lines_reject_reasons(staging_rows: StagingRows) -> None:
    lines, expected, good = planted(JSON_GOOD, JSON_BAD)
    parsed, rejects = parse(staging_rows(lines, source="app"), "json_lines")

    assert reasons(rejects) == expected
    assert sorted(row["byte_offset"] for row in parsed.select("byte_offset").collect()) == good
    assert schema_of(rejects) == REJECT_SCHEMA


def test_json_lines_accept_a_crlf_line_end_and_keep_it_out_of_the_payload(
    staging_rows: StagingRows,
) -> None:
    lines = [
        b'{"time": 1700000000, "msg": "crlf"}\r',
        b'{"msg": "spaces, tab, then crlf"} \t\r',
        b'{"msg": "lf"}',
        b'{"a": 1}\r trailing',
        b"\r",
    ]
    parsed, rejects = parse(staging_rows(lines, source="app"), "json_lines")

    offsets = line_offsets(lines, 0)
    assert reasons(rejects) == {offsets[3]: "invalid_json", offsets[4]: "invalid_json"}
    rows = by_offset(parsed, "payload", "event_time")
    assert [rows[offset]["payload"] for offset in offsets[:3]] == [
        '{"time": 1700000000, "msg": "crlf"}',
        '{"msg": "spaces, tab, then crlf"} \t',
        '{"msg": "lf"}',
    ]
    assert rows[offsets[0]]["event_time"] == "2023-11-14 22:13:20"


def test_json_lines_parses_each_line_once(staging_rows: StagingRows) -> None:
    parsed, rejects = parse(staging_rows(JSON_GOOD, source="app"), "json_lines")

    for frame in (parsed, rejects):
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert plan.count("from_json(") == 1, plan


# ---------------------------------------------------------------------------- raw


def test_raw_keeps_every_line(staging_rows: StagingRows) -> None:
    lines = [b"plain text", b"bad \xff bytes", b"\x00\x01", b"", b"y" * 100 * 1024]
    parsed, rejects = parse(staging_rows(lines, source="misc"), "raw")

    assert schema_of(parsed) == {
        **{name: NGINX_SCHEMA[name] for name in COMMON},
        "message": "string",
        "event_lines": "int",
        "cut": "string",
        "event_date": "date",
        "checkpoint_id": "bigint",
    }
    assert rejects.count() == 0
    rows = by_offset(parsed, "message", "event_lines", "cut", "event_time", "event_date")
    offsets = line_offsets(lines, 0)
    assert [rows[offset]["message"] for offset in offsets] == [
        line.decode("utf-8", errors="replace") for line in lines
    ]
    assert {(row["event_lines"], row["cut"]) for row in rows.values()} == {(1, None)}
    assert {row["event_time"] for row in rows.values()} == {SEALED_AT_TEXT}
    assert {row["event_date"] for row in rows.values()} == {"2026-11-22"}


def test_raw_keeps_a_crlf_lines_text_without_its_cr(staging_rows: StagingRows) -> None:
    lines = [b"windows line\r", b"\r", b"inner \r kept", b"two\r\r", b"bad \xff\r"]
    parsed, rejects = parse(staging_rows(lines, source="misc"), "raw")

    rows = by_offset(parsed, "message")
    assert [rows[offset]["message"] for offset in line_offsets(lines, 0)] == [
        "windows line",
        "",
        "inner \r kept",
        "two\r",
        "bad \ufffd",
    ]
    assert rejects.count() == 0


PYTHON_TRACEBACK = (
    b"2026-11-22 10:00:00,123 ERROR worker: task failed",
    b"Traceback (most recent call last):",
    b'  File "/srv/app/w\xc3\xa9rker.py", line 42, in run',
    b"    result = handle(item)",
    b"KeyError: 'id' \xff",
)


def test_raw_keeps_a_multiline_event_whole_with_its_lines_and_cut(
    staging_rows: StagingRows,
) -> None:
    items: list[Line] = [
        b"before",
        Event(PYTHON_TRACEBACK),
        Event((b"  continued head", b"  more"), EventCut.HEADLESS),
        Event((b"single but cut",), EventCut.LINES),
        Event((b"Caused by: x", b"\tat y", b""), EventCut.BYTES),  # its last line is empty
        b"after",
    ]
    parsed, rejects = parse(staging_rows(items, source="misc"), "raw")

    assert rejects.count() == 0
    rows = by_offset(parsed, "message", "event_lines", "cut", "event_id")
    offsets = line_offsets(items, 0)
    assert [tuple(rows[offset].values())[1:4] for offset in offsets] == [
        ("before", 1, None),
        (
            "2026-11-22 10:00:00,123 ERROR worker: task failed\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/app/wérker.py", line 42, in run\n'
            "    result = handle(item)\n"
            "KeyError: 'id' \ufffd",
            5,
            None,
        ),
        ("  continued head\n  more", 2, "headless"),
        ("single but cut", 1, "lines"),
        ("Caused by: x\n\tat y\n", 3, "bytes"),
        ("after", 1, None),
    ]
    assert rows[offsets[1]]["event_id"] == f"{FINGERPRINT}:{offsets[1]}" == f"{FINGERPRINT}:7"


def test_raw_drops_the_cr_of_each_crlf_line_end_of_an_event(staging_rows: StagingRows) -> None:
    items: list[Line] = [
        Event((b"java.lang.Error: boom\r", b"\tat a.B.c(B.java:1)\r", b"\t... 2 more\r")),
        Event((b"inner \r kept\r", b"two\r\r", b"\r")),
        Event((b"no cr", b"last cr\r")),
        b"one line\r",
    ]
    parsed, _ = parse(staging_rows(items, source="misc"), "raw")

    rows = by_offset(parsed, "message")
    assert [rows[offset]["message"] for offset in line_offsets(items, 0)] == [
        "java.lang.Error: boom\n\tat a.B.c(B.java:1)\n\t... 2 more",
        "inner \r kept\ntwo\r\n",
        "no cr\nlast cr",
        "one line",
    ]


def test_json_lines_parse_a_pretty_printed_object_as_one_payload(
    staging_rows: StagingRows,
) -> None:
    items: list[Line] = [
        Event((b"{", b'  "time": 1700000000,', b'  "msg": "pretty"', b"}")),
        Event((b"{\r", b'  "nested": {"a": [1,\r', b"    2]}\r", b"}\r")),
        Event((b'{"msg": "not closed",', b'  "x": 1')),
        b'{"msg": "one line"}',
    ]
    parsed, rejects = parse(staging_rows(items, source="app"), "json_lines")

    offsets = line_offsets(items, 0)
    rows = by_offset(parsed, "payload", "event_time")
    assert {offset: tuple(row.values())[1:] for offset, row in rows.items()} == {
        offsets[0]: (
            '{\n  "time": 1700000000,\n  "msg": "pretty"\n}',
            "2023-11-14 22:13:20",
        ),
        offsets[1]: ('{\n  "nested": {"a": [1,\n    2]}\n}', SEALED_AT_TEXT),
        offsets[3]: ('{"msg": "one line"}', SEALED_AT_TEXT),
    }
    assert [(row["byte_offset"], row["reason"], row["raw_line"]) for row in rejects.collect()] == [
        (offsets[2], "invalid_json", '{"msg": "not closed",\n  "x": 1')
    ]


def test_a_multiline_event_is_one_nginx_reject_holding_the_whole_event(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    stack = Event((NGINX_GOOD[0], b"  continued", b"\tat x \xff"))
    items: list[Line] = [NGINX_GOOD[0], stack, Event((NGINX_GOOD[1], NGINX_GOOD[2]))]
    parsed, rejects = parse(staging_rows(items), "nginx_combined", scanner=scanner)

    offsets = line_offsets(items, 0)
    assert [row["byte_offset"] for row in parsed.select("byte_offset").collect()] == [offsets[0]]
    found = {row["byte_offset"]: row.asDict() for row in rejects.collect()}
    assert {offset: (row["reason"], row["line_bytes"]) for offset, row in found.items()} == {
        offsets[1]: ("invalid_utf8", len(stack.text)),
        offsets[2]: ("no_match", len(NGINX_GOOD[1]) + 1 + len(NGINX_GOOD[2])),
    }
    assert found[offsets[1]]["raw_line"] == stack.text.decode(errors="replace")
    assert found[offsets[2]]["raw_line"] == (NGINX_GOOD[1] + b"\n" + NGINX_GOOD[2]).decode()
    assert found[offsets[2]]["event_id"] == f"{FINGERPRINT}:{offsets[2]}"


def test_nginx_combined_rejects_keep_a_crlf_lines_cr(
    staging_rows: StagingRows, scanner: NginxScanner
) -> None:
    _, rejects = parse(staging_rows([b"not nginx\r"]), "nginx_combined", scanner=scanner)

    assert [(row["raw_line"], row["line_bytes"]) for row in rejects.collect()] == [
        ("not nginx\r", 10)
    ]


# ---------------------------------------------------------------------------- over-long lines

PREFIX_THAT_PARSES = {
    "nginx_combined": NGINX_GOOD[0],
    "json_lines": b'{"time": 1700000000}',
    "raw": b"plain text",
}


@pytest.mark.parametrize("fmt", sorted(PREFIX_THAT_PARSES))
def test_an_over_long_line_is_one_line_too_long_reject_in_every_format(
    staging_rows: StagingRows, fmt: str
) -> None:
    good = PREFIX_THAT_PARSES[fmt]
    lines: list[Line] = [
        good,
        LongLine(good, 5_000_000),
        LongLine(b"cut in a character \xc3", 3_000_000),
        good,
    ]
    parsed, rejects = parse(staging_rows(lines, source="edge"), fmt)

    offsets = line_offsets(lines, 0)
    assert sorted(row["byte_offset"] for row in parsed.select("byte_offset").collect()) == [
        offsets[0],
        offsets[3],
    ]
    rows = {row["byte_offset"]: row.asDict() for row in rejects.collect()}
    assert sorted(rows) == [offsets[1], offsets[2]]
    assert rows[offsets[1]] == {
        "event_id": f"{FINGERPRINT}:{offsets[1]}",
        "file_fingerprint": FINGERPRINT,
        "byte_offset": offsets[1],
        "host": HOST,
        "source": "edge",
        "raw_line": good.decode(),
        "line_bytes": 5_000_000,
        "reason": "line_too_long",
        "sealed_at": COLLECTED_SEALED_AT,
        "checkpoint_id": CHECKPOINT_ID,
    }
    assert rows[offsets[2]]["raw_line"] == "cut in a character \ufffd"
    assert (rows[offsets[2]]["reason"], rows[offsets[2]]["line_bytes"]) == (
        "line_too_long",
        3_000_000,
    )


def test_unknown_format_is_refused(staging_rows: StagingRows) -> None:
    with pytest.raises(ValueError, match="syslog"):
        parse(staging_rows([b"x"]), "syslog")
