"""``python_logging``: what Python's ``logging`` writes, read back with its format string.

The source's ``log_format`` (``pipeline_core.formats.python_log_layout``) becomes one anchored
regular expression, run once per event; each placeholder is a group. ``message`` is the
``%(message)s`` group up to what ``logging`` appended to it (its traceback, its
``stack_info``: ``pipeline_core.formats.TRACEBACK_PATTERN``), which is ``exception``; both
without the ``\\r`` of CRLF line ends. ``event_time`` is ``%(asctime)s`` read in the source's
``timezone`` (``logging`` writes local time without an offset), or ``%(created)f``, or the
seal time when the format names neither. Rejects: ``invalid_utf8``, ``no_match`` (the event
does not match the format), ``bad_timestamp`` (an ``asctime`` that is no time, such as a
13th month).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import (
    ASCTIME_LAYOUT,
    TRACEBACK_PATTERN,
    python_log_layout,
)
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    TIME,
    ParseResult,
    PatternMatcher,
    match_pattern,
    pattern_reason,
    split_classified,
    with_text,
    without_crlf,
)


def parse_python_logging(
    rows: DataFrame,
    log_format: str,
    timezone: str,
    rejected: Observation | None = None,
    matcher: PatternMatcher | None = None,
) -> ParseResult:
    """Parse ``logging`` records written with ``log_format`` (see the module doc), the
    format's pattern matched with ``matcher`` (None: the session's best)."""
    layout = python_log_layout(log_format)
    classified, match = match_pattern(with_text(rows), layout.pattern, matcher)

    def group(attribute: str) -> Column | None:
        number = layout.group(attribute)
        if number is None:
            return None
        return match.group(number)

    def field(name: str) -> Column:
        return F.col(FIELDS).getField(name)

    captured = {
        name: value
        for name, value in (
            ("level", group("levelname")),
            ("logger", group("name")),
            ("body", group("message")),
            ("asctime", group("asctime")),
            ("created", group("created")),
            ("filename", group("filename") if layout.group("filename") else group("pathname")),
            ("lineno", group("lineno")),
            ("func_name", group("funcName")),
            ("process", group("process")),
            ("thread_name", group("threadName")),
        )
        if value is not None
    }
    fields = F.struct(*(value.alias(name) for name, value in captured.items()))
    classified = classified.withColumn(FIELDS, F.when(match.matched, fields))
    time = F.lit(None).cast("timestamp")
    if "asctime" in captured:
        local = F.try_to_timestamp(field("asctime"), F.lit(ASCTIME_LAYOUT))
        time = F.to_utc_timestamp(local, timezone)
    elif "created" in captured:
        # As a decimal: through a double, the microseconds ``%(created)f`` wrote may be cut by one.
        time = F.timestamp_seconds(field("created").cast("decimal(38,6)"))
    dated = "asctime" in captured or "created" in captured
    classified = (
        classified.withColumn(TIME, time)
        .withColumn("event_time", F.col(TIME) if dated else F.col("sealed_at"))
        .withColumn(
            REASON,
            pattern_reason(),
        )
    )
    # The body cut once, at the newline before what ``logging`` appended (a split counts in
    # characters alike on both sides; a position from ``regexp_instr`` is in UTF-16 units).
    pieces = F.split(field("body"), TRACEBACK_PATTERN, 2)
    message = without_crlf(pieces.getItem(0))
    exception = F.when(F.size(pieces) > 1, without_crlf(pieces.getItem(1)))

    def optional(name: str, kind: str) -> Column:
        value = field(name) if name in captured else F.lit(None)
        return value.cast(kind).alias(name)

    return split_classified(
        classified,
        [
            optional("level", "string"),
            optional("logger", "string"),
            message.alias("message"),
            exception.alias("exception"),
            optional("filename", "string"),
            optional("lineno", "int"),
            optional("func_name", "string"),
            optional("process", "long"),
            optional("thread_name", "string"),
            F.col("event_lines").cast("int").alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )
