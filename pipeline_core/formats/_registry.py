"""The source formats: for each, its columns and their types, where its event time comes from,
and why its events can be rejected. The config's ``format`` choice, the lake tables' Iceberg
schemas (``pipeline_core.lake``), the landing's projection (``spark_jobs.formats``) and the
documentation's table of formats all derive from :data:`FORMATS`.

Every table also has the columns every source has (``event_id``, ``file_fingerprint``,
``byte_offset``, ``host``, ``event_time``, ``checkpoint_id``: ``pipeline_core.lake``); a
format's columns are those it adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline_core._compat import StrEnum


class SourceFormat(StrEnum):
    """How a source's events are parsed into the columns of its table (:data:`FORMATS`)."""

    NGINX_COMBINED = "nginx_combined"
    JSON_LINES = "json_lines"
    RAW = "raw"
    CRI = "cri"
    """A container's log as containerd and CRI-O write it (``/var/log/pods``): a line written
    in parts (``P`` entries, then ``F``) is read as one; the row keeps the stream and the
    runtime's time."""
    DOCKER_JSON = "docker_json"
    """A container's log as Docker's ``json-file`` driver writes it, likewise."""
    SPARK_LOG4J = "spark_log4j"
    """Spark's log4j2 log in Spark's default pattern, ``%d{yy/MM/dd HH:mm:ss} %p %c{1}:
    %m%n%ex``: level, logger, message and stack trace apart."""
    PYTHON_LOGGING = "python_logging"
    """What Python's ``logging`` writes with the source's ``log_format`` (its ``Formatter``
    format string): level, logger, message and traceback apart."""
    SYSLOG_RFC5424 = "syslog_rfc5424"
    """Syslog messages of RFC 5424 (rsyslog's ``RSYSLOG_SyslogProtocol23Format``): header
    fields, structured data as a map, message."""
    SYSLOG_RFC3164 = "syslog_rfc3164"
    """BSD syslog lines as rsyslog writes its files (``RSYSLOG_TraditionalFileFormat``, and
    ``RSYSLOG_FileFormat``'s RFC 3339 time), with or without a ``<PRI>``."""
    LOGFMT = "logfmt"
    """``key=value`` pairs, one record a line: every pair in a map, declared keys as typed
    columns."""
    APACHE_COMMON = "apache_common"
    """Apache httpd's (and NCSA's) Common Log Format, ``%h %l %u %t "%r" %>s %b``."""
    APACHE_COMBINED = "apache_combined"
    """Apache httpd's ``combined``: the common format, then ``"%{Referer}i"
    "%{User-agent}i"``."""
    NGINX = "nginx"
    """nginx's access log in the source's own ``log_format`` (the directive as written in
    nginx.conf): a column per variable (``pipeline_core.formats.nginx_log_format``)."""
    AIRFLOW_TASK = "airflow_task"
    """Airflow 3's task logs: JSON lines written by structlog (``timestamp``, ``level``,
    ``event``, ``logger``, a failure's ``error_detail``)."""
    SPARK_JSON = "spark_json"
    """Spark's structured JSON logging (``spark.log.structuredLogging.enabled``: log4j2's
    ``JsonTemplateLayout`` with Spark's ``SparkLayout.json``)."""
    REGEX = "regex"
    """The source's own ``pattern``: a column per named group, typed as the source's
    ``columns`` declare (``pipeline_core.formats.user_pattern``)."""


DEFAULT_PYTHON_LOG_FORMAT = "%(levelname)s:%(name)s:%(message)s"
"""``logging.BASIC_FORMAT``: what ``logging.basicConfig()`` writes."""


class ColumnType(StrEnum):
    """A column's type, as every engine reading the lake sees it."""

    STRING = "string"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"
    """With a time zone (Iceberg ``timestamptz``): an instant, stored in UTC."""
    MAP = "map<string,string>"
    """Keys and values as strings (Iceberg ``map<string, string>``; a null key never)."""


