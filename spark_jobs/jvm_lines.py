"""Segments split into events in the JVM: the Java function ``sluice.spark.SegmentLines``.

The landing reads the segments of local part files this way (``lines_in_jvm``): the executor's
JVM reads each segment's bytes itself and splits them into events (a line, or the lines of a
multiline event its segment lists), so the lines never cross into a Python worker and back
(``spark_jobs.staging.read_segments``, kept for part files in an object store, which the JVM
has no filesystem for, and for a session without the function: ``spark_jobs.jvm_functions``).
Both readers follow one contract: the same events, offsets, checks and error messages.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.jvm_functions import SEGMENT_LINES


def lines_in_jvm(segments: DataFrame) -> DataFrame:
    """The events of ``segments`` (``spark_jobs.staging.SEGMENT_SCHEMA`` rows of local part
    files) as ``spark_jobs.staging.LINE_SCHEMA`` rows, read and split by the function: a row
    per event (per line where a segment lists no multiline events), with its segment's batch
    columns. The function must be enabled in the session
    (``spark_jobs.jvm_functions.enable_jvm_functions``)."""
    lines = SEGMENT_LINES(
        F.col("path"),
        F.col("part_offset"),
        F.col("length"),
        F.col("start_offset"),
        F.col("lines"),
        F.col("events"),
    )
    return segments.select(
        "file_fingerprint",
        F.inline(lines),
        "checkpoint_id",
        "host",
        "sealed_at",
        "line_bytes",
    )
