"""The web servers' access logs: nginx's ``combined`` and its own ``log_format``, Apache httpd's
Common Log Format and ``combined``.
"""

from __future__ import annotations

from pipeline_core.formats._format_spec import (
    PATTERN_REJECTS,
    ColumnType,
    FormatColumn,
    FormatSpec,
    SourceFormat,
)

_REQUEST_WORDS = (
    FormatColumn("method", ColumnType.STRING, "The request's method, if it is three words."),
    FormatColumn("path", ColumnType.STRING, "Its path, likewise."),
    FormatColumn("protocol", ColumnType.STRING, "Its protocol, likewise."),
)
"""An access log's request line split, when it is ``METHOD PATH PROTOCOL``."""
_APACHE_COMMON_COLUMNS = (
    FormatColumn("remote_host", ColumnType.STRING, "``%h``: the client's address (or name)."),
    FormatColumn("ident", ColumnType.STRING, "``%l``: identd's answer; null for -."),
    FormatColumn("remote_user", ColumnType.STRING, "``%u``: the authenticated user; null for -."),
    FormatColumn(
        "request", ColumnType.STRING, "``%r``: the request line as written (Apache's escapes)."
    ),
    *_REQUEST_WORDS,
    FormatColumn("status", ColumnType.INT, "``%>s``: the final status."),
    FormatColumn(
        "response_bytes",
        ColumnType.LONG,
        "``%b``: the body's bytes, headers excluded; 0 for - (no body).",
    ),
)
_APACHE_TIME = "``%t`` (``[dd/MMM/yyyy:HH:mm:ss Z]``, its own offset)."

ACCESS_LOG_FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        SourceFormat.NGINX_COMBINED,
        "nginx's (and Apache's) ``combined`` access log.",
        (
            FormatColumn("remote_addr", ColumnType.STRING, "``$remote_addr``."),
            FormatColumn("remote_user", ColumnType.STRING, "``$remote_user``; null for -."),
            FormatColumn("request", ColumnType.STRING, "``$request`` as written."),
            *_REQUEST_WORDS,
            FormatColumn("status", ColumnType.INT, "``$status``."),
            FormatColumn("body_bytes_sent", ColumnType.LONG, "``$body_bytes_sent``; null for -."),
            FormatColumn("http_referer", ColumnType.STRING, "``$http_referer``."),
            FormatColumn("http_user_agent", ColumnType.STRING, "``$http_user_agent``."),
        ),
        "``$time_local`` (``dd/MMM/yyyy:HH:mm:ss Z``, its own offset).",
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.APACHE_COMMON,
        "Apache httpd's (and NCSA's) Common Log Format, ``LogFormat \"%h %l %u %t "
        '\\"%r\\" %>s %b" common``.',
        _APACHE_COMMON_COLUMNS,
        _APACHE_TIME,
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.APACHE_COMBINED,
        "Apache httpd's ``combined``: the common format, then the ``Referer`` and "
        "``User-Agent`` headers, quoted.",
        (
            *_APACHE_COMMON_COLUMNS,
            FormatColumn("referer", ColumnType.STRING, "``%{Referer}i`` as written; null for -."),
            FormatColumn(
                "user_agent",
                ColumnType.STRING,
                "``%{User-agent}i`` as written; null for -.",
            ),
        ),
        _APACHE_TIME,
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.NGINX,
        "nginx's access log written with the source's ``log_format``: the ``log_format`` "
        "directive as it is in nginx.conf (``log_format main '$remote_addr ...' '...';``), "
        "or its format string.",
        (),
        "``$time_local`` (``dd/MMM/yyyy:HH:mm:ss Z``, its own offset) or "
        "``$time_iso8601``, whichever the format names first; the seal time when it "
        "names neither.",
        PATTERN_REJECTS,
        declared="A column per ``$variable``, in the format's order, named like it (``$host`` "
        "and other names of the common columns with ``nginx_`` before them): ``status``, "
        "``server_port``, ``remote_port``, ``connection_requests`` int; "
        "``body_bytes_sent``, ``bytes_sent``, ``request_length``, ``connection``, "
        "``content_length`` long; ``request_time``, ``msec`` double; ``time_local``, "
        "``time_iso8601`` timestamp; every other variable a string, as nginx wrote it "
        "(escaped). A value that is not of its column's type (``-``) is null.",
    ),
)
"""The access log formats, in :class:`SourceFormat`'s order."""
