"""``spark_log4j``: Spark's log4j2 log in Spark's default pattern,
``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``.

One anchored regular expression per event (:data:`SPARK_LOG4J_PATTERN`) gives the time, level,
logger and body; the body is cut where the exception ``%ex`` printed begins: the first line
after the first that names a Java throwable's class (``java.lang.IllegalStateException: boom``,
``org.apache.spark.api.python.PythonException: Traceback ...``), so a message whose first line
is followed by its exception keeps that exception apart, its Python traceback included.
``event_time`` is the time read in the source's ``timezone``. Rejects: ``invalid_utf8``,
``no_match``, ``bad_timestamp``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    ParseResult,
    PatternMatcher,
    match_pattern,
    pattern_reason,
    split_classified,
    with_text,
    without_crlf,
)

SPARK_LOG4J_PATTERN = r"(?s)^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) ([A-Z]+) (\S+?): (.*)$"
"""A record: its time, level, logger and body (message, then exception)."""
SPARK_TIME_LAYOUT = "yy/MM/dd HH:mm:ss"
EXCEPTION_START = (
    r"\n(?=(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable|Failure)[\w$]*(?::|\r?\n|\z))"
)
"""Where a record's ``%ex`` begins: the newline before the line naming the throwable's class."""


def parse_spark_log4j(
    rows: DataFrame,
    timezone: str,
    rejected: Observation | None = None,
    matcher: PatternMatcher | None = None,
) -> ParseResult:
    """Parse Spark's log4j2 records (see the module doc), the pattern matched with
    ``matcher`` (None: the session's best)."""
    classified, match = match_pattern(with_text(rows), SPARK_LOG4J_PATTERN, matcher)
    fields = F.struct(
        match.group(1).alias("time"),
        match.group(2).alias("level"),
        match.group(3).alias("logger"),
        match.group(4).alias("body"),
    )
    classified = classified.withColumn(FIELDS, F.when(match.matched, fields))
    field = F.col(FIELDS).getField
    local = F.try_to_timestamp(field("time"), F.lit(SPARK_TIME_LAYOUT))
    classified = classified.withColumn(
        "event_time", F.to_utc_timestamp(local, timezone)
    ).withColumn(
        REASON,
        pattern_reason(),
    )
    # The body cut once, at the newline before the exception's first line.
    pieces = F.split(field("body"), EXCEPTION_START, 2)
    message = pieces.getItem(0)
    exception = F.when(F.size(pieces) > 1, pieces.getItem(1))
    return split_classified(
        classified,
        [
            field("level").alias("level"),
            field("logger").alias("logger"),
            without_crlf(message).alias("message"),
            without_crlf(exception).alias("exception"),
            F.col("event_lines").cast("int").alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )
