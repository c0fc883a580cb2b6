"""What every format's parser shares: the staging and reject columns, the classification's
private columns, and the projection of a classified frame into parsed rows and rejects
(:func:`split_classified`), which every parser ends with."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipeline_core.formats import ColumnType, JsonColumn, RejectReason
from spark_jobs.jvm_functions import PATTERN_GROUPS, enable_jvm_functions

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

_CRLF_ENDS = r"\r(?=\n)|\r\z"
"""The ``\\r`` of an event's CRLF line ends: before each ``\\n``, and at its very end."""
MIN_MICROS = -62_135_596_800_000_000
"""0001-01-01T00:00:00Z: Spark reads a year of 0000, or -2026, as ``yyyy``; no log writes it."""
_MICROS_PER_DAY = 86_400_000_000
_MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
_EPOCH_PATTERN = r"^\s*-?\d+(\.\d*)?([eE][+-]?\d+)?\s*$"
_NUMBER_PATTERN = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
"""A number's text, as a decimal reads it."""
_CASTS = {ColumnType.INT: "int", ColumnType.LONG: "long"}

# Private columns of the classification step; never written.
TEXT = "_text"
VALID = "_valid_utf8"
FIELDS = "_fields"
TIME = "_time"
REASON = "_reason"
_GROUPS = "_groups"
_FENCE = "_fence"
_REWRITTEN = "_rewritten"
_SEPARATOR = "\x01"
_REJECTED_FILES = "rejected_files"
"""The observed metric: the distinct ``(checkpoint_id, host, file_fingerprint)`` of rejects."""


def event_id(fingerprint: Column, byte_offset: Column) -> Column:
    """``"<file_fingerprint>:<byte_offset>"``: the line's stable id across every sink."""
    return F.concat(fingerprint, F.lit(":"), byte_offset.cast("string"))


def utc_date(timestamp: Column) -> Column:
    """The UTC calendar date of ``timestamp``, whatever the session time zone.

    Exact while the microseconds since the epoch fit a double's 53 bits (years 1685 to 2255).
    """
    days = F.floor(F.unix_micros(timestamp) / F.lit(_MICROS_PER_DAY)).cast("int")
    return F.date_from_unix_date(days)


def with_text(rows: DataFrame) -> DataFrame:
    """Add the line as a string and whether its bytes are valid UTF-8 (a null line is not)."""
    text = F.col("line").cast("string")
    return rows.withColumn(TEXT, text).withColumn(
        VALID, F.coalesce(F.is_valid_utf8(F.col(TEXT)), F.lit(False))
    )


def with_pattern_fields(rows: DataFrame, pattern: str, groups: int) -> DataFrame:
    """Add ``FIELDS``: for a valid UTF-8 line (``with_text``'s) that ``pattern`` matches, the
    text of its ``groups`` groups in order (an unmatched one empty); null for other lines.

    One regular expression pass: the line is rewritten into its groups joined by ``\\x01``,
    then split. ``pattern`` must match the whole line, must keep ``\\x01`` out of its groups
    (a control character in a field makes the line not match) and must drop at least one
    character of every line it matches: a rewrite that leaves the line unchanged is how a
    line that did not match is told apart.
    """
    text = F.col(TEXT)
    replacement = _SEPARATOR.join(f"${group}" for group in range(1, groups + 1))
    rewritten = F.when(F.col(VALID), F.regexp_replace(text, pattern, replacement))
    return rows.withColumn(_REWRITTEN, rewritten).withColumn(
        FIELDS,
        F.when(F.col(_REWRITTEN) != text, F.split(F.col(_REWRITTEN), _SEPARATOR, -1)),
    )


class PatternMatcher(Enum):
    """How a format's pattern is matched against an event's text; both decide and capture
    alike (Java's regular expressions, the first match found)."""

    JVM = "jvm"
    """The Java function ``sluice.spark.PatternGroups``: one match gives every group
    (``spark_jobs.jvm_functions``)."""
    REGEX = "regex"
    """Spark SQL only: ``rlike``, then a ``regexp_extract`` per group, each a match of its own
    over the whole text (a multiline event's too)."""


def pattern_matcher(spark: SparkSession) -> PatternMatcher:
    """``JVM`` when ``spark`` has the landing's Java functions, ``REGEX`` otherwise."""
    return PatternMatcher.JVM if enable_jvm_functions(spark) else PatternMatcher.REGEX


@dataclass(frozen=True)
class PatternMatch:
    """A pattern matched against each row's ``with_text`` text: whether it matched (false
    for text that is not valid UTF-8), and a group's text (empty when the group took no part;
    meaningless where it did not match)."""

    matched: Column
    group: Callable[[int], Column]
    """A group's text by its number (from 1)."""


def match_pattern(
    rows: DataFrame, pattern: str, matcher: PatternMatcher | None = None
) -> tuple[DataFrame, PatternMatch]:
    """``rows`` (with ``with_text``'s columns) and ``pattern`` matched against their text with
    ``matcher`` (None: :func:`pattern_matcher`'s choice for the rows' session). With ``JVM``
    the match is a column of its own, taken once and read by every group."""
    text = F.col(TEXT)
    if matcher is None:
        matcher = pattern_matcher(rows.sparkSession)
    if matcher is PatternMatcher.REGEX:
        return rows, PatternMatch(
            F.col(VALID) & text.rlike(pattern),
            lambda number: F.regexp_extract(text, pattern, number),
        )
    groups = F.col(_GROUPS)
    matched = rows.withColumn(_GROUPS, F.when(F.col(VALID), PATTERN_GROUPS(text, F.lit(pattern))))
    return matched, PatternMatch(groups.isNotNull(), lambda number: groups.getItem(number - 1))


