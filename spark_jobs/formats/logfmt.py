"""``logfmt``: ``key=value`` pairs separated by spaces, one record a line
(``time=2026-11-28T10:00:00Z level=info msg="served it" status=200``).

A value is a run of characters without a space or a quote, or a double-quoted string in which
``\\"``, ``\\\\``, ``\\n``, ``\\r`` and ``\\t`` are escapes; a key without ``=`` (a flag) has an
empty value. ``fields`` maps every key to its value (unquoted, unescaped; a repeated key keeps
its first value). ``level`` is the value of ``level`` (or ``lvl``); ``message`` of ``msg`` (or
``message``, or ``event``, structlog's name). The keys a source declares (``columns``) land in
typed columns after them, the values not of their type in ``rescued``, as in ``json_lines``.
``event_time`` is the value of the source's ``time_field`` (default: ``time``, else ``ts``,
else ``timestamp``): epoch seconds or ISO 8601; the seal time when there is none, a
``bad_timestamp`` reject when it is not a time. A line that is not pairs alone is a
``no_match`` reject. Rejects: ``invalid_utf8``, ``no_match``, ``bad_timestamp``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import RESCUED_COLUMN, JsonColumn, RejectReason
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    TEXT,
    TIME,
    VALID,
    ParseResult,
    declared_values,
    json_time,
    split_classified,
    with_text,
    without_cr,
)

_KEY = r'[^\s="]+'
_VALUE = r'"(?:[^"\\]|\\.)*"|[^\s"]*'
PAIR = rf"({_KEY})(?:=({_VALUE}))?"
"""One pair: group 1 its key, group 2 its value as written (quoted or not; empty for a flag)."""
RECORD = rf"^[ \t]*{PAIR}(?:[ \t]+{PAIR})*[ \t]*$"
"""A whole line of pairs."""
DEFAULT_TIME_FIELDS = ("time", "ts", "timestamp")
_BACKSLASH = "\uffff"
"""Stands for an escaped backslash while the other escapes are undone (a noncharacter: no text
holds it)."""


def parse_logfmt(
    rows: DataFrame,
    time_field: str | None = None,
    rejected: Observation | None = None,
    declared: Sequence[JsonColumn] = (),
) -> ParseResult:
    """Parse logfmt records (see the module doc)."""
    text = without_cr(F.col(TEXT))
    matched = text.rlike(RECORD)
    classified = with_text(rows).withColumn(FIELDS, F.when(F.col(VALID) & matched, pairs(text)))
    fields = F.col(FIELDS)
    times = [time_field] if time_field is not None else list(DEFAULT_TIME_FIELDS)
    written_time = F.coalesce(*(fields.getItem(name) for name in times))
    classified = (
        classified.withColumn(TIME, json_time(written_time))
        .withColumn(
            REASON,
            F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(fields.isNull(), F.lit(RejectReason.NO_MATCH.value))
            .when(
                written_time.isNotNull() & F.col(TIME).isNull(),
                F.lit(RejectReason.BAD_TIMESTAMP.value),
            ),
        )
        .withColumn("event_time", F.coalesce(F.col(TIME), F.col("sealed_at")))
    )
    return split_classified(
        classified,
        [
            F.coalesce(fields.getItem("level"), fields.getItem("lvl")).alias("level"),
            F.coalesce(*(fields.getItem(k) for k in ("msg", "message", "event"))).alias("message"),
            fields.alias("fields"),
            *declared_values([(c, fields.getItem(c.key)) for c in declared], RESCUED_COLUMN),
        ],
        rejected,
    )


def pairs(text: Column) -> Column:
    """Every ``key=value`` of a line as a map (a repeated key: its first value)."""
    keys = F.regexp_extract_all(text, F.lit(PAIR), 1)
    values = F.transform(F.regexp_extract_all(text, F.lit(PAIR), 2), _unquoted)
    entries = F.arrays_zip(keys.alias("key"), values.alias("value"))
    first = F.filter(
        entries, lambda entry, i: F.array_position(keys, entry.getField("key")) == i + 1
    )
    return F.map_from_entries(first)


def _unquoted(value: Column) -> Column:
    """A value as written, its quotes taken off and its escapes undone."""
    inner = value.substr(F.lit(2), F.length(value) - 2)
    undone = F.regexp_replace(inner, r"\\\\", _BACKSLASH)
    for escaped, plain in ((r'\\"', '"'), (r"\\n", "\n"), (r"\\r", "\r"), (r"\\t", "\t")):
        undone = F.regexp_replace(undone, escaped, plain)
    undone = F.regexp_replace(undone, _BACKSLASH, r"\\")  # Java's replacement for one
    quoted = value.startswith('"') & (F.length(value) >= 2)
    return F.when(quoted, undone).otherwise(value)