class RejectReason(StrEnum):
    """Why an event was not parsed: the ``reason`` column of ``_rejects``."""

    INVALID_UTF8 = "invalid_utf8"
    NO_MATCH = "no_match"
    BAD_TIMESTAMP = "bad_timestamp"
    INVALID_JSON = "invalid_json"
    LINE_TOO_LONG = "line_too_long"
    """Longer than the collector's ``max_line_bytes``: only its first bytes were staged."""


@dataclass(frozen=True)
class FormatColumn:
    """A column a format adds to its table."""

    name: str
    type: ColumnType
    doc: str


@dataclass(frozen=True)
class FormatSpec:
    """What a source format lands: its columns (after the common ones, before
    ``checkpoint_id``), where ``event_time`` comes from, and its reject reasons."""

    name: SourceFormat
    summary: str
    columns: tuple[FormatColumn, ...]
    event_time: str
    """Where a row's ``event_time`` comes from, and in which time zone."""
    rejects: tuple[RejectReason, ...]
    """Every reason it rejects an event for (``line_too_long`` in every format)."""
    declared: str = ""
    """The columns each source declares after :attr:`columns` (empty: none), as the docs
    say it."""

    def column_types(self) -> dict[str, ColumnType]:
        return {column.name: column.type for column in self.columns}


