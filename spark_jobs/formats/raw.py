"""``raw``: any text, the event as it is.

``message`` is the whole event (its lines joined by their ``\\n``) with invalid UTF-8
replaced and without the ``\\r`` of CRLF line ends; ``event_lines`` (int) its lines (1 for a
line of its own) and ``cut`` why it is not whole (``lines``, ``bytes``: the source's
``multiline`` bounds; ``truncated``, ``headless``: a copytruncate copy's last event and the
rest of it, or a missing head; null for a whole event);
``event_time`` is ``sealed_at``. Rejects only over-long lines.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from spark_jobs.formats._common import REASON, TEXT, ParseResult, split_classified, without_crlf


def parse_raw(rows: DataFrame, rejected: Observation | None = None) -> ParseResult:
    """Keep every event as ``message``, with its ``event_lines`` and ``cut``; ``event_time``
    is the batch's ``sealed_at``."""
    classified = (
        rows.withColumn(TEXT, F.make_valid_utf8(F.col("line").cast("string")))
        .withColumn("event_time", F.col("sealed_at"))
        .withColumn(REASON, F.lit(None).cast("string"))
    )
    return split_classified(
        classified,
        [
            without_crlf(F.col(TEXT)).alias("message"),
            F.col("event_lines").cast("int").alias("event_lines"),
            F.col("cut"),
        ],
        rejected,
    )
