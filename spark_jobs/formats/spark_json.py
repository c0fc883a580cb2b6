"""``spark_json``: Spark's structured JSON logging, one JSON object a line
(``spark.log.structuredLogging.enabled=true``: log4j2's ``JsonTemplateLayout`` with Spark's
``org/apache/spark/SparkLayout.json``).

``{"ts": "...Z", "level": "INFO", "msg": "...", "context": {...}, "exception": {"class": ...,
"msg": ..., "stacktrace": [{"class", "method", "file", "line"}, ...]}, "logger": "..."}``:
``context`` (the record's MDC) lands as a map, the exception as a struct of its class, message
and frames (each frame a struct of its class, method, file and line, as log4j2 wrote it).
``event_time`` is ``ts``. Rejects:
``invalid_utf8``, ``invalid_json``, ``no_match`` (JSON that is not an object),
``bad_timestamp`` (no ``ts``, or one that is not an ISO-8601 time), see
``spark_jobs.formats._json_log``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from pipeline_core.formats import JAVA_FRAMES
from spark_jobs.formats._common import FIELDS, ParseResult, split_classified
from spark_jobs.formats._json_log import classify_json_log, variant_map, variant_string

TIME_KEY = "ts"


def parse_spark_json(rows: DataFrame, rejected: Observation | None = None) -> ParseResult:
    """Parse Spark's structured JSON log lines (see the module doc)."""
    fields = F.col(FIELDS)
    exception_class = F.try_variant_get(fields, "$.exception.class", "string")
    exception = F.struct(
        exception_class.alias("class"),
        F.try_variant_get(fields, "$.exception.msg", "string").alias("message"),
        F.try_variant_get(fields, "$.exception.stacktrace", JAVA_FRAMES).alias("frames"),
    )
    return split_classified(
        classify_json_log(rows, TIME_KEY),
        [
            variant_string(fields, "level").alias("level"),
            variant_string(fields, "logger").alias("logger"),
            variant_string(fields, "msg").alias("message"),
            F.coalesce(variant_map(fields, "$.context"), F.create_map()).alias("context"),
            F.when(exception_class.isNotNull(), exception).alias("exception"),
        ],
        rejected,
    )
