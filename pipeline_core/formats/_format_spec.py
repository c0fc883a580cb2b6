"""The terms a source format is defined in: its name (``SourceFormat``), its columns
(``FormatColumn``, typed by ``ColumnType``), the reasons it rejects an event for
(``RejectReason``), and the whole of it (``FormatSpec``); with the columns and reject reasons
several formats share. The formats themselves are defined by family and gathered in
:data:`pipeline_core.formats.FORMATS` (``_registry``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline_core._compat import StrEnum


class SourceFormat(StrEnum):
    """How a source's events are parsed into the columns of its table
    (:data:`pipeline_core.formats.FORMATS`)."""

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


JAVA_FRAMES = "array<struct<class:string,method:string,file:string,line:int>>"
"""A Java stack trace's frames, as :attr:`ColumnType.EXCEPTION` holds them (Spark's type)."""


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
    EXCEPTION = f"struct<class:string,message:string,frames:{JAVA_FRAMES}>"
    """A Java exception: its class, message and stack frames, each frame's class, method,
    file and line (a format's column; a source never declares it)."""

    @property
    def declarable(self) -> bool:
        """Whether a source may declare a column of this type (``columns``)."""
        return self is not ColumnType.EXCEPTION


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


PATTERN_REJECTS = (
    RejectReason.INVALID_UTF8,
    RejectReason.NO_MATCH,
    RejectReason.BAD_TIMESTAMP,
    RejectReason.LINE_TOO_LONG,
)
"""The rejects of a format that matches a line's text and reads a time from it."""
EVENT_LINES_COLUMN = FormatColumn(
    "event_lines", ColumnType.INT, "Its lines (1 for a line of its own)."
)
"""A multiline event's lines, in the formats that join them into one row."""
CUT_COLUMN = FormatColumn(
    "cut",
    ColumnType.STRING,
    "Why the row is not a whole event (``lines``, ``bytes``, ``truncated``, ``headless``), or "
    "null.",
)
"""Why a row is not a whole event, in the same formats."""
