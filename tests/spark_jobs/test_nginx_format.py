"""``format: nginx``: a real nginx writes its access log with a ``log_format`` of the user's;
the directive, as written in nginx.conf, reads the lines back into typed columns, checked
against the requests that were made."""

from __future__ import annotations

import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import StagingRows
from tests.support.rotation_tools import RotationTools, running_nginx

pytestmark = pytest.mark.spark

DIRECTIVE = (
    "log_format sluice '$remote_addr - $remote_user [$time_local] \"$request\" '\n"
    '        \'$status $body_bytes_sent "$http_referer" "$http_user_agent" \'\n'
    "        'rt=$request_time host=$host n=$connection_requests';"
)
REQUESTS = [
    ("GET", "/", "curl/8.5", None),
    ("HEAD", "/health?probe=1", "kube-probe/1.30", None),
    ("POST", "/api/v1/items", 'agent "quoted" Zürich', "https://example.org/from"),
    ("GET", "/caf%C3%A9", "Mozilla/5.0 (X11; Linux x86_64)", "-"),
]


def nginx_escaped(value: bytes) -> str:
    """What nginx's ``escape=default`` writes of a header's bytes (urllib sends Latin-1): a
    quote, a backslash, a control byte and every byte past ASCII as ``\\xHH``."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\x{b:02X}" for b in value)


@pytest.mark.timeout(120)
def test_should_land_a_real_nginx_log_in_the_columns_of_its_log_format(
    staging_rows: StagingRows, tmp_path: Path
) -> None:
    tools = RotationTools.find()
    log = tmp_path / "logs" / "access.log"
    before = datetime.now(timezone.utc).replace(microsecond=0)
    with running_nginx(
        tools.nginx, tmp_path / "nginx", log, tmp_path / "all.log", DIRECTIVE
    ) as nginx:
        for method, path, agent, referer in REQUESTS:
            headers = {"User-Agent": agent, **({"Referer": referer} if referer else {})}
            request = urllib.request.Request(
                nginx.url.rstrip("/") + path,
                method=method,
                headers=headers,
                data=b"x" if method == "POST" else None,
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
    after = datetime.now(timezone.utc) + timedelta(seconds=1)
    lines = log.read_bytes().splitlines()

    parsed, rejects = parse(
        staging_rows([*lines, b"not an access log line"], source="web"),
        "nginx",
        log_format=DIRECTIVE,
    )

    assert [row["reason"] for row in rejects.collect()] == [RejectReason.NO_MATCH.value]
    rows = [row.asDict() for row in parsed.orderBy("byte_offset").collect()]
    assert len(rows) == len(REQUESTS)
    for row, (method, path, agent, referer) in zip(rows, REQUESTS, strict=True):
        assert row["request"] == f"{method} {path} HTTP/1.1"
        assert (row["status"], row["remote_addr"], row["remote_user"]) == (200, "127.0.0.1", "-")
        assert row["body_bytes_sent"] == (0 if method == "HEAD" else 3)  # "ok\n"
        assert row["http_referer"] == (referer or "-")
        assert row["http_user_agent"] == nginx_escaped(agent.encode("latin-1"))
        assert row["nginx_host"] == "127.0.0.1"
        assert isinstance(row["request_time"], float) and row["connection_requests"] == 1
        assert before <= row["event_time"].astimezone(timezone.utc) <= after
        assert row["time_local"] == row["event_time"]


FIELDS = st.fixed_dictionaries(
    {
        "remote_addr": st.ip_addresses().map(str),
        "remote_user": st.sampled_from(["-", "bob", "ann-1"]),
        "time": st.datetimes(
            min_value=datetime(2000, 1, 1),
            max_value=datetime(2099, 12, 31),
            timezones=st.just(timezone.utc),
        ),
        "request": st.text(max_size=40),
        "status": st.integers(100, 599),
        "body_bytes_sent": st.integers(0, 2**40),
        "http_referer": st.text(max_size=20),
        "http_user_agent": st.text(max_size=40),
        "request_time": st.floats(0, 1000, allow_nan=False).map(lambda f: round(f, 3)),
        "host": st.from_regex(r"[a-z0-9.-]{1,20}", fullmatch=True),
        "connection_requests": st.integers(1, 10_000),
    }
)


def nginx_line(fields: dict[str, Any]) -> bytes:
    """The line nginx writes for ``fields`` with :data:`DIRECTIVE` (``escape=default``)."""
    text = {k: nginx_escaped(str(v).encode()) for k, v in fields.items() if k != "time"}
    stamp = fields["time"].strftime("%d/%b/%Y:%H:%M:%S +0000")
    return (
        f'{text["remote_addr"]} - {text["remote_user"]} [{stamp}] "{text["request"]}" '
        f'{text["status"]} {text["body_bytes_sent"]} "{text["http_referer"]}" '
        f'"{text["http_user_agent"]}" rt={fields["request_time"]:.3f} host={text["host"]} '
        f"n={text['connection_requests']}"
    ).encode()


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(FIELDS, min_size=1, max_size=40))
def test_generated_lines_parse_back_to_the_values_they_were_written_from(
    staging_rows: StagingRows, records: list[dict[str, Any]]
) -> None:
    parsed, rejects = parse(
        staging_rows([nginx_line(r) for r in records], source="web"), "nginx", log_format=DIRECTIVE
    )

    assert rejects.count() == 0
    rows = parsed.orderBy("byte_offset").collect()
    for row, record in zip(rows, records, strict=True):
        assert row["event_time"].astimezone(timezone.utc) == record["time"].replace(microsecond=0)
        for column in ("request", "http_referer", "http_user_agent"):  # empty: null
            assert row[column] == (nginx_escaped(record[column].encode()) or None), column
        assert (row["status"], row["body_bytes_sent"]) == (
            record["status"],
            record["body_bytes_sent"],
        )
        assert (row["remote_addr"], row["nginx_host"]) == (record["remote_addr"], record["host"])
        assert row["request_time"] == pytest.approx(record["request_time"])
        assert row["connection_requests"] == record["connection_requests"]
