"""``syslog_rfc3164``: BSD syslog lines as rsyslog writes its files.

``[<PRI>]TIMESTAMP SP HOSTNAME SP TAG[[PID]][:] SP MSG``, as one anchored regular expression
(:data:`SYSLOG_RFC3164_PATTERN`), the ``<PRI>`` only in a message as it came over the wire.
The TIMESTAMP is either BSD's ``Mmm dd HH:MM:SS`` (``RSYSLOG_TraditionalFileFormat``; the day
padded with a space) or an RFC 3339 time (``RSYSLOG_FileFormat``, what Debian writes to
``/var/log/syslog`` since 12); each line is read by the one it has. ``app_name`` is the tag
up to a ``[``, a ``:`` or a space; ``proc_id`` what its brackets hold; ``message`` what follows
the tag's colon and one space (without the ``\\r`` of CRLF line ends). A ``hostname`` of
``-`` (rsyslog's for a message that named none) is null.

A BSD time has no zone and no year. It is read in the source's ``timezone``, in the year the
seal time has in that zone, or the year before when its month is after the seal time's
month: a line is sealed after it was written, and within a year of it. An RFC 3339 time has
its own offset. Rejects: ``invalid_utf8``, ``no_match`` (not such a line, or a ``PRI`` over
191), ``bad_timestamp`` (a month that is no English abbreviation, a day that month does not
have in the year inferred, an hour 24, an RFC 3339 time without its offset...).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import RejectReason
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    VALID,
    ParseResult,
    PatternMatcher,
    match_pattern,
    split_classified,
    with_text,
    without_crlf,
)
from spark_jobs.formats._syslog import (
    priority_columns,
    rfc3339_time,
    unless_nil,
    valid_priority,
)

SYSLOG_RFC3164_PATTERN = (
    r"(?s)^(?:<(\d{1,3})>)?"
    r"(?:([A-Z][a-z]{2}) ([ \d]\d) (\d\d:\d\d:\d\d)|(\d{4}-\d\d-\d\dT[!-~]+))"
    r" ([!-~]+) ([^\s\[:]+)(?:\[([^\]\s]*)\])?:?(?: (.*))?\z"
)
"""A line: its PRI; the BSD time's month, day and time, or the RFC 3339 time; HOSTNAME; the
tag's name and PID; MSG."""
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_GROUPS = (
    "priority", "month", "day", "clock", "rfc3339", "hostname", "app_name", "proc_id", "message",
)  # fmt: skip


def parse_syslog_rfc3164(
    rows: DataFrame,
    timezone: str,
    rejected: Observation | None = None,
    matcher: PatternMatcher | None = None,
) -> ParseResult:
    """Parse BSD syslog lines, their BSD times in ``timezone`` (see the module doc), the
    pattern matched with ``matcher`` (None: the session's best)."""
    classified, match = match_pattern(with_text(rows), SYSLOG_RFC3164_PATTERN, matcher)
    fields = F.struct(
        *(match.group(number).alias(name) for number, name in enumerate(_GROUPS, start=1))
    )
    classified = classified.withColumn(FIELDS, F.when(match.matched, fields))
    field = F.col(FIELDS).getField
    priority = field("priority")
    classified = classified.withColumn(
        "event_time",
        F.when(field("rfc3339") != "", rfc3339_time(field("rfc3339"))).otherwise(
            bsd_time(field("month"), field("day"), field("clock"), timezone)
        ),
    ).withColumn(
        REASON,
        F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
        .when(
            F.col(FIELDS).isNull() | ((priority != "") & ~valid_priority(priority)),
            F.lit(RejectReason.NO_MATCH.value),
        )
        .when(F.col("event_time").isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value)),
    )
    return split_classified(
        classified,
        [
            *priority_columns(priority),
            unless_nil(field("hostname")).alias("hostname"),
            field("app_name").alias("app_name"),
            F.when(field("proc_id") != "", field("proc_id")).alias("proc_id"),
            without_crlf(field("message")).alias("message"),
        ],
        rejected,
    )


def bsd_time(month: Column, day: Column, clock: Column, timezone: str) -> Column:
    """``Mmm dd HH:MM:SS`` in ``timezone``, in the seal time's year there, or the year before
    when ``month`` is after the seal time's; null when it is no time."""
    number = F.array_position(F.array(*(F.lit(name) for name in MONTHS)), month)
    sealed = F.from_utc_timestamp(F.col("sealed_at"), timezone)  # its wall clock there
    year = F.year(sealed) - F.when(number > F.month(sealed), 1).otherwise(0)
    local = F.try_to_timestamp(
        F.concat_ws(" ", F.concat_ws("-", year, number, F.trim(day)), clock),
        F.lit("yyyy-M-d HH:mm:ss"),
    )
    return F.when(number > 0, F.to_utc_timestamp(local, timezone))
