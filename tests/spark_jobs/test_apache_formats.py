"""``apache_common`` and ``apache_combined``: a real Apache httpd writes both logs for the same
requests, read back into typed columns and checked against the requests that were made; and
generated lines, escaped as Apache escapes, parse back to the values they were written from."""

from __future__ import annotations

import functools
import http.client
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline_core.testing import wait_until
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import StagingRows
from tests.support.apache import COMBINED, COMMON, running_apache
from tests.support.staging import line_offsets

pytestmark = pytest.mark.spark

AGENT = 'agent "quoted" Zürich\\'
REQUESTS = [
    # method, target, headers, status, body bytes as %b writes them
    ("GET", "/index.html", {"User-Agent": "curl/8.5"}, 200, "3"),
    ("HEAD", "/index.html", {}, 200, "-"),
    ("GET", '/missing?q="1"', {"User-Agent": AGENT, "Referer": "https://example.org/"}, 404, None),
    ("POST", "/index.html", {"User-Agent": "-"}, 200, "3"),
]


def apache_escaped(value: bytes) -> str:
    """What Apache's ``ap_escape_logitem`` writes of a request's or a header's bytes: ``"``
    and ``\\`` behind a ``\\``, the C escapes of ``\\b \\n \\r \\t \\v``, every other control
    byte and every byte past ASCII as ``\\xhh``."""
    named = {0x08: "\\b", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v"}
    out = []
    for byte in value:
        if byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        elif byte in named:
            out.append(named[byte])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\x{byte:02x}")
        else:
            out.append(chr(byte))
    return "".join(out)


def both_logged(logs: tuple[Path, ...], requests: int) -> bool:
    """Whether each log holds a line for each of the first ``requests`` requests."""
    return all(log.exists() and log.read_bytes().count(b"\n") == requests for log in logs)


def three_words(request: str) -> tuple[str, str, str] | tuple[None, None, None]:
    words = request.split(" ")
    if len(words) == 3 and all(words) and '"' not in request:
        return words[0], words[1], words[2]
    return None, None, None


@pytest.mark.timeout(180)
def test_should_land_a_real_apache_httpds_common_and_combined_logs(
    staging_rows: StagingRows, tmp_path: Path
) -> None:
    common, combined = tmp_path / "logs" / "access.log", tmp_path / "logs" / "combined.log"
    before = datetime.now(timezone.utc).replace(microsecond=0)
    with running_apache(tmp_path / "httpd", {common: COMMON, combined: COMBINED}) as apache:
        for made, (method, target, headers, _, _) in enumerate(REQUESTS, start=1):
            connection = http.client.HTTPConnection("127.0.0.1", apache.port, timeout=10)
            body = b"x" if method == "POST" else None
            connection.request(method, target, body=body, headers=headers)
            connection.getresponse().read()
            connection.close()
            # Apache logs a request after it answered it, in the worker that served it: the
            # next request's line could come first (it did once), so each one is waited for.
            wait_until(
                functools.partial(both_logged, (common, combined), made),
                timeout=10,
                what=f"Apache to log request {made}",
            )
    after = datetime.now(timezone.utc) + timedelta(seconds=1)

    landed = {}
    for fmt, log in (("apache_common", common), ("apache_combined", combined)):
        lines = [*log.read_bytes().splitlines(), b"not an access log line"]
        parsed, rejects = parse(staging_rows(lines, source="web"), fmt)
        assert [row["reason"] for row in rejects.collect()] == [RejectReason.NO_MATCH.value]
        landed[fmt] = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]

    for fmt, rows in landed.items():
        assert len(rows) == len(REQUESTS), fmt
        for row, (method, target, headers, status, size) in zip(rows, REQUESTS, strict=True):
            request = f"{method} {apache_escaped(target.encode())} HTTP/1.1"
            assert row["request"] == request
            assert (row["method"], row["path"], row["protocol"]) == three_words(request)
            assert (row["remote_host"], row["ident"], row["remote_user"]) == (
                "127.0.0.1",
                None,
                None,
            )
            assert row["status"] == status
            if size is not None:  # a 404's page is Apache's own
                assert row["response_bytes"] == (0 if size == "-" else int(size))
            assert before <= row["event_time"].astimezone(timezone.utc) <= after
            if fmt == "apache_combined":
                agent = headers.get("User-Agent")
                expected = (
                    None if agent in (None, "-") else apache_escaped(agent.encode("latin-1"))
                )  # http.client
                assert row["user_agent"] == expected
                assert row["referer"] == headers.get("Referer")
            else:
                assert "user_agent" not in row
    assert landed["apache_combined"][2]["path"] is None  # the escaped quote: not three words


