"""nginx's ``log_format`` read back: the directive as written in nginx.conf, turned into the
pattern and the typed columns of ``format: nginx``."""

from __future__ import annotations

import re

import pytest

from pipeline_core.formats import ColumnType, NginxFormatError, nginx_log_format, user_pattern

DIRECTIVE = """log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                  '$status $body_bytes_sent "$http_referer" '
                  '"$http_user_agent" rt=$request_time host=$host';"""


def test_should_join_a_directives_strings_and_type_the_known_variables() -> None:
    layout = nginx_log_format(DIRECTIVE)
    columns = user_pattern(layout.pattern, layout.columns, layout.time_column).columns

    assert columns == (
        ("remote_addr", ColumnType.STRING),
        ("remote_user", ColumnType.STRING),
        ("time_local", ColumnType.TIMESTAMP),
        ("request", ColumnType.STRING),
        ("status", ColumnType.INT),
        ("body_bytes_sent", ColumnType.LONG),
        ("http_referer", ColumnType.STRING),
        ("http_user_agent", ColumnType.STRING),
        ("request_time", ColumnType.DOUBLE),
        ("nginx_host", ColumnType.STRING),
    )
    assert (layout.time_column, layout.time_layout) == ("time_local", "dd/MMM/yyyy:HH:mm:ss Z")


def test_should_read_a_quoted_value_with_an_escaped_quote_in_it() -> None:
    layout = nginx_log_format(DIRECTIVE)
    line = (
        '10.0.0.1 - bob [28/Nov/2026:10:00:00 +0100] "GET /a\\x22b HTTP/1.1" 404 0 "-" '
        '"say \\"hi\\"" rt=0.004 host=example.org'
    )

    match = re.match(layout.pattern, line)

    assert match is not None
    assert match["request"] == "GET /a\\x22b HTTP/1.1"
    assert match["http_user_agent"] == 'say \\"hi\\"'
    assert (match["request_time"], match["nginx_host"]) == ("0.004", "example.org")


def test_should_take_a_bare_format_string_and_an_iso_time() -> None:
    layout = nginx_log_format("$time_iso8601 $status ${request_method}")

    assert (layout.time_column, layout.time_layout) == ("time_iso8601", None)
    assert re.match(layout.pattern, "2026-11-28T10:00:00+00:00 200 GET") is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("plain text", "names no $variable"),
        ("$remote_addr$remote_user", "nothing between them"),
        ("log_format main $status;", "one or more quoted strings"),
    ],
)
def test_should_refuse_a_format_it_cannot_read_back(text: str, message: str) -> None:
    with pytest.raises(NginxFormatError, match=re.escape(message)):
        nginx_log_format(text)
