"""``json_lines``: one JSON object per line.

One JSON object per line, kept verbatim in ``payload`` (but for the ``\\r`` of a CRLF line
end; other whitespace around the object is kept); a multiline event is one object (a
pretty-printed one spanning its lines), kept with its ``\\n`` (less the ``\\r`` of CRLF
line ends) in ``payload``. ``event_time`` comes from the top-level key ``time_field``: epoch
seconds (a number or a numeric string, fractions kept to the microsecond) or an ISO-8601
string (a time without an offset is read in the session time zone, UTC in the landing job).
A missing time (no such key, or JSON ``null``) falls back to ``sealed_at``; it is not a
reject. A time that is there but is neither (``"not a date"``, ``""``, ``true``, an object,
epoch seconds past year 9999) is. Rejects: ``invalid_utf8``, ``invalid_json`` (not a JSON
object), ``bad_timestamp`` (an unreadable time).

The keys a source declares (``pipeline_core.formats.json_columns``) land in typed columns
after ``payload``: a JSON string or number read as the column's type (an ``int`` column takes
``42`` and ``"42"``, not ``4.2`` nor a number past its range; a ``boolean`` JSON's ``true``
and ``false``; a ``timestamp`` what ``event_time`` takes), null when the key is missing or
JSON ``null``. A value of another type never drops the row: its column is null and
``rescued`` maps the key to the value as text (a string unquoted, JSON text otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline_core.formats import RESCUED_COLUMN, JsonColumn, RejectReason
from spark_jobs.formats._common import (
    FIELDS,
    REASON,
    TEXT,
    TIME,
    VALID,
    ParseResult,
    declared_values,
    json_time,
    split_classified,
    with_text,
    without_crlf,
)

DEFAULT_TIME_FIELD = "time"

_JSON_TRAILING_WHITESPACE = " \t\r"
"""What JSON allows after a value on an event's last line (which holds no ``\\n``)."""
_CORRUPT_COLUMN = "__sluice_corrupt_record__"


def parse_json_lines(
    rows: DataFrame,
    time_field: str = DEFAULT_TIME_FIELD,
    rejected: Observation | None = None,
    declared: Sequence[JsonColumn] = (),
) -> ParseResult:
    """Parse one JSON object per line; ``event_time`` from ``time_field``, the ``declared``
    keys into their columns and ``rescued`` (see the module doc)."""
    text = F.col(TEXT)
    schema = StructType(
        [StructField(time_field, StringType()), StructField(_CORRUPT_COLUMN, StringType())]
    )
    parsed_object = F.from_json(
        text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT_COLUMN}
    )
    classified = with_text(rows).withColumn(FIELDS, parsed_object)
    is_object = (
        F.col(FIELDS).isNotNull()
        & F.col(FIELDS).getField(_CORRUPT_COLUMN).isNull()
        & F.rtrim(text, F.lit(_JSON_TRAILING_WHITESPACE)).endswith("}")
    )
    written_time = F.col(FIELDS).getField(time_field)  # null: missing, or JSON null
    classified = (
        classified.withColumn(TIME, json_time(written_time))
        .withColumn(
            REASON,
            F.when(~F.col(VALID), F.lit(RejectReason.INVALID_UTF8.value))
            .when(~is_object, F.lit(RejectReason.INVALID_JSON.value))
            .when(
                written_time.isNotNull() & F.col(TIME).isNull(),
                F.lit(RejectReason.BAD_TIMESTAMP.value),
            ),
        )
        .withColumn("event_time", F.coalesce(F.col(TIME), F.col("sealed_at")))
    )
    return split_classified(
        classified,
        [
            without_crlf(text).alias("payload"),
            *declared_values(
                [(c, F.get_json_object(text, c.json_path)) for c in declared], RESCUED_COLUMN
            ),
        ],
        rejected,
    )
