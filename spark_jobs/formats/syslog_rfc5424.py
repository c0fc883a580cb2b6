"""``syslog_rfc5424``: syslog messages of RFC 5424, one a line (rsyslog's
``RSYSLOG_SyslogProtocol23Format``).

``<PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP STRUCTURED-DATA
[SP MSG]``, as one anchored regular expression (:data:`SYSLOG_RFC5424_PATTERN`): the header
fields are printable US-ASCII of the RFC's lengths, the structured data ``-`` or elements
``[SD-ID PARAM-NAME="value" ...]`` whose values escape ``"``, ``\\`` and ``]`` with a
backslash. A header field that is ``-`` is null. ``structured_data`` is a map keyed
``<SD-ID>.<PARAM-NAME>`` (a name repeated in an element keeps its first value); ``message`` is
``MSG`` without a leading UTF-8 byte order mark (and the ``\\r`` of CRLF line ends), null when
the line ends after the structured data. ``event_time`` is ``TIMESTAMP`` with its offset, or
the seal time for ``-``. Rejects: ``invalid_utf8``, ``no_match`` (not such a message, or a
``PRI`` over 191), ``bad_timestamp`` (a ``TIMESTAMP`` that is no RFC 3339 time, such as a
13th month, a time without its offset or fractions of more than six digits).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import RejectReason
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    TIME,
    VALID,
    ParseResult,
    PatternMatcher,
    match_pattern,
    pattern_matcher,
    split_classified,
    with_text,
    without_crlf,
)
from spark_jobs.formats._syslog import (
    NIL,
    priority_columns,
    rfc3339_time,
    unless_nil,
    valid_priority,
)
from spark_jobs.jvm_functions import STRUCTURED_DATA

SD_NAME = r"[!#-<>-\\^-~]{1,32}"
"""An SD-ID or a PARAM-NAME: printable US-ASCII but ``=``, ``]`` and ``"``."""
_SD_VALUE = r'(?:[^"\\]|\\.)*+'
"""A PARAM-VALUE's text, between its quotes: a ``"`` or ``\\`` in it is escaped (a ``]``
should be, but is taken as it is either way)."""
SD_PARAM = rf' ({SD_NAME})="({_SD_VALUE})"'
"""One parameter: its name and its value, escaped, the groups."""
_SD_PARAMS = rf'(?: {SD_NAME}="{_SD_VALUE}")*+'
SD_ELEMENT = rf"\[({SD_NAME}){_SD_PARAMS}\]"
"""One element, its SD-ID the group."""
_SD_ELEMENTS = rf"(?:\[{SD_NAME}{_SD_PARAMS}\])++"
SYSLOG_RFC5424_PATTERN = (
    r"(?s)^<(\d{1,3})>([1-9]\d{0,2}) ([!-~]+) ([!-~]{1,255}) ([!-~]{1,48}) ([!-~]{1,128}) "
    rf"([!-~]{{1,32}}) (-|{_SD_ELEMENTS})( .*)?\z"
)
"""A message: its PRI, VERSION, TIMESTAMP, HOSTNAME, APP-NAME, PROCID, MSGID,
STRUCTURED-DATA, and `` MSG`` (empty when there is none). The TIMESTAMP is any printable
text here, checked as a time apart (a wrong one is a ``bad_timestamp``)."""
_BOM = "\ufeff"
_ESCAPED = r'\\(["\\\]])'
"""An escaped ``"``, ``\\`` or ``]`` in a PARAM-VALUE; the group is the character."""
_GROUPS = (
    "priority", "version", "timestamp", "hostname", "app_name", "proc_id", "msg_id",
    "structured_data", "message",
)  # fmt: skip


def parse_syslog_rfc5424(
    rows: DataFrame, rejected: Observation | None = None, matcher: PatternMatcher | None = None
) -> ParseResult:
    """Parse RFC 5424 messages (see the module doc), the pattern matched with ``matcher``
    (None: the session's best)."""
    if matcher is None:
        matcher = pattern_matcher(rows.sparkSession)
    classified, match = match_pattern(with_text(rows), SYSLOG_RFC5424_PATTERN, matcher)
    fields = F.struct(
        *(match.group(number).alias(name) for number, name in enumerate(_GROUPS, start=1))
    )
    classified = classified.withColumn(FIELDS, F.when(match.matched, fields))
    field = F.col(FIELDS).getField
    nil_time = field("timestamp") == NIL
    classified = (
        classified.withColumn(TIME, rfc3339_time(field("timestamp")))
        .withColumn("event_time", F.when(nil_time, F.col("sealed_at")).otherwise(F.col(TIME)))
        .withColumn(
            REASON,
            F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(
                F.col(FIELDS).isNull() | ~valid_priority(field("priority")),
                F.lit(RejectReason.NO_MATCH.value),
            )
            .when(F.col("event_time").isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value)),
        )
    )
    spaced = field("message")  # " MSG", or "" when there is none
    text = spaced.substr(F.lit(2), F.length(spaced))
    message = F.when(
        spaced != "",
        F.when(text.startswith(_BOM), text.substr(F.lit(2), F.length(text))).otherwise(text),
    )
    return split_classified(
        classified,
        [
            *priority_columns(field("priority")),
            field("version").cast("int").alias("version"),
            unless_nil(field("hostname")).alias("hostname"),
            unless_nil(field("app_name")).alias("app_name"),
            unless_nil(field("proc_id")).alias("proc_id"),
            unless_nil(field("msg_id")).alias("msg_id"),
            structured_data(field("structured_data"), matcher).alias("structured_data"),
            without_crlf(message).alias("message"),
        ],
        rejected,
    )


def structured_data(text: Column, matcher: PatternMatcher = PatternMatcher.REGEX) -> Column:
    """``STRUCTURED-DATA`` (matched: ``-`` or whole elements) as a map of each parameter's
    unescaped value by ``<SD-ID>.<PARAM-NAME>``, a name repeated in an element with its first
    value; ``-`` is an empty map. With ``JVM``, read in one pass by the Java function
    ``sluice.spark.StructuredData``; otherwise by Spark's regular expressions (four per
    element, and one per escaped value)."""
    if matcher is PatternMatcher.JVM:
        return STRUCTURED_DATA(text)
    elements = F.regexp_extract_all(text, F.lit(SD_ELEMENT), 0)

    def entries(element: Column) -> Column:
        sd_id = F.regexp_extract(element, SD_ELEMENT, 1)
        names = F.regexp_extract_all(element, F.lit(SD_PARAM), 1)
        values = F.regexp_extract_all(element, F.lit(SD_PARAM), 2)
        return F.zip_with(
            names,
            values,
            lambda name, value: F.struct(
                F.concat(sd_id, F.lit("."), name).alias("key"),
                # The pattern runs only on a value that holds an escape.
                F.when(value.contains("\\"), F.regexp_replace(value, _ESCAPED, "$1"))
                .otherwise(value)
                .alias("value"),
            ),
        )

    pairs = F.flatten(F.transform(elements, entries))
    keys = F.transform(pairs, lambda pair: pair.getField("key"))
    first = F.filter(pairs, lambda pair, i: F.array_position(keys, pair.getField("key")) == i + 1)
    return F.map_from_entries(first)
