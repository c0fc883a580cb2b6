"""The landing's Java functions (``spark_jobs/jvm``), registered in a session once.

``sluice.spark.SegmentLines`` reads local part files and splits them into events in the
executors' JVM (``spark_jobs.jvm_lines``); ``sluice.spark.NginxFields`` scans an nginx
access-log line into its fields, ``sluice.spark.PatternGroups`` takes every group of a
format's pattern from one match and ``sluice.spark.StructuredData`` reads a syslog message's
structured data (``spark_jobs.formats``). Their source ships with the package;
``pipeline_core.landing.java_functions_jar`` compiles it where the job is submitted. A session
gets the jar when it starts (``spark.jars``, or spark-submit's ``--jars``:
``pipeline_core.landing.landing_job_spec`` adds it), or on Spark Connect as an artifact of the
landing's session; :func:`enable_jvm_functions` then registers the functions and says whether
they can be used. Without a JDK (a JRE only) there is no jar: the landing reads segments in
Python workers and parses nginx lines with Spark's regular expressions, to the same results.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)


@dataclass(frozen=True)
class JvmFunction:
    """A Java function of the jar: the name a session knows it by, its class, what it
    returns."""

    name: str
    class_name: str
    return_type: DataType

    def __call__(self, *arguments: Column) -> Column:
        """The function applied to ``arguments`` (it must be enabled in the session:
        :func:`enable_jvm_functions`)."""
        return F.call_function(self.name, *arguments)


SEGMENT_LINES = JvmFunction(
    "sluice_segment_lines",
    "sluice.spark.SegmentLines",
    ArrayType(
        StructType(
            [
                StructField("byte_offset", LongType(), nullable=False),
                StructField("line", BinaryType(), nullable=False),
                StructField("event_lines", LongType(), nullable=False),
                StructField("cut", StringType(), nullable=True),
            ]
        ),
        containsNull=False,
    ),
)
"""``(path, part_offset, length, start_offset, lines, events)``: a segment's events (its
multiline ``events``, ``spark_jobs.staging.EVENT_SPAN`` structs, and each line none covers),
each with its offset in the source file, its lines and its cut."""
EVENT_SPANS = ArrayType(
    StructType(
        [
            StructField("first_line", LongType(), nullable=False),
            StructField("lines", LongType(), nullable=False),
            StructField("cut", StringType(), nullable=True),
            StructField("head", LongType(), nullable=True),
        ]
    ),
    containsNull=False,
)
"""The type of ``SEGMENT_LINES``'s ``events`` (``spark_jobs.staging.SEGMENT_SCHEMA``'s)."""
NGINX_FIELDS = JvmFunction(
    "sluice_nginx_fields", "sluice.spark.NginxFields", ArrayType(BinaryType())
)
"""``line``: the fields of an nginx ``combined`` line (``spark_jobs.formats.NGINX_FIELDS``), or
null when it does not match ``spark_jobs.formats.NGINX_PATTERN``."""
PATTERN_GROUPS = JvmFunction(
    "sluice_pattern_groups", "sluice.spark.PatternGroups", ArrayType(StringType())
)
"""``(text, pattern)``: every group of ``pattern``'s first match in ``text`` (a group that took
no part, empty), from one match; null when it does not match."""
STRUCTURED_DATA = JvmFunction(
    "sluice_structured_data",
    "sluice.spark.StructuredData",
    MapType(StringType(), StringType()),
)
"""``text``: an RFC 5424 message's STRUCTURED-DATA (as its pattern matched it) as a map of each
parameter's unescaped value by ``<SD-ID>.<PARAM-NAME>`` (a repeated one: its first value)."""
JVM_FUNCTIONS = (SEGMENT_LINES, NGINX_FIELDS, PATTERN_GROUPS, STRUCTURED_DATA)
log = logging.getLogger(__name__)
_enabled: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def enable_jvm_functions(spark: SparkSession) -> bool:
    """Register :data:`JVM_FUNCTIONS` in ``spark`` (once per session); whether they can be
    used: the session has their jar (``spark.jars``, ``--jars``, or a Spark Connect
    artifact)."""
    with contextlib.suppress(KeyError, TypeError):
        return _enabled[spark]
    try:
        for function in JVM_FUNCTIONS:
            spark.udf.registerJavaFunction(function.name, function.class_name, function.return_type)
        # Spark Connect resolves a function on first use: call each once.
        nothing = F.lit(None)
        spark.range(1).select(
            NGINX_FIELDS(nothing.cast("binary")).isNull(),
            PATTERN_GROUPS(nothing.cast("string"), nothing.cast("string")).isNull(),
            STRUCTURED_DATA(nothing.cast("string")).isNull(),
            SEGMENT_LINES(
                nothing.cast("string"), *[nothing.cast("long")] * 4, nothing.cast(EVENT_SPANS)
            ).isNull(),
        ).collect()
        enabled = True
    except Exception as exc:  # the classes are not on the session's classpath
        log.info(
            "the landing's Java functions are not available (%s): segments are read in Python "
            "workers, nginx lines parsed with regular expressions, a pattern matched once per "
            "group",
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        enabled = False
    with contextlib.suppress(TypeError):  # a session without weak references: checked each time
        _enabled[spark] = enabled
    return enabled
