"""``cri`` and ``docker_json``: a container runtime's log, as the events its program printed.

A row is an event as the collector framed it (``pipeline_core.source``: a line written in
partial entries is one line, a multiline event is its own stream's lines): its entries' texts
are joined (a partial entry's with the next one's, lines with ``\\n``), its ``stream`` is its
first entry's, and ``event_time`` the runtime's time of its first entry, to the microsecond.
Rejects: ``invalid_utf8``; ``no_match`` (``cri``: an entry that is not ``<time>
<stdout|stderr> <P|F> <text>``) or ``invalid_json`` (``docker_json``: not an object with a
``log`` string and a ``stream``); ``bad_timestamp`` (an unreadable time).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline_core.formats import RejectReason, SourceFormat
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    TEXT,
    VALID,
    ParseResult,
    split_classified,
    with_text,
)

CRI_PATTERN = r"(?s)^(\S+) (stdout|stderr) ([PF])(?: (.*))?\z"
"""A CRI entry: its time, stream, tag (``P`` partial, ``F`` full) and text."""


def parse_container(
    rows: DataFrame, fmt: SourceFormat, rejected: Observation | None = None
) -> ParseResult:
    """A container runtime's entries (``cri`` or ``docker_json``) as the events its program
    printed: ``message`` the entries' texts joined (a partial entry's with the next one's,
    lines with ``\\n``), ``stream``, ``event_lines``, ``cut``; ``event_time`` the runtime's
    time of the event's first entry (to the microsecond)."""
    if fmt is SourceFormat.CRI:
        # Each byte as one character (ISO-8859-1), so that a character the runtime's 16 KiB
        # entries cut in two is whole again once its entries are joined; UTF-8 after that.
        entries = F.split(F.decode(F.col("line"), "ISO-8859-1"), "\n", -1)
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
        joined = F.encode(F.array_join(pieces, ""), "ISO-8859-1").cast("string")
        valid = F.coalesce(F.is_valid_utf8(joined), F.lit(False))
    else:
        entries = F.split(F.col(TEXT), "\n", -1)
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
        valid = F.col(VALID)
    # CRI's text is checked once joined (its entries may cut a character); Docker's JSON is
    # UTF-8 through and through, checked as it is read.
    checks = [
        (F.col(FIELDS).isNull(), not_whole),
        (~valid, RejectReason.INVALID_UTF8),
        (F.col("event_time").isNull(), RejectReason.BAD_TIMESTAMP),
    ]
    if fmt is not SourceFormat.CRI:
        checks.insert(0, checks.pop(1))
    reason = F.when(checks[0][0], F.lit(checks[0][1].value))
    for condition, why in checks[1:]:
        reason = reason.when(condition, F.lit(why.value))
    message = F.regexp_replace(joined, "\n\\z", "")
    # Spark reads a time to the microsecond: the runtime's nanoseconds are cut there.
    runtime_time = F.try_to_timestamp(F.regexp_replace(written_time, r"(\.\d{6})\d+", "$1"))
    classified = (
        with_text(rows)
        .withColumn(FIELDS, F.when(whole, F.struct(message.alias("message"), stream.alias("s"))))
        .withColumn("event_time", F.when(F.col(FIELDS).isNotNull(), runtime_time))
        .withColumn(REASON, reason)
    )
    parsed_message = F.col(FIELDS).getField("message")
    return split_classified(
        classified,
        [
            parsed_message.alias("message"),
            F.col(FIELDS).getField("s").alias("stream"),
            F.size(F.split(parsed_message, "\n", -1)).alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )
