"""``regex``: the source's own pattern, a column per named group (``pipeline_core.formats``'s
``user_pattern`` checked it and gives it in Java's syntax).

An event that the pattern does not match from its start is a ``no_match`` reject. Each group's
text lands in its column cast to its declared type: an empty group is null, and so is a value
of another type (``try_cast``: ``abc`` for an ``int``), the row kept. A ``timestamp`` column is
read with the source's ``time_layout`` (a Spark datetime pattern; without one, ISO 8601), in
its ``timezone`` unless the layout, or without a layout the text, states an offset. The
``time_column`` gives ``event_time``: a text there that is not a time is a ``bad_timestamp``
reject; without a ``time_column`` it is the seal time. Rejects: ``invalid_utf8``,
``no_match``, ``bad_timestamp``.
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import ColumnType, UserPattern
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    ParseResult,
    PatternMatcher,
    match_pattern,
    pattern_reason,
    split_classified,
    with_text,
)

_STATES_OFFSET = r"(?:Z|[+-]\d\d(?::?\d\d)?)\z"
"""A time without a layout that ends in an offset (ISO 8601's ``Z`` or ``+01:00``)."""
_ZONE_LETTERS = re.compile(r"[XxZzOV]")
_QUOTED = re.compile(r"'[^']*'")
_CASTS = {
    ColumnType.INT: "int",
    ColumnType.LONG: "long",
    ColumnType.DOUBLE: "double",
    ColumnType.BOOLEAN: "boolean",
}


def parse_regex(
    rows: DataFrame,
    pattern: UserPattern,
    time_column: str | None,
    time_layout: str | None,
    timezone: str,
    rejected: Observation | None = None,
    matcher: PatternMatcher | None = None,
) -> ParseResult:
    """Parse events with the source's ``pattern`` (see the module doc), matched with
    ``matcher`` (None: the session's best)."""
    classified, match = match_pattern(with_text(rows), pattern.java_pattern, matcher)
    groups = F.struct(
        *(match.group(pattern.group(name)).alias(name) for name, _ in pattern.columns)
    )
    classified = classified.withColumn(FIELDS, F.when(match.matched, groups))
    values = {
        name: _typed(F.col(FIELDS).getField(name), kind, time_layout, timezone)
        for name, kind in pattern.columns
    }
    event_time = values[time_column] if time_column is not None else F.col("sealed_at")
    classified = classified.withColumn("event_time", event_time).withColumn(
        REASON,
        pattern_reason(),
    )
    return split_classified(
        classified,
        [value.alias(name) for name, value in values.items()],
        rejected,
    )


def _typed(group: Column, kind: ColumnType, layout: str | None, timezone: str) -> Column:
    """A group's text as its column: null when empty or not of ``kind``."""
    value = F.when(group != "", group)
    if kind is ColumnType.STRING:
        return value
    if kind is ColumnType.TIMESTAMP:
        return _timestamp(value, layout, timezone)
    return value.try_cast(_CASTS[kind])


def _timestamp(value: Column, layout: str | None, timezone: str) -> Column:
    if layout is None:
        parsed = F.try_to_timestamp(value)
        return F.when(value.rlike(_STATES_OFFSET), parsed).otherwise(
            F.to_utc_timestamp(parsed, timezone)
        )
    parsed = F.try_to_timestamp(value, F.lit(layout))
    if _ZONE_LETTERS.search(_QUOTED.sub("", layout)):
        return parsed
    return F.to_utc_timestamp(parsed, timezone)