def pattern_reason() -> Column:
    """The reject reason of a format that matches a line's text into ``FIELDS`` and reads
    ``event_time`` from it: ``invalid_utf8``, ``no_match`` (no fields), ``bad_timestamp`` (no
    time), in that order; null for a line that parsed."""
    return (
        F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
        .when(F.col(FIELDS).isNull(), F.lit(RejectReason.NO_MATCH.value))
        .when(F.col("event_time").isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value))
    )


def unless_equal(value: Column, placeholder: str) -> Column:
    """``value``, or null where it equals ``placeholder`` (a log's ``-`` for none)."""
    return F.when(value != placeholder, value)


def without_cr(text: Column) -> Column:
    """``text`` without the ``\\r`` of a CRLF line end (one trailing ``\\r``)."""
    return F.when(text.endswith("\r"), text.substr(F.lit(1), F.length(text) - 1)).otherwise(text)


def without_crlf(text: Column) -> Column:
    """``text`` (an event's) without the ``\\r`` of its CRLF line ends: one trailing ``\\r``,
    and in a multiline event the ``\\r`` before each ``\\n`` (a regular expression runs only
    on those that hold a ``\\r``: a byte search tells the others)."""
    several = (F.col("event_lines") > 1) & text.contains("\r")
    return F.when(several, F.regexp_replace(text, _CRLF_ENDS, "")).otherwise(without_cr(text))


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


def split_classified(
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
        REASON, F.when(too_long, F.lit(RejectReason.LINE_TOO_LONG.value)).otherwise(F.col(REASON))
    ).withColumn(_FENCE, F.spark_partition_id())
    if rejected is not None:
        file_key = F.struct("checkpoint_id", "host", "file_fingerprint")
        classified = classified.observe(
            rejected,
            F.collect_set(F.when(F.col(REASON).isNotNull(), file_key)).alias(_REJECTED_FILES),
        )
    row_id = event_id(F.col("file_fingerprint"), F.col("byte_offset"))
    parsed = classified.where(F.col(REASON).isNull() & fence).select(
        row_id.alias("event_id"),
        "file_fingerprint",
        "byte_offset",
        "host",
        "event_time",
        *format_columns,
        utc_date(F.col("event_time")).alias("event_date"),
        "checkpoint_id",
    )
    rejects = classified.where(F.col(REASON).isNotNull() & fence).select(
        row_id.alias("event_id"),
        "file_fingerprint",
        "byte_offset",
        "host",
        "source",
        F.make_valid_utf8(F.col(TEXT)).alias("raw_line"),
        F.coalesce(F.col("line_bytes"), F.octet_length(F.col("line")).cast("long")).alias(
            "line_bytes"
        ),
        F.col(REASON).alias("reason"),
        "sealed_at",
        "checkpoint_id",
    )
    return parsed, rejects


def declared_values(
    written: Sequence[tuple[JsonColumn, Column]], rescued_name: str
) -> list[Column]:
    """A column per declared key from its ``written`` text, cast to the key's type (null when
    missing, null, or of another type), and ``rescued_name``: the keys whose value was not of
    its type, with the value as text (null when there are none)."""
    if not written:
        return []
    columns, misfits = [], []
    for column, text in written:
        typed = typed_value(text, column.type)
        columns.append(typed.alias(column.name))
        misfits.append(F.when(text.isNotNull() & typed.isNull(), F.struct(F.lit(column.key), text)))
    entries = F.filter(F.array(*misfits), lambda entry: entry.isNotNull())
    rescued = F.when(F.size(entries) > 0, F.map_from_entries(entries))
    return [*columns, rescued.alias(rescued_name)]


def typed_value(written: Column, kind: ColumnType) -> Column:
    """``written`` (text) as ``kind``: a number, ``true``/``false``, a time (:func:`json_time`);
    null when it is not one (an ``int`` takes ``42``, not ``4.2`` nor a number past its range)."""
    if kind is ColumnType.STRING:
        return written
    if kind is ColumnType.TIMESTAMP:
        return json_time(written)
    if kind is ColumnType.BOOLEAN:
        return F.when(written == "true", True).when(written == "false", False)
    double = written.try_cast("double")
    if kind is ColumnType.DOUBLE:
        # Not through a decimal, whose scale rounds digits away (1e-12 to 0) and whose
        # precision refuses a large number (1e30); the text must still be a finite number.
        return F.when(written.rlike(_NUMBER_PATTERN) & (F.abs(double) < F.lit(math.inf)), double)
    number = written.try_cast("decimal(38,10)")
    # Whole as written, not only once the decimal's scale has rounded it (4.00000000001, 1e-300);
    # the double's remainder, not its floor (a bigint, which overflows past 2**63).
    whole = (number == F.floor(number)) & (double % F.lit(1.0) == F.lit(0.0))
    return F.when(whole, number.try_cast(_CASTS[kind]))


def json_time(value: Column) -> Column:
    """Epoch seconds (a number, or its text; fractions to the microsecond) or ISO-8601 text
    to a timestamp; null when it is neither."""
    seconds = value.try_cast("decimal(38,6)")
    in_range = F.abs(seconds) <= F.lit(_MAX_EPOCH_SECONDS)
    return F.when(
        value.rlike(_EPOCH_PATTERN), F.when(in_range, F.timestamp_seconds(seconds))
    ).otherwise(F.try_to_timestamp(value))
