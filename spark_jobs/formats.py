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
Python UDFs: they run in the JVM and need no Python on the executors. Formats:

``nginx_combined``
    ``$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
    "$http_referer" "$http_user_agent"``, as one anchored regular expression
    (``NGINX_PATTERN``) defines it. A ``NginxScanner`` splits a matching line into its fields:
    the Java function ``sluice.spark.NginxFields`` scans its bytes once (the landing's choice,
    when its session has the function), or the pattern rewrites the line into its fields
    joined by ``\\x01``, split once (a line that does not match comes back unchanged, which is
    how a match is recognised). A raw control character inside a field (nginx writes them
    escaped) makes the line not match; a trailing ``\\r`` (a CRLF line end) is allowed.
    ``remote_user`` is null for ``-``; ``body_bytes_sent`` is null
    for ``-`` (Apache's spelling of zero). ``method``, ``path`` and ``protocol`` come from
    ``request`` when it is exactly three space-separated words, and are null otherwise
    (``"-"``, a TLS handshake logged as escaped bytes...). Rejects: ``invalid_utf8``,
    ``no_match``, ``bad_timestamp`` (``time_local`` is not a valid ``dd/MMM/yyyy:HH:mm:ss Z``,
    or is before year 1).
``json_lines``
    One JSON object per line, kept verbatim in ``payload`` (but for the ``\\r`` of a CRLF line
    end; other whitespace around the object is kept); a multiline event is one object (a
    pretty-printed one spanning its lines), kept with its ``\\n`` (less the ``\\r`` of CRLF
    line ends) in ``payload``. ``event_time`` comes from the top-level key ``time_field``: epoch
    seconds (a number or a numeric string, fractions kept to the microsecond) or an ISO-8601
    string (a time without an offset is read in the session time zone, UTC in the landing job).
    A missing time (no such key, or JSON ``null``) falls back to ``sealed_at``; it is not a
    reject. A time that is there but is neither (``"not a date"``, ``""``, ``true``, an object,
    epoch seconds past year 9999) is. Rejects: ``invalid_utf8``, ``invalid_json`` (not a JSON
    object), ``bad_timestamp`` (an unreadable time).
``raw``
    ``message`` is the whole event (its lines joined by their ``\\n``) with invalid UTF-8
    replaced and without the ``\\r`` of CRLF line ends; ``event_lines`` (int) its lines (1 for a
    line of its own) and ``cut`` why it is not whole (``lines``, ``bytes``: the source's
    ``multiline`` bounds; ``truncated``, ``headless``: a copytruncate copy's last event and the
    rest of it, or a missing head; null for a whole event);
    ``event_time`` is ``sealed_at``. Rejects only over-long lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline_core._compat import StrEnum
from spark_jobs.jvm_functions import NGINX_FIELDS as NGINX_FIELDS_FUNCTION
from spark_jobs.jvm_functions import enable_jvm_functions


class SourceFormat(StrEnum):
    """The formats a pipeline source can declare in its manifest entry."""

    NGINX_COMBINED = "nginx_combined"
    JSON_LINES = "json_lines"
    RAW = "raw"
    CRI = "cri"
    DOCKER_JSON = "docker_json"


class NginxScanner(Enum):
    """How an nginx line is split into its fields; both give the same fields and rejects."""

    JVM = "jvm"
    """The Java function ``sluice.spark.NginxFields``: one pass over the line's bytes, nothing
    decoded (``spark_jobs.jvm_functions``)."""
    REGEX = "regex"
    """``NGINX_PATTERN`` rewritten into ``\\x01``-joined fields and split: Spark SQL only."""


class RejectReason(StrEnum):
    """Why a line was not parsed; the ``reason`` column of ``_rejects``."""

    INVALID_UTF8 = "invalid_utf8"
    NO_MATCH = "no_match"
    BAD_TIMESTAMP = "bad_timestamp"
    INVALID_JSON = "invalid_json"
    LINE_TOO_LONG = "line_too_long"
    """Longer than the collector's ``max_line_bytes``: only its first bytes were staged."""


ParseResult = tuple[DataFrame, DataFrame]
"""``(parsed, rejects)``."""

STAGING_COLUMNS = (
    "file_fingerprint",
    "byte_offset",
    "line",
    "event_lines",
    "cut",
    "host",
    "checkpoint_id",
    "source",
    "sealed_at",
    "line_bytes",
)
REJECT_COLUMNS = (
    "event_id",
    "file_fingerprint",
    "byte_offset",
    "host",
    "source",
    "raw_line",
    "line_bytes",
    "reason",
    "sealed_at",
    "checkpoint_id",
)
DEFAULT_TIME_FIELD = "time"

NGINX_TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"
_NGINX_WORD = r'[^"\x00-\x20]++'
NGINX_PATTERN = (
    r"^([^\x00-\x20]++) - ([^\x00-\x20]++) \[([^\]\x00-\x1f]++)\] "
    rf'"(({_NGINX_WORD}) ({_NGINX_WORD}) ({_NGINX_WORD})|[^"\x00-\x1f]*+)" '
    r'(\d{3}) (\d++|-) "([^"\x00-\x1f]*+)" "([^"\x00-\x1f]*+)"\r?\z'
)
"""One group per ``NGINX_FIELDS`` entry, in order. Fields hold no control characters (nginx
writes them escaped), which also keeps the ``\\x01`` field separator out of them. The
request's words are captured only when it is exactly three words; otherwise those groups are
empty. Possessive quantifiers keep the match linear on long lines."""
NGINX_FIELDS = (
    "remote_addr",
    "remote_user",
    "time_local",
    "request",
    "method",
    "path",
    "protocol",
    "status",
    "body_bytes_sent",
    "http_referer",
    "http_user_agent",
)
_NGINX_SEPARATOR = "\x01"
_NGINX_REPLACEMENT = _NGINX_SEPARATOR.join(f"${group}" for group in range(1, len(NGINX_FIELDS) + 1))

CRI_PATTERN = r"(?s)^(\S+) (stdout|stderr) ([PF])(?: (.*))?\z"
"""A CRI entry: its time, stream, tag (``P`` partial, ``F`` full) and text."""
_MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
_MIN_MICROS = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
_EPOCH_PATTERN = r"^\s*-?\d+(\.\d*)?([eE][+-]?\d+)?\s*$"
_JSON_TRAILING_WHITESPACE = " \t\r"
"""What JSON allows after a value on an event's last line (which holds no ``\\n``)."""
_CRLF_ENDS = r"\r(?=\n)|\r\z"
"""The ``\\r`` of an event's CRLF line ends: before each ``\\n``, and at its very end."""
_MICROS_PER_DAY = 86_400_000_000
_CORRUPT_COLUMN = "__sluice_corrupt_record__"

# Private columns of the classification step; never written.
_TEXT = "_text"
_VALID = "_valid_utf8"
_REWRITTEN = "_rewritten"
_FIELDS = "_fields"
_FENCE = "_fence"
_TIME = "_time"
_REASON = "_reason"
_REJECTED_FILES = "rejected_files"
"""The observed metric: the distinct ``(checkpoint_id, host, file_fingerprint)`` of rejects."""


def parse(
    rows: DataFrame,
    fmt: str,
    *,
    time_field: str | None = None,
    rejected: Observation | None = None,
    scanner: NginxScanner = NginxScanner.REGEX,
) -> ParseResult:
    """Parse staging rows of one source with its declared format.

    Args:
        rows: staging rows with ``STAGING_COLUMNS``.
        fmt: a ``SourceFormat`` value.
        time_field: ``json_lines`` only; the key holding the event time (``"time"`` if None).
        rejected: observes the source files with rejects (:func:`rejected_files`) in the first
            job that computes either result (an ``Observation`` observes one job only).
        scanner: ``nginx_combined`` only; how lines are split into fields (:func:`nginx_scanner`
            picks the fastest a session has).

    Returns:
        ``(parsed, rejects)``.

    Raises:
        ValueError: ``fmt`` is not a known format.
    """
    source_format = SourceFormat(fmt)
    if source_format is SourceFormat.NGINX_COMBINED:
        return parse_nginx_combined(rows, rejected, scanner)
    if source_format is SourceFormat.JSON_LINES:
        return parse_json_lines(rows, time_field or DEFAULT_TIME_FIELD, rejected)
    if source_format in (SourceFormat.CRI, SourceFormat.DOCKER_JSON):
        return parse_container(rows, source_format, rejected)
    return parse_raw(rows, rejected)


def nginx_scanner(spark: SparkSession) -> NginxScanner:
    """``JVM`` when ``spark`` has the landing's Java functions, ``REGEX`` otherwise."""
    return NginxScanner.JVM if enable_jvm_functions(spark) else NginxScanner.REGEX


def parse_nginx_combined(
    rows: DataFrame,
    rejected: Observation | None = None,
    scanner: NginxScanner = NginxScanner.REGEX,
) -> ParseResult:
    """Parse nginx ``combined`` access-log lines (see the module doc) with ``scanner``."""
    field = _nginx_field
    classified = (
        _with_nginx_fields(_with_text(rows), scanner)
        .withColumn(_TIME, F.try_to_timestamp(field("time_local"), F.lit(NGINX_TIME_FORMAT)))
        # Spark reads a year of 0000, or -2026, as ``yyyy``: not a time nginx writes.
        .withColumn("event_time", F.when(F.unix_micros(F.col(_TIME)) >= _MIN_MICROS, F.col(_TIME)))
        .withColumn(
            _REASON,
            F.when(~F.col(_VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(F.col(_FIELDS).isNull(), F.lit(RejectReason.NO_MATCH.value))
            .when(F.col("event_time").isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value)),
        )
    )
    body_bytes = field("body_bytes_sent")
    return _split(
        classified,
        [
            field("remote_addr").alias("remote_addr"),
            _unless_equal(field("remote_user"), "-").alias("remote_user"),
            field("request").alias("request"),
            _unless_equal(field("method"), "").alias("method"),
            _unless_equal(field("path"), "").alias("path"),
            _unless_equal(field("protocol"), "").alias("protocol"),
            field("status").cast("int").alias("status"),
            _unless_equal(body_bytes, "-").try_cast("long").alias("body_bytes_sent"),
            field("http_referer").alias("http_referer"),
            field("http_user_agent").alias("http_user_agent"),
        ],
        rejected,
    )


def _with_nginx_fields(rows: DataFrame, scanner: NginxScanner) -> DataFrame:
    """Add ``_FIELDS``: the fields of a valid UTF-8 line that matches ``NGINX_PATTERN``, in
    ``NGINX_FIELDS`` order (a request's words null or empty unless it is three words); null for
    the other lines."""
    if scanner is NginxScanner.JVM:
        # Bytes in, bytes out: valid UTF-8 scans as its characters would.
        fields = NGINX_FIELDS_FUNCTION(F.col("line"))
        return rows.withColumn(_FIELDS, F.when(F.col(_VALID), fields))
    text = F.col(_TEXT)
    rewritten = F.col(_REWRITTEN)
    return (
        # Only valid UTF-8 survives the regex's round trip through a Java string unchanged.
        rows.withColumn(
            _REWRITTEN,
            F.when(F.col(_VALID), F.regexp_replace(text, NGINX_PATTERN, _NGINX_REPLACEMENT)),
        )
        # A rewritten line is always shorter (its brackets and quotes are gone): unchanged
        # means the line did not match.
        .withColumn(_FIELDS, F.when(rewritten != text, F.split(rewritten, _NGINX_SEPARATOR, -1)))
    )


def parse_json_lines(
    rows: DataFrame, time_field: str = DEFAULT_TIME_FIELD, rejected: Observation | None = None
) -> ParseResult:
    """Parse one JSON object per line; ``event_time`` from ``time_field`` (see the module doc)."""
    text = F.col(_TEXT)
    schema = StructType(
        [StructField(time_field, StringType()), StructField(_CORRUPT_COLUMN, StringType())]
    )
    parsed_object = F.from_json(
        text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT_COLUMN}
    )
    classified = _with_text(rows).withColumn(_FIELDS, parsed_object)
    is_object = (
        F.col(_FIELDS).isNotNull()
        & F.col(_FIELDS).getField(_CORRUPT_COLUMN).isNull()
        & F.rtrim(text, F.lit(_JSON_TRAILING_WHITESPACE)).endswith("}")
    )
    written_time = F.col(_FIELDS).getField(time_field)  # null: missing, or JSON null
    classified = (
        classified.withColumn(_TIME, _json_time(written_time))
        .withColumn(
            _REASON,
            F.when(~F.col(_VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(~is_object, F.lit(RejectReason.INVALID_JSON.value))
            .when(
                written_time.isNotNull() & F.col(_TIME).isNull(),
                F.lit(RejectReason.BAD_TIMESTAMP.value),
            ),
        )
        .withColumn("event_time", F.coalesce(F.col(_TIME), F.col("sealed_at")))
    )
    return _split(classified, [_without_crlf(text).alias("payload")], rejected)


def parse_raw(rows: DataFrame, rejected: Observation | None = None) -> ParseResult:
    """Keep every event as ``message``, with its ``event_lines`` and ``cut``; ``event_time``
    is the batch's ``sealed_at``."""
    classified = (
        rows.withColumn(_TEXT, F.make_valid_utf8(F.col("line").cast("string")))
        .withColumn("event_time", F.col("sealed_at"))
        .withColumn(_REASON, F.lit(None).cast("string"))
    )
    return _split(
        classified,
        [
            _without_crlf(F.col(_TEXT)).alias("message"),
            F.col("event_lines").cast("int").alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )


def parse_container(
    rows: DataFrame, fmt: SourceFormat, rejected: Observation | None = None
) -> ParseResult:
    """A container runtime's entries (``cri`` or ``docker_json``) as the events its program
    printed: ``message`` the entries' texts joined (a partial entry's with the next one's,
    lines with ``\\n``), ``stream``, ``event_lines``, ``cut``; ``event_time`` the runtime's
    time of the event's first entry (to the microsecond)."""
    entries = F.split(F.col(_TEXT), "\n", -1)
    if fmt is SourceFormat.CRI:
        pieces = F.transform(
            entries,
            lambda entry: F.concat(
                F.regexp_extract(entry, CRI_PATTERN, 4),
                F.when(F.regexp_extract(entry, CRI_PATTERN, 3) == "P", "").otherwise("\n"),
            ),
        )
        first = entries.getItem(0)
        stream = F.regexp_extract(first, CRI_PATTERN, 2)
        written_time = F.regexp_extract(first, CRI_PATTERN, 1)
        whole = F.forall(entries, lambda entry: entry.rlike(CRI_PATTERN))
        not_whole = RejectReason.NO_MATCH
    else:
        schema = StructType([StructField(name, StringType()) for name in ("log", "stream", "time")])
        parsed = F.transform(entries, lambda entry: F.from_json(entry, schema))
        pieces = F.transform(parsed, lambda entry: entry.getField("log"))
        stream = parsed.getItem(0).getField("stream")
        written_time = parsed.getItem(0).getField("time")
        whole = F.forall(
            parsed,
            lambda entry: (
                entry.isNotNull()
                & entry.getField("log").isNotNull()
                & entry.getField("stream").isin("stdout", "stderr")
            ),
        )
        not_whole = RejectReason.INVALID_JSON
    joined = F.array_join(pieces, "")
    message = F.regexp_replace(joined, "\n\\z", "")
    # Spark reads a time to the microsecond: the runtime's nanoseconds are cut there.
    runtime_time = F.try_to_timestamp(F.regexp_replace(written_time, r"(\.\d{6})\d+", "$1"))
    classified = (
        _with_text(rows)
        .withColumn(_FIELDS, F.when(whole, F.struct(message.alias("message"), stream.alias("s"))))
        .withColumn("event_time", F.when(F.col(_FIELDS).isNotNull(), runtime_time))
        .withColumn(
            _REASON,
            F.when(~F.col(_VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(F.col(_FIELDS).isNull(), F.lit(not_whole.value))
            .when(F.col("event_time").isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value)),
        )
    )
    parsed_message = F.col(_FIELDS).getField("message")
    return _split(
        classified,
        [
            parsed_message.alias("message"),
            F.col(_FIELDS).getField("s").alias("stream"),
            F.size(F.split(parsed_message, "\n", -1)).alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )


def event_id(fingerprint: Column, byte_offset: Column) -> Column:
    """``"<file_fingerprint>:<byte_offset>"``: the line's stable id across every sink."""
    return F.concat(fingerprint, F.lit(":"), byte_offset.cast("string"))


def utc_date(timestamp: Column) -> Column:
    """The UTC calendar date of ``timestamp``, whatever the session time zone.

    Exact while the microseconds since the epoch fit a double's 53 bits (years 1685 to 2255).
    """
    days = F.floor(F.unix_micros(timestamp) / F.lit(_MICROS_PER_DAY)).cast("int")
    return F.date_from_unix_date(days)


def _with_text(rows: DataFrame) -> DataFrame:
    """Add the line as a string and whether its bytes are valid UTF-8 (a null line is not)."""
    text = F.col("line").cast("string")
    return rows.withColumn(_TEXT, text).withColumn(
        _VALID, F.coalesce(F.is_valid_utf8(F.col(_TEXT)), F.lit(False))
    )


def _without_cr(text: Column) -> Column:
    """``text`` without the ``\\r`` of a CRLF line end (one trailing ``\\r``)."""
    return F.when(text.endswith("\r"), text.substr(F.lit(1), F.length(text) - 1)).otherwise(text)


def _without_crlf(text: Column) -> Column:
    """``text`` (an event's) without the ``\\r`` of its CRLF line ends: one trailing ``\\r``,
    and in a multiline event the ``\\r`` before each ``\\n`` (a regular expression runs on
    those only)."""
    several = F.col("event_lines") > 1
    return F.when(several, F.regexp_replace(text, _CRLF_ENDS, "")).otherwise(_without_cr(text))


def _nginx_field(name: str) -> Column:
    """One field of a matched line as a string (null for a line that did not match)."""
    return F.get(F.col(_FIELDS), NGINX_FIELDS.index(name)).cast("string")


def _unless_equal(value: Column, placeholder: str) -> Column:
    """``value``, or null where it equals ``placeholder``."""
    return F.when(value != placeholder, value)


def _json_time(value: Column) -> Column:
    """Epoch seconds or ISO-8601 text to a timestamp; null when it is neither."""
    seconds = value.try_cast("decimal(38,6)")
    in_range = F.abs(seconds) <= F.lit(_MAX_EPOCH_SECONDS)
    return F.when(
        value.rlike(_EPOCH_PATTERN), F.when(in_range, F.timestamp_seconds(seconds))
    ).otherwise(F.try_to_timestamp(value))


def rejected_files(rejected: Observation) -> set[tuple[int, str, str]]:
    """The ``(checkpoint_id, host, file_fingerprint)`` of the source files with rejects, as
    ``rejected`` (given to :func:`parse`) observed them; blocks until the job that classified
    the rows has finished. A set union: a task's result merged twice could not change it
    (Spark merges each partition's once: see ``spark_jobs.lake``)."""
    metrics: dict[str, Any] = rejected.get
    return {
        (int(key["checkpoint_id"]), str(key["host"]), str(key["file_fingerprint"]))
        for key in metrics[_REJECTED_FILES]
    }


def _split(
    classified: DataFrame,
    format_columns: Sequence[Column],
    rejected: Observation | None = None,
) -> ParseResult:
    """Project a classified frame into (parsed rows, rejects) on its ``_reason`` column, which
    an over-long line (``line_bytes`` set) overrides with ``line_too_long``; with ``rejected``,
    observe the source files with rejects on the classified frame, below both filters (a filter
    is not pushed below an observation), so that it sees every row.

    The optimizer pushes a filter below a projection by copying the projected expressions into
    it, which would run the whole parse twice per row (in the filter, then in the projection).
    It cannot push a filter below a projection holding a non-deterministic column, so the
    classification gets one (``_fence``, the partition id) and both filters reference it, which
    keeps the column from being pruned away.
    """
    fence = F.col(_FENCE) >= 0  # always true
    too_long = F.col("line_bytes").isNotNull()
    classified = classified.withColumn(
        _REASON, F.when(too_long, F.lit(RejectReason.LINE_TOO_LONG.value)).otherwise(F.col(_REASON))
    ).withColumn(_FENCE, F.spark_partition_id())
    if rejected is not None:
        file_key = F.struct("checkpoint_id", "host", "file_fingerprint")
        classified = classified.observe(
            rejected,
            F.collect_set(F.when(F.col(_REASON).isNotNull(), file_key)).alias(_REJECTED_FILES),
        )
    row_id = event_id(F.col("file_fingerprint"), F.col("byte_offset"))
    parsed = classified.where(F.col(_REASON).isNull() & fence).select(
        row_id.alias("event_id"),
        "file_fingerprint",
        "byte_offset",
        "host",
        "event_time",
        *format_columns,
        utc_date(F.col("event_time")).alias("event_date"),
        "checkpoint_id",
    )
    rejects = classified.where(F.col(_REASON).isNotNull() & fence).select(
        row_id.alias("event_id"),
        "file_fingerprint",
        "byte_offset",
        "host",
        "source",
        F.make_valid_utf8(F.col(_TEXT)).alias("raw_line"),
        F.coalesce(F.col("line_bytes"), F.octet_length(F.col("line")).cast("long")).alias(
            "line_bytes"
        ),
        F.col(_REASON).alias("reason"),
        "sealed_at",
        "checkpoint_id",
    )
    return parsed, rejects
