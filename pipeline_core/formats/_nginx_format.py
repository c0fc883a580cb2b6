"""nginx's ``log_format``, as the user wrote it in nginx.conf, turned into the pattern of named
groups and the typed columns that read the lines it writes back (``format: nginx``).

``log_format main '$remote_addr - $remote_user [$time_local] "$request" '
'$status $body_bytes_sent $request_time';`` (the whole directive, or only its format string)
lands ``remote_addr``, ``remote_user``, ``time_local``, ``request``, ``status`` (int),
``body_bytes_sent`` (long) and ``request_time`` (double); the event time is ``$time_local``
(or ``$time_iso8601``). A variable's value runs up to the literal character after it in the
format (nginx escapes a ``"`` inside a value, and with ``escape=default`` or ``json`` every
control character): two variables with nothing between them cannot be told apart, and are
refused. A variable named like a column every table has (``$host``) lands as ``nginx_host``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline_core.formats._format_spec import ColumnType
from pipeline_core.formats._user_pattern import RESERVED_COLUMNS

TIME_LOCAL_LAYOUT = "dd/MMM/yyyy:HH:mm:ss Z"
"""``$time_local`` as a Spark datetime pattern."""
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_DIRECTIVE = re.compile(r"\s*log_format\s+\S+\s+(?:escape=\w+\s+)?(.*?);?\s*\Z", re.S)
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
_TYPES = {
    "status": ColumnType.INT,
    "server_port": ColumnType.INT,
    "remote_port": ColumnType.INT,
    "body_bytes_sent": ColumnType.LONG,
    "bytes_sent": ColumnType.LONG,
    "request_length": ColumnType.LONG,
    "connection": ColumnType.LONG,
    "connection_requests": ColumnType.INT,
    "content_length": ColumnType.LONG,
    "request_time": ColumnType.DOUBLE,
    "msec": ColumnType.DOUBLE,
    "time_local": ColumnType.TIMESTAMP,
    "time_iso8601": ColumnType.TIMESTAMP,
}
"""nginx's variables that hold a number or a time; every other one lands as a string (so do
``$upstream_response_time`` and ``$upstream_status``, lists when a request went to several
upstreams)."""
_TIMES = ("time_local", "time_iso8601")


class NginxFormatError(ValueError):
    """A ``log_format`` cannot be read back (the message says why)."""


@dataclass(frozen=True)
class NginxLayout:
    """What a ``log_format`` writes, as a ``regex`` source would declare it."""

    pattern: str
    columns: dict[str, ColumnType]
    time_column: str | None
    time_layout: str | None


def nginx_log_format(text: str) -> NginxLayout:
    """The layout of the lines ``text`` (a ``log_format`` directive, or its format string)
    makes nginx write.

    Raises:
        NginxFormatError: it names no variable, or two variables follow each other with
            nothing between them, or a directive's strings are not quoted.
    """
    fmt = _format_string(text)
    pieces: list[str] = ["^"]
    columns: dict[str, ColumnType] = {}
    position = 0
    matches = list(_VARIABLE.finditer(fmt))
    if not matches:
        raise NginxFormatError("names no $variable: it would land no column")
    for index, match in enumerate(matches):
        pieces.append(re.escape(fmt[position : match.start()]))
        variable = match.group(1) or match.group(2)
        follows = (
            fmt[match.end() : matches[index + 1].start()]
            if index + 1 < len(matches)
            else fmt[match.end() :]
        )
        if not follows and index + 1 < len(matches):
            raise NginxFormatError(
                f"${variable} is followed by another variable with nothing between them: "
                "where one ends cannot be told"
            )
        name = f"nginx_{variable}" if variable in RESERVED_COLUMNS else variable.lower()
        if name in columns:
            name = f"{name}_{index}"
        columns[name] = _TYPES.get(variable, ColumnType.STRING)
        if not follows:
            value = ".*"
        elif follows[0] == '"':  # a quoted value: nginx escapes a quote in it (\x22, or \")
            value = r'(?:[^"\\]|\\.)*'
        else:
            value = f"[^{re.escape(follows[0])}]*"
        pieces.append(f"(?P<{name}>{value})")
        position = match.end()
    pieces.append(re.escape(fmt[position:]) + r"\r?$")
    time_column = next((v for v in _TIMES if v in columns), None)
    layout = TIME_LOCAL_LAYOUT if time_column == "time_local" else None
    typed: dict[str, ColumnType] = {
        name: kind for name, kind in columns.items() if kind is not ColumnType.STRING
    }
    return NginxLayout("".join(pieces), typed, time_column, layout)


def _format_string(text: str) -> str:
    """The format string of a ``log_format`` directive (its quoted strings joined, as nginx
    joins them), or ``text`` itself when it is not a directive."""
    directive = _DIRECTIVE.fullmatch(text)
    if directive is None:
        return text
    rest = directive.group(1).strip()
    strings = list(_QUOTED.finditer(rest))
    if not strings or _QUOTED.sub("", rest).strip():
        raise NginxFormatError("a log_format directive's format is one or more quoted strings")
    return "".join(
        re.sub(r"\\(.)", r"\1", m.group(1) if m.group(1) is not None else m.group(2))
        for m in strings
    )
