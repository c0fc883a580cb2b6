"""What the two syslog formats share: the priority (``<PRI>``: facility and severity), the
severity's keyword, an RFC 3339 time, and the NILVALUE ``-``."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_jobs.formats._common import MIN_MICROS

MAX_PRIORITY = 191
"""``<191>``: facility 23 (``local7``), severity 7 (``debug``)."""
SEVERITY_KEYWORDS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
"""The severities 0 to 7 by the keywords of ``logger -p`` and rsyslog's
``%syslogseverity-text%``."""
RFC3339_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)$"
"""The times RFC 5424 allows (``TIMESTAMP``): upper-case ``T`` and ``Z``, fractions of up to
six digits."""
RFC3339_LAYOUT = "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX"
"""Reads :data:`RFC3339_PATTERN`'s times (one to six digits of fraction, ``Z`` or an offset)."""
NIL = "-"


def priority_columns(priority: Column) -> list[Column]:
    """``facility``, ``severity`` and ``level`` of a ``PRI`` (digits as a string; null or
    empty: all three null)."""
    value = F.when(priority != "", priority.cast("int"))
    severity = value % 8
    keywords = F.array(*(F.lit(keyword) for keyword in SEVERITY_KEYWORDS))
    return [
        (value / 8).cast("int").alias("facility"),
        severity.alias("severity"),
        F.get(keywords, severity).alias("level"),
    ]


def valid_priority(priority: Column) -> Column:
    """Whether a ``PRI``'s digits are one RFC 5424 allows (0 to 191)."""
    return priority.cast("int") <= MAX_PRIORITY


def rfc3339_time(text: Column) -> Column:
    """An RFC 3339 time (:data:`RFC3339_PATTERN`) as a timestamp; null for any other text, a
    date that does not exist (a 31st of November) or a year 0."""
    stamp = F.try_to_timestamp(text, F.lit(RFC3339_LAYOUT))
    return F.when(
        text.rlike(RFC3339_PATTERN) & (F.unix_micros(stamp) >= MIN_MICROS),
        stamp,
    )


def unless_nil(value: Column) -> Column:
    """``value``, or null for the NILVALUE ``-``."""
    return F.when(value != NIL, value)
