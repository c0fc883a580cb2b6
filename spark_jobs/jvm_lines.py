"""Segments split into lines in the JVM: the Java function ``sluice.spark.SegmentLines``.

The landing reads the segments of local part files this way (``lines_in_jvm``): the executor's
JVM reads each segment's bytes itself and splits them into lines, so the lines never cross into
a Python worker and back (``spark_jobs.staging.read_segments``, kept for part files in an
object store, which the JVM has no filesystem for, and for a session without the function).
Both readers follow one contract: the same lines, offsets, checks and error messages.

The function's source ships with the package (``spark_jobs/jvm/``);
``pipeline_core.landing.segment_lines_jar`` compiles it where the job is submitted. A session
gets the jar when it starts (``spark.jars``, or spark-submit's ``--jars``:
``pipeline_core.landing.landing_job_spec`` adds it), or on Spark Connect as an artifact of the
landing's session; ``enable_segment_lines`` then registers the function and says whether it can
be used. Without a JDK (a JRE only) there is no jar, and the landing reads every segment in
Python workers.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, LongType, StructField, StructType

SEGMENT_LINES_FUNCTION = "sluice_segment_lines"
"""The name the function is registered under in a session."""
SEGMENT_LINES_CLASS = "sluice.spark.SegmentLines"
LINES_TYPE = ArrayType(
    StructType(
        [
            StructField("byte_offset", LongType(), nullable=False),
            StructField("line", BinaryType(), nullable=False),
        ]
    ),
    containsNull=False,
)
"""What the function returns for a segment: its lines, each with its offset in the source
file."""
log = logging.getLogger(__name__)
_enabled: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def enable_segment_lines(spark: SparkSession) -> bool:
    """Register the function in ``spark`` (once per session); whether it can be used: the
    session has its jar (``spark.jars``, ``--jars``, or a Spark Connect artifact)."""
    with contextlib.suppress(KeyError, TypeError):
        return _enabled[spark]
    try:
        spark.udf.registerJavaFunction(SEGMENT_LINES_FUNCTION, SEGMENT_LINES_CLASS, LINES_TYPE)
        spark.range(1).select(_probe()).collect()  # Spark Connect resolves it on first use
        enabled = True
    except Exception as exc:  # the class is not on the session's classpath
        log.info(
            "segments are read in Python workers: %s is not available (%s)",
            SEGMENT_LINES_CLASS,
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        enabled = False
    with contextlib.suppress(TypeError):  # a session without weak references: checked each time
        _enabled[spark] = enabled
    return enabled


def lines_in_jvm(segments: DataFrame) -> DataFrame:
    """The lines of ``segments`` (``spark_jobs.staging.SEGMENT_SCHEMA`` rows of local part
    files) as ``spark_jobs.staging.LINE_SCHEMA`` rows, read and split by the function: a row
    per line, with its segment's batch columns. The function must be enabled in the session
    (:func:`enable_segment_lines`)."""
    lines = F.call_function(
        SEGMENT_LINES_FUNCTION,
        F.col("path"),
        F.col("part_offset"),
        F.col("length"),
        F.col("start_offset"),
        F.col("lines"),
    )
    return segments.select(
        "file_fingerprint",
        F.inline(lines),
        "checkpoint_id",
        "host",
        "sealed_at",
        "line_bytes",
    )


def _probe() -> Column:
    nothing = F.lit(None).cast("long")
    return F.call_function(
        SEGMENT_LINES_FUNCTION, F.lit(None).cast("string"), nothing, nothing, nothing, nothing
    ).isNull()
