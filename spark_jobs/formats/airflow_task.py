"""``airflow_task``: Airflow 3's task logs, one JSON object a line as the task supervisor's
structlog writes it.

``{"timestamp": "...Z", "level": "info", "event": "...", "logger": "...", ...}``: the message
is ``event``; a failure's record holds ``error_detail``, a list of exceptions (each with
``exc_type``, ``exc_value``, ``frames``), kept as JSON text in ``error``. Every other
top-level key (the task instance's ``dag_id``, ``task_id``, ``run_id``, ``try_number``,
``map_index``, ``ti_id``, the caller's ``filename`` and ``lineno``, a task's own keyword
arguments) lands in ``extra``, a string as it is and any other value as its JSON text.
``event_time`` is ``timestamp``. Rejects: ``invalid_utf8``, ``invalid_json``, ``no_match``
(JSON that is not an object), ``bad_timestamp`` (no ``timestamp``, or one that is not an
ISO-8601 time), see ``spark_jobs.formats._json_log``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from spark_jobs.formats._common import FIELDS, ParseResult, split_classified
from spark_jobs.formats._json_log import classify_json_log, variant_map, variant_string

TIME_KEY = "timestamp"
_COLUMN_KEYS = {"level": "level", "logger": "logger", "message": "event", "error": "error_detail"}
"""The format's columns and the keys they are read from; ``extra`` holds the others."""


def parse_airflow_task(rows: DataFrame, rejected: Observation | None = None) -> ParseResult:
    """Parse Airflow 3 task log lines (see the module doc)."""
    fields = F.col(FIELDS)
    known = F.array(*(F.lit(key) for key in (TIME_KEY, *_COLUMN_KEYS.values())))
    extra = F.map_filter(variant_map(fields), lambda key, _: ~F.array_contains(known, key))
    return split_classified(
        classify_json_log(rows, TIME_KEY),
        [
            *(variant_string(fields, key).alias(name) for name, key in _COLUMN_KEYS.items()),
            extra.alias("extra"),
        ],
        rejected,
    )