_PATTERN_REJECTS = (
    RejectReason.INVALID_UTF8,
    RejectReason.NO_MATCH,
    RejectReason.BAD_TIMESTAMP,
    RejectReason.LINE_TOO_LONG,
)
"""The rejects of a format that matches a line's text and reads a time from it."""
_JSON_LOG_REJECTS = (
    RejectReason.INVALID_UTF8,
    RejectReason.INVALID_JSON,
    RejectReason.NO_MATCH,
    RejectReason.BAD_TIMESTAMP,
    RejectReason.LINE_TOO_LONG,
)
"""The rejects of a log written as one JSON object a line, with its time in a key."""
_MESSAGE = FormatColumn(
    "message",
    ColumnType.STRING,
    "The event's text (a multiline event's lines joined by ``\\n``), invalid UTF-8 replaced.",
)
_EVENT_LINES = FormatColumn("event_lines", ColumnType.INT, "Its lines (1 for a line of its own).")
_CUT = FormatColumn(
    "cut",
    ColumnType.STRING,
    "Why the row is not a whole event (``lines``, ``bytes``, ``truncated``, ``headless``), or "
    "null.",
)
_CONTAINER_COLUMNS = (
    FormatColumn(
        "message",
        ColumnType.STRING,
        "The event as the program printed it: its entries' texts joined (a partial entry's "
        "with the next one's, lines with ``\\n``).",
    ),
    FormatColumn("stream", ColumnType.STRING, "``stdout`` or ``stderr``."),
    _EVENT_LINES,
    _CUT,
)
_CONTAINER_TIME = (
    "The runtime's time of the event's first entry (RFC 3339, UTC), to the microsecond."
)
_SYSLOG_PRIORITY = (
    FormatColumn("facility", ColumnType.INT, "The ``PRI``'s facility (0-23: ``PRI // 8``)."),
    FormatColumn("severity", ColumnType.INT, "The ``PRI``'s severity (0-7: ``PRI % 8``)."),
    FormatColumn(
        "level",
        ColumnType.STRING,
        "The severity's keyword, as ``logger -p`` and rsyslog name it: ``emerg``, ``alert``, "
        "``crit``, ``err``, ``warning``, ``notice``, ``info``, ``debug``.",
    ),
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

FORMATS: dict[SourceFormat, FormatSpec] = {
    spec.name: spec
    for spec in (
        FormatSpec(
            SourceFormat.NGINX_COMBINED,
            "nginx's (and Apache's) ``combined`` access log.",
            (
                FormatColumn("remote_addr", ColumnType.STRING, "``$remote_addr``."),
                FormatColumn("remote_user", ColumnType.STRING, "``$remote_user``; null for -."),
                FormatColumn("request", ColumnType.STRING, "``$request`` as written."),
                *_REQUEST_WORDS,
                FormatColumn("status", ColumnType.INT, "``$status``."),
                FormatColumn(
                    "body_bytes_sent", ColumnType.LONG, "``$body_bytes_sent``; null for -."
                ),
                FormatColumn("http_referer", ColumnType.STRING, "``$http_referer``."),
                FormatColumn("http_user_agent", ColumnType.STRING, "``$http_user_agent``."),
            ),
            "``$time_local`` (``dd/MMM/yyyy:HH:mm:ss Z``, its own offset).",
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.JSON_LINES,
            "One JSON object per line (a pretty-printed one with ``multiline``).",
            (
                FormatColumn(
                    "payload",
                    ColumnType.STRING,
                    "The object as written (without a CRLF line end's ``\\r``).",
                ),
            ),
            "The top-level key ``time_field`` (default ``time``): epoch seconds or ISO 8601 "
            "(without an offset: UTC); the seal time when the key is missing or null.",
            (
                RejectReason.INVALID_UTF8,
                RejectReason.INVALID_JSON,
                RejectReason.BAD_TIMESTAMP,
                RejectReason.LINE_TOO_LONG,
            ),
            declared="With the source's ``columns``, a column per declared key (``status: int``; "
            "a dotted path reaches into nested objects: ``http.status`` lands in "
            "``http_status``), null when the key is missing, JSON null or of another type; then "
            "``rescued`` (map): each declared key whose value was not of its column's type, with "
            "the value as text (null when every value fit).",
        ),
        FormatSpec(
            SourceFormat.RAW,
            "Any text: the event as it is.",
            (_MESSAGE, _EVENT_LINES, _CUT),
            "The batch's seal time.",
            (RejectReason.LINE_TOO_LONG,),
        ),
        FormatSpec(
            SourceFormat.CRI,
            "A container's log as containerd and CRI-O write it (``/var/log/pods``).",
            _CONTAINER_COLUMNS,
            _CONTAINER_TIME,
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.DOCKER_JSON,
            "A container's log as Docker's ``json-file`` driver writes it.",
            _CONTAINER_COLUMNS,
            _CONTAINER_TIME,
            (
                RejectReason.INVALID_UTF8,
                RejectReason.INVALID_JSON,
                RejectReason.BAD_TIMESTAMP,
                RejectReason.LINE_TOO_LONG,
            ),
        ),
        FormatSpec(
            SourceFormat.SPARK_LOG4J,
            "Spark's log4j2 log (drivers and executors) in Spark's default pattern, "
            "``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``. Give the source "
            "``multiline: {preset: java}`` to keep a record's stack trace in its row.",
            (
                FormatColumn("level", ColumnType.STRING, "``%p``: ``INFO``, ``WARN``, ``ERROR``."),
                FormatColumn(
                    "logger", ColumnType.STRING, "``%c{1}``: the logger's last name part."
                ),
                FormatColumn(
                    "message",
                    ColumnType.STRING,
                    "``%m``: the message, up to the line where its exception begins.",
                ),
                FormatColumn(
                    "exception",
                    ColumnType.STRING,
                    "``%ex``: the exception's class and message, its frames, ``Caused by:`` "
                    "and ``Suppressed:``; null when there is none.",
                ),
                _EVENT_LINES,
                _CUT,
            ),
            "``%d{yy/MM/dd HH:mm:ss}`` (to the second) in the source's ``timezone`` (default "
            "UTC: log4j writes the JVM's local time, with no offset).",
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.PYTHON_LOGGING,
            "What Python's ``logging`` writes, read with the source's ``log_format`` (the "
            "``Formatter`` format string, ending with ``%(message)s``; default "
            "``%(levelname)s:%(name)s:%(message)s``, ``logging.basicConfig``'s). Give the source "
            "``multiline: {preset: python}`` to keep a record's traceback in its row.",
            (
                FormatColumn("level", ColumnType.STRING, "``%(levelname)s``."),
                FormatColumn("logger", ColumnType.STRING, "``%(name)s``."),
                FormatColumn(
                    "message",
                    ColumnType.STRING,
                    "``%(message)s``: the message, all its lines, without what ``logging`` "
                    "appended to it.",
                ),
                FormatColumn(
                    "exception",
                    ColumnType.STRING,
                    "What ``logging`` appended to the message: the traceback of "
                    "``logger.exception`` (chained exceptions and groups included) and "
                    "``stack_info``; null when there is none.",
                ),
                FormatColumn(
                    "filename", ColumnType.STRING, "``%(filename)s`` (or ``%(pathname)s``)."
                ),
                FormatColumn("lineno", ColumnType.INT, "``%(lineno)d``."),
                FormatColumn("func_name", ColumnType.STRING, "``%(funcName)s``."),
                FormatColumn("process", ColumnType.LONG, "``%(process)d``."),
                FormatColumn("thread_name", ColumnType.STRING, "``%(threadName)s``."),
                _EVENT_LINES,
                _CUT,
            ),
            "``%(asctime)s`` (``logging``'s default ``datefmt``, ``2026-11-28 13:00:00,123``) in "
            "the source's ``timezone`` (default UTC: ``logging`` writes the local time of the "
            "process, with no offset), or ``%(created)f``; the seal time when the format names "
            "neither. A column the format does not name is null.",
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.SYSLOG_RFC5424,
            "Syslog messages of RFC 5424, one a line: ``<PRI>VERSION TIMESTAMP HOSTNAME "
            "APP-NAME PROCID MSGID STRUCTURED-DATA MSG``, as rsyslog writes them with "
            "``RSYSLOG_SyslogProtocol23Format`` (and as they come over the wire).",
            (
                *_SYSLOG_PRIORITY,
                FormatColumn("version", ColumnType.INT, "``VERSION`` (1)."),
                FormatColumn("hostname", ColumnType.STRING, "``HOSTNAME``; null for -."),
                FormatColumn("app_name", ColumnType.STRING, "``APP-NAME``; null for -."),
                FormatColumn("proc_id", ColumnType.STRING, "``PROCID``; null for -."),
                FormatColumn("msg_id", ColumnType.STRING, "``MSGID``; null for -."),
                FormatColumn(
                    "structured_data",
                    ColumnType.MAP,
                    "``STRUCTURED-DATA``: each parameter's value (its ``\\\"``, "
                    "``\\\\`` and ``\\]`` unescaped) keyed ``<SD-ID>.<PARAM-NAME>`` "
                    "(``origin.ip``, ``exampleSDID@32473.eventID``); a name repeated in an "
                    "element keeps its first value; an element without parameters adds no "
                    "key. Empty for -.",
                ),
                FormatColumn(
                    "message",
                    ColumnType.STRING,
                    "``MSG`` without its UTF-8 byte order mark; null when the message has none.",
                ),
            ),
            "``TIMESTAMP`` (RFC 3339: ``2026-11-28T13:00:00.123456+01:00``, its own offset, "
            "fractions to the microsecond); the seal time for a ``-`` timestamp.",
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.SYSLOG_RFC3164,
            "BSD syslog lines, ``Mmm dd HH:MM:SS HOSTNAME TAG[PID]: MSG``, as rsyslog writes "
            "its files with ``RSYSLOG_TraditionalFileFormat``, with or without the ``<PRI>`` a "
            "message comes over the wire with; a line in ``RSYSLOG_FileFormat`` (Debian's "
            "``/var/log/syslog`` since 12), whose time is RFC 3339, is read alike.",
            (
                *(
                    FormatColumn(c.name, c.type, c.doc + " Null without a ``<PRI>``.")
                    for c in _SYSLOG_PRIORITY
                ),
                FormatColumn(
                    "hostname",
                    ColumnType.STRING,
                    "``HOSTNAME``; null for - (rsyslog's for a message that named none).",
                ),
                FormatColumn(
                    "app_name", ColumnType.STRING, "The ``TAG`` without its ``[PID]`` and colon."
                ),
                FormatColumn(
                    "proc_id", ColumnType.STRING, "The ``PID`` in the tag's brackets, or null."
                ),
                FormatColumn(
                    "message", ColumnType.STRING, "``MSG``: what follows the tag and one space."
                ),
            ),
            "``Mmm dd HH:MM:SS`` in the source's ``timezone`` (default UTC), its year that of "
            "the seal time in that zone, or the year before when its month is after the seal "
            "time's; an RFC 3339 time (``RSYSLOG_FileFormat``) with its own offset, to the "
            "microsecond.",
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.LOGFMT,
            "logfmt: ``key=value`` pairs separated by spaces, one record a line (a value with "
            "a space double-quoted, a backslash escaping a quote, a backslash, a newline, a "
            "return or a tab in it; a key without ``=`` a flag).",
            (
                FormatColumn("level", ColumnType.STRING, "``level`` (or ``lvl``)."),
                FormatColumn(
                    "message", ColumnType.STRING, "``msg`` (or ``message``, or ``event``)."
                ),
                FormatColumn(
                    "fields",
                    ColumnType.MAP,
                    "Every key and its value, unquoted and unescaped (a flag's empty; a "
                    "repeated key's first).",
                ),
            ),
            "The key ``time_field`` (default ``time``, else ``ts``, else ``timestamp``): epoch "
            "seconds or ISO 8601 (without an offset: UTC); the seal time when there is none.",
            _PATTERN_REJECTS,
            declared="With the source's ``columns``, a column per declared key "
            "(``status: int``), null when it is missing or of another type; then ``rescued`` "
            "(map): each declared key whose value was not of its column's type, with the value "
            "(null when every value fit).",
        ),
        FormatSpec(
            SourceFormat.APACHE_COMMON,
            "Apache httpd's (and NCSA's) Common Log Format, ``LogFormat \"%h %l %u %t "
            '\\"%r\\" %>s %b" common``.',
            _APACHE_COMMON_COLUMNS,
            _APACHE_TIME,
            _PATTERN_REJECTS,
        ),
        FormatSpec(
            SourceFormat.APACHE_COMBINED,
            "Apache httpd's ``combined``: the common format, then the ``Referer`` and "
            "``User-Agent`` headers, quoted.",
            (
                *_APACHE_COMMON_COLUMNS,
                FormatColumn(
                    "referer", ColumnType.STRING, "``%{Referer}i`` as written; null for -."
                ),
                FormatColumn(
                    "user_agent",
                    ColumnType.STRING,
                    "``%{User-agent}i`` as written; null for -.",
                ),
            ),
            _APACHE_TIME,
            _PATTERN_REJECTS,
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
            _PATTERN_REJECTS,
            declared="A column per ``$variable``, in the format's order, named like it (``$host`` "
            "and other names of the common columns with ``nginx_`` before them): ``status``, "
            "``server_port``, ``remote_port``, ``connection_requests`` int; "
            "``body_bytes_sent``, ``bytes_sent``, ``request_length``, ``connection``, "
            "``content_length`` long; ``request_time``, ``msec`` double; ``time_local``, "
            "``time_iso8601`` timestamp; every other variable a string, as nginx wrote it "
            "(escaped). A value that is not of its column's type (``-``) is null.",
        ),
        FormatSpec(
            SourceFormat.AIRFLOW_TASK,
            "Airflow 3's task logs (``<base_log_folder>/dag_id=.../run_id=.../task_id=.../"
            "attempt=N.log``): one JSON object a line, as the task supervisor's structlog "
            "writes it.",
            (
                FormatColumn(
                    "level", ColumnType.STRING, "``level``: ``debug``, ``info``, ``warning``, ..."
                ),
                FormatColumn(
                    "logger",
                    ColumnType.STRING,
                    "``logger``: the Python logger's name (``task``, ``task.stdout``, the "
                    "task's own).",
                ),
                FormatColumn("message", ColumnType.STRING, "``event``: the message."),
                FormatColumn(
                    "error",
                    ColumnType.STRING,
                    "``error_detail`` as JSON text (a failure's exceptions, each with its "
                    "``exc_type``, ``exc_value`` and ``frames``); null when there is none.",
                ),
                FormatColumn(
                    "extra",
                    ColumnType.MAP,
                    "Every other top-level key (``dag_id``, ``task_id``, ``run_id``, "
                    "``try_number``, ``filename``, ``lineno``, ...): a string as it is, any "
                    "other value as its JSON text (a number as Spark prints it), ``null`` "
                    "as null.",
                ),
            ),
            "``timestamp`` (ISO 8601, its own offset: structlog writes UTC with ``Z``; "
            "without an offset, UTC), to the microsecond.",
            _JSON_LOG_REJECTS,
        ),
        FormatSpec(
            SourceFormat.SPARK_JSON,
            "Spark's structured JSON logging (``spark.log.structuredLogging.enabled=true``, "
            "log4j2's ``JsonTemplateLayout`` with Spark's ``SparkLayout.json``): one JSON "
            "object a line, ``ts``, ``level``, ``msg``, ``context``, ``exception``, "
            "``logger``.",
            (
                FormatColumn("level", ColumnType.STRING, "``level``: ``INFO``, ``WARN``, ..."),
                FormatColumn(
                    "logger", ColumnType.STRING, "``logger``: the logger's last name part."
                ),
                FormatColumn("message", ColumnType.STRING, "``msg``."),
                FormatColumn(
                    "context",
                    ColumnType.MAP,
                    "``context``: the record's MDC (``executor_id``, ``task_name``, ...); "
                    "empty when it has none.",
                ),
                FormatColumn(
                    "exception_class",
                    ColumnType.STRING,
                    "``exception.class``; null when there is no exception.",
                ),
                FormatColumn("exception_message", ColumnType.STRING, "``exception.msg``."),
                FormatColumn(
                    "stack_trace",
                    ColumnType.STRING,
                    "``exception.stacktrace``, a frame a line as Java prints it without "
                    "``at``: ``class.method(file:line)`` (``Unknown Source`` without a "
                    "file, ``Native Method`` for one).",
                ),
            ),
            "``ts`` (``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``, UTC; any ISO 8601 time with an "
            "offset, or without one in UTC), to the microsecond.",
            _JSON_LOG_REJECTS,
        ),
        FormatSpec(
            SourceFormat.REGEX,
            "The source's own ``pattern``, a regular expression of named groups (Python's "
            "syntax, matched from the event's start; ``(?s)`` lets ``.`` cross a multiline "
            "event's lines).",
            (),
            "The source's ``time_column`` (a group declared ``timestamp``), read with its "
            "``time_layout`` (a Spark datetime pattern; default ISO 8601) in its ``timezone`` "
            "(default UTC) unless the text states an offset; the seal time without a "
            "``time_column``.",
            _PATTERN_REJECTS,
            declared="A column per named group, in the pattern's order, of the type the "
            "source's ``columns`` give it (``string``, ``int``, ``long``, ``double``, "
            "``boolean``, ``timestamp``; default ``string``). An empty group is null, and so "
            "is a value that is not of its column's type (``abc`` for an ``int``); a "
            "``time_column`` that is not a time rejects the event (``bad_timestamp``).",
        ),
    )
}
"""Every source format, by name."""


def format_spec(name: str) -> FormatSpec:
    """The format called ``name``.

    Raises:
        ValueError: there is no such format (the message lists them).
    """
    try:
        return FORMATS[SourceFormat(name)]
    except ValueError:
        known = ", ".join(FORMATS)
        raise ValueError(f"no source format {name!r} (formats: {known})") from None