TOKENS = st.from_regex(r"[A-Za-z0-9._@:-]{1,16}", fullmatch=True)
RECORDS = st.fixed_dictionaries(
    {
        "remote_host": st.ip_addresses().map(str),
        "ident": st.sampled_from(["-", "ident7"]),
        "remote_user": st.one_of(st.just("-"), TOKENS),
        "time": st.datetimes(
            min_value=datetime(1971, 1, 1),
            max_value=datetime(2200, 12, 31),
            timezones=st.builds(
                timezone, st.integers(-14 * 60, 14 * 60).map(lambda m: timedelta(minutes=m))
            ),
        ),
        "request": st.text(max_size=40),
        "status": st.integers(100, 599),
        "response_bytes": st.integers(0, 2**40),
        "referer": st.text(max_size=20),
        "user_agent": st.text(max_size=40),
        "damage": st.sampled_from([None, None, None, "bracket", "month", "utf8"]),
    }
)
DAMAGE_REASONS = {
    "bracket": RejectReason.NO_MATCH,
    "month": RejectReason.BAD_TIMESTAMP,
    "utf8": RejectReason.INVALID_UTF8,
}


def apache_line(record: dict[str, Any], combined: bool) -> bytes:
    """The line Apache writes for ``record`` (``%b`` writes an empty body as ``-``), damaged
    as ``record["damage"]`` says."""
    stamp = record["time"].strftime("%d/%b/%Y:%H:%M:%S %z")
    if record["damage"] == "month":
        stamp = stamp[:3] + "Foo" + stamp[6:]
    close = ")" if record["damage"] == "bracket" else "]"
    size = record["response_bytes"] or "-"
    line = (
        f"{record['remote_host']} {record['ident']} {record['remote_user']} [{stamp}{close} "
        f'"{apache_escaped(record["request"].encode())}" {record["status"]} {size}'
    )
    if combined:
        line += (
            f' "{apache_escaped(record["referer"].encode())}"'
            f' "{apache_escaped(record["user_agent"].encode())}"'
        )
    return line.encode() + (b"\xff" if record["damage"] == "utf8" else b"")


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(RECORDS, min_size=1, max_size=40), st.booleans())
def test_generated_lines_parse_back_to_the_values_they_were_written_from(
    staging_rows: StagingRows, records: list[dict[str, Any]], combined: bool
) -> None:
    fmt = "apache_combined" if combined else "apache_common"
    lines = [apache_line(record, combined) for record in records]

    parsed, rejects = parse(staging_rows(lines, source="web"), fmt)

    rows = {row["byte_offset"]: row.asDict() for row in parsed.collect()}
    reasons = {row["byte_offset"]: row["reason"] for row in rejects.collect()}
    offsets = line_offsets(lines, 0)
    assert sorted([*rows, *reasons]) == offsets  # each line once: a row or a reject
    for offset, record in zip(offsets, records, strict=True):
        if record["damage"] is not None:
            assert reasons[offset] == DAMAGE_REASONS[record["damage"]].value
            continue
        row = rows[offset]
        request = apache_escaped(record["request"].encode())
        assert row["event_time"].astimezone(timezone.utc) == record["time"].replace(microsecond=0)
        assert row["request"] == request
        assert (row["method"], row["path"], row["protocol"]) == three_words(request)
        assert (row["remote_host"], row["status"], row["response_bytes"]) == (
            record["remote_host"],
            record["status"],
            record["response_bytes"],
        )
        for column in ("ident", "remote_user"):
            assert row[column] == (None if record[column] == "-" else record[column])
        if combined:
            for column in ("referer", "user_agent"):
                text = apache_escaped(record[column].encode())
                assert row[column] == (None if text == "-" else text), column
