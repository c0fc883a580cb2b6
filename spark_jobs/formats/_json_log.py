"""What the formats of JSON log lines share (``airflow_task``, ``spark_json``): a line is one
JSON object, parsed once into a variant; its event time is one top-level key's ISO-8601 text.

A line that is no JSON, an object followed by more than whitespace, or an object with a key
twice (which a variant cannot hold) is ``invalid_json``; JSON that is not an object (an array,
a string, ``null``) is ``no_match``; an object whose time key is missing, not a string or not
a time is ``bad_timestamp``. A value read as a string that is not one is its JSON text as Spark
writes it (a number as Spark prints it: ``1.50`` as ``1.5``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipeline_core.formats import RejectReason
from spark_jobs.formats._common import FIELDS, REASON, TEXT, TIME, VALID, with_text

_TRAILING_WHITESPACE = " \t\r\n"


def classify_json_log(rows: DataFrame, time_key: str) -> DataFrame:
    """Staging rows with the line parsed (``_fields``: a variant, null unless the line is a
    JSON object), its time (``_time``, ``event_time``) and its reject reason (``_reason``)."""
    text = F.col(TEXT)
    value = F.try_parse_json(text)
    # A variant takes the first value of a line and ignores what follows it: an object's
    # line must end with its closing brace (JSON that is not an object is no_match anyway).
    whole = F.rtrim(text, F.lit(_TRAILING_WHITESPACE)).endswith("}")
    is_object = F.try_variant_get(value, "$", "map<string,string>").isNotNull()
    classified = with_text(rows).withColumn(FIELDS, F.when(F.col(VALID) & is_object & whole, value))
    written = variant_string(F.col(FIELDS), time_key)
    return (
        classified.withColumn(TIME, F.try_to_timestamp(written))
        .withColumn(
            REASON,
            F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(
                F.col(FIELDS).isNull() & (value.isNull() | is_object),
                F.lit(RejectReason.INVALID_JSON.value),
            )
            .when(F.col(FIELDS).isNull(), F.lit(RejectReason.NO_MATCH.value))
            .when(F.col(TIME).isNull(), F.lit(RejectReason.BAD_TIMESTAMP.value)),
        )
        .withColumn("event_time", F.col(TIME))
    )


def variant_string(fields: Column, key: str) -> Column:
    """The top-level ``key`` of an object as a string (null when missing or JSON ``null``;
    another value than a string as its JSON text)."""
    return F.try_variant_get(fields, f"$['{key}']", "string")


def variant_map(fields: Column, path: str = "$") -> Column:
    """The object at ``path`` as a map of its keys' strings (other values as JSON text);
    null when there is no object there."""
    return F.try_variant_get(fields, path, "map<string,string>")
