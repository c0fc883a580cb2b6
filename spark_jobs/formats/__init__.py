"""Source formats: one parser per format, from staging rows to typed rows and rejects.

Every parser is a pure function ``DataFrame -> (parsed, rejects)`` over staging rows: the
staged events as ``spark_jobs.staging`` reads them from the part files (``file_fingerprint``,
``byte_offset``, ``line`` (binary), ``event_lines``, ``cut``, ``host``, ``sealed_at``,
``line_bytes``) plus the columns the landing job adds, ``checkpoint_id`` and ``source``. A row
is an event: one line, or the lines of a multiline event (a traceback, a stack trace) joined by
their ``\\n`` (``event_lines`` of them); every format parses it as one row or one reject, and
"line" below means such a row.
Both results derive lazily from one classification of the input, so every input row lands in
exactly one of them. Given an ``Observation`` (``rejected=``), that classification also
observes, in whichever job computes it, the set of source files with rejects
(:func:`rejected_files`): the landing learns them from the job writing the parsed rows.

Parsed rows carry ``event_id`` (``"<file_fingerprint>:<byte_offset>"``), ``file_fingerprint``,
``byte_offset``, ``host``, ``event_time`` (timestamp), the format's columns, ``event_date``
(the UTC date of ``event_time``) and ``checkpoint_id``. Rejects carry ``event_id``,
``file_fingerprint``, ``byte_offset``, ``host``, ``source``, ``raw_line`` (the line, a multiline
event whole, with invalid UTF-8 replaced by U+FFFD, verbatim otherwise), ``line_bytes`` (its
length in bytes), ``reason`` (a ``RejectReason``), ``sealed_at`` (its batch's) and
``checkpoint_id``.

A row whose ``line_bytes`` is set is a line longer than the collector's ``max_line_bytes``,
staged as its first bytes only: in every format it is a ``line_too_long`` reject (its
``raw_line`` the prefix, its ``line_bytes`` the whole line's length), never a parsed row, even
when the prefix would parse.

A line ending in ``\\r`` (a CRLF line end) is read without that ``\\r``: in ``message``,
``payload`` and the nginx fields alike; in a multiline event, so is the ``\\r`` before each of
its ``\\n``.

The parsers use Spark SQL expressions (and the landing's Java function for nginx lines), no
Python UDFs: they run in the JVM and need no Python on the executors.

One module per format (``nginx``, ``apache`` for ``apache_common`` and ``apache_combined``,
``json_lines``, ``raw``, ``container`` for ``cri`` and
``docker_json``, ``python_logging``, ``spark_log4j``, ``syslog_rfc5424``, ``syslog_rfc3164``,
``logfmt``, ``airflow_task``, ``spark_json``, ``regex`` and ``nginx``, which is read as the
pattern its ``log_format`` makes) parses its events;
what each lands (columns and types, event time, reject reasons) is defined once, in
``pipeline_core.formats``, and :func:`parse` projects every parser's rows onto that definition
(its columns in order, cast to their types), so a parser cannot land a column its table does
not declare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    TimestampType,
)

from pipeline_core.formats import (
    DEFAULT_PYTHON_LOG_FORMAT,
    ColumnType,
    RejectReason,
    SourceFormat,
    declared_columns,
    format_spec,
    json_columns,
    nginx_log_format,
    user_pattern,
)
from spark_jobs.formats._common import (
    REJECT_COLUMNS,
    STAGING_COLUMNS,
    ParseResult,
    PatternMatcher,
    event_id,
    pattern_matcher,
    rejected_files,
    utc_date,
)
from spark_jobs.formats.airflow_task import parse_airflow_task
from spark_jobs.formats.apache import parse_apache
from spark_jobs.formats.container import CRI_PATTERN, parse_container
from spark_jobs.formats.json_lines import DEFAULT_TIME_FIELD, parse_json_lines
from spark_jobs.formats.logfmt import parse_logfmt
from spark_jobs.formats.nginx import (
    NGINX_FIELDS,
    NGINX_PATTERN,
    NGINX_TIME_FORMAT,
    NginxScanner,
    nginx_scanner,
    parse_nginx_combined,
)
from spark_jobs.formats.python_logging import parse_python_logging
from spark_jobs.formats.raw import parse_raw
from spark_jobs.formats.regex import parse_regex
from spark_jobs.formats.spark_json import parse_spark_json
from spark_jobs.formats.spark_log4j import parse_spark_log4j
from spark_jobs.formats.syslog_rfc3164 import parse_syslog_rfc3164
from spark_jobs.formats.syslog_rfc5424 import parse_syslog_rfc5424

__all__ = [
    "CRI_PATTERN",
    "DEFAULT_TIME_FIELD",
    "NGINX_FIELDS",
    "NGINX_PATTERN",
    "NGINX_TIME_FORMAT",
    "REJECT_COLUMNS",
    "STAGING_COLUMNS",
    "NginxScanner",
    "ParseResult",
    "PatternMatcher",
    "RejectReason",
    "SourceFormat",
    "event_id",
    "nginx_scanner",
    "parse",
    "pattern_matcher",
    "rejected_files",
    "utc_date",
]

_SPARK_TYPES: dict[ColumnType, DataType | str] = {
    ColumnType.STRING: StringType(),
    ColumnType.INT: IntegerType(),
    ColumnType.LONG: LongType(),
    ColumnType.DOUBLE: DoubleType(),
    ColumnType.BOOLEAN: BooleanType(),
    ColumnType.TIMESTAMP: TimestampType(),
    ColumnType.MAP: MapType(StringType(), StringType()),
    ColumnType.EXCEPTION: ColumnType.EXCEPTION.value,  # Spark reads the type's DDL
}
_LEADING = ("event_id", "file_fingerprint", "byte_offset", "host", "event_time")
_TRAILING = ("event_date", "checkpoint_id")

Parser = Callable[[DataFrame, Observation | None], ParseResult]


def parse(
    rows: DataFrame,
    fmt: str,
    *,
    time_field: str | None = None,
    log_format: str | None = None,
    timezone: str | None = None,
    pattern: str | None = None,
    columns: Mapping[str, str] | None = None,
    time_column: str | None = None,
    time_layout: str | None = None,
    rejected: Observation | None = None,
    scanner: NginxScanner = NginxScanner.REGEX,
    matcher: PatternMatcher | None = None,
) -> ParseResult:
    """Parse staging rows of one source with its declared format.

    Args:
        rows: staging rows with ``STAGING_COLUMNS``.
        fmt: a ``SourceFormat`` value.
        time_field: ``json_lines`` and ``logfmt``; the key holding the event time (None:
            ``time``; ``logfmt`` also ``ts``, then ``timestamp``).
        log_format: ``python_logging``, the ``logging`` format string (None: the default,
            ``logging.BASIC_FORMAT``); ``nginx``, the ``log_format`` directive.
        timezone: ``python_logging``, ``spark_log4j``, ``syslog_rfc3164`` and ``regex``; the
            time zone of the time their lines state without an offset (None: UTC).
        columns: ``regex``, ``json_lines`` and ``logfmt``; the declared columns' types
            (``ColumnType`` values): ``regex``, its groups' (a group not named: string); the
            others, the keys landed as columns.
        pattern, time_column, time_layout: ``regex`` only; the source's pattern, the column of
            its event time (None: the seal time) and that column's layout (None: ISO 8601).
        rejected: observes the source files with rejects (:func:`rejected_files`) in the first
            job that computes either result (an ``Observation`` observes one job only).
        scanner: ``nginx_combined`` only; how lines are split into fields (:func:`nginx_scanner`
            picks the fastest a session has).
        matcher: the formats read by one pattern (``python_logging``, ``spark_log4j``, the
            syslogs, ``regex`` and ``nginx`` with a ``log_format``); how it is matched (None:
            :func:`pattern_matcher`'s choice, the fastest the session has).

    Returns:
        ``(parsed, rejects)``: the parsed rows with the common columns, the format's (as
        ``pipeline_core.formats`` declares them, in order and type), ``event_date`` and
        ``checkpoint_id``.

    Raises:
        ValueError: ``fmt`` is not a known format, or ``regex`` without a usable pattern.
    """
    spec = format_spec(fmt)
    types = {name: ColumnType(kind) for name, kind in (columns or {}).items()}
    user = None
    if spec.name is SourceFormat.NGINX and log_format is not None:
        layout = nginx_log_format(log_format)
        user = user_pattern(layout.pattern, layout.columns, layout.time_column)
        time_column, time_layout = layout.time_column, layout.time_layout
    elif spec.name is SourceFormat.REGEX and pattern is not None:
        user = user_pattern(pattern, types, time_column)
    # The pattern's columns as checked above; otherwise the declaration's (or an error).
    declared = user.columns if user is not None else declared_columns(fmt, types, pattern)
    parsers: dict[SourceFormat, Parser] = {
        SourceFormat.NGINX_COMBINED: lambda r, o: parse_nginx_combined(r, o, scanner),
        SourceFormat.APACHE_COMMON: lambda r, o: parse_apache(r, False, o),
        SourceFormat.APACHE_COMBINED: lambda r, o: parse_apache(r, True, o),
        SourceFormat.JSON_LINES: lambda r, o: parse_json_lines(
            r, time_field or DEFAULT_TIME_FIELD, o, json_columns(types)
        ),
        SourceFormat.LOGFMT: lambda r, o: parse_logfmt(r, time_field, o, json_columns(types)),
        SourceFormat.RAW: parse_raw,
        SourceFormat.CRI: lambda r, o: parse_container(r, SourceFormat.CRI, o),
        SourceFormat.DOCKER_JSON: lambda r, o: parse_container(r, SourceFormat.DOCKER_JSON, o),
        SourceFormat.SPARK_LOG4J: lambda r, o: parse_spark_log4j(r, timezone or "UTC", o, matcher),
        SourceFormat.PYTHON_LOGGING: lambda r, o: parse_python_logging(
            r, log_format or DEFAULT_PYTHON_LOG_FORMAT, timezone or "UTC", o, matcher
        ),
        SourceFormat.SYSLOG_RFC5424: lambda r, o: parse_syslog_rfc5424(r, o, matcher),
        SourceFormat.SYSLOG_RFC3164: lambda r, o: parse_syslog_rfc3164(
            r, timezone or "UTC", o, matcher
        ),
        SourceFormat.AIRFLOW_TASK: parse_airflow_task,
        SourceFormat.SPARK_JSON: parse_spark_json,
    }
    if user is not None:
        parsed, rejects = parse_regex(
            rows, user, time_column, time_layout, timezone or "UTC", rejected, matcher
        )
    else:
        parsed, rejects = parsers[spec.name](rows, rejected)
    projected = [
        F.col(name).cast(_SPARK_TYPES[kind]).alias(name)
        for name, kind in (*((c.name, c.type) for c in spec.columns), *declared)
    ]
    return parsed.select(*_LEADING, *projected, *_TRAILING), rejects
