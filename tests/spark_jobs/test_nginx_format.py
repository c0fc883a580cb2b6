"""``format: nginx``: a real nginx writes its access log with a ``log_format`` of the user's;
the directive, as written in nginx.conf, reads the lines back into typed columns, checked
against the requests that were made."""

from __future__ import annotations

import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

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
