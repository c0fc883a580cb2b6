"""The lake tables' schemas, partitioning and properties, declared per source format.

Every source lands into one Iceberg table of its format's schema (``source_schema``); the lines
of every source that did not parse land into ``_rejects`` (``REJECTS_SCHEMA``). Event time is a
hidden partition: tables are partitioned by ``day(event_time)`` (rejects by ``day(sealed_at)``),
so a reader filters on the timestamp and never names a partition column.

Field ids are fixed here for the columns a table is created with; a column added later gets the
next free id from Iceberg (``pipeline_core.lake.LakeCatalog`` evolves a table by name, adding
the columns a declared schema gained after the existing ones: a ``raw`` table created before
multiline events got ``event_lines`` and ``cut`` after its ``checkpoint_id``, and its older rows
read them as null).

A row of a source table is an event (a line, or the lines of a multiline event); a ``raw``
table keeps the event's ``event_lines`` and its ``cut`` (null unless a bound or a missing head
cut it; ``pipeline_core.staging_contract.EventCut``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pyiceberg.expressions import BooleanExpression, In
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.transforms import DayTransform
from pyiceberg.types import (
    BooleanType,
    DoubleType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from pipeline_core.formats import FORMATS, ColumnType

REJECTS_TABLE = "_rejects"
"""The table of the events (lines) that did not parse, of every source."""
CHECKPOINT_COLUMN = "checkpoint_id"
"""The column every table has: the checkpoint a row landed with. A landing of checkpoint N
adds (or, reprocessed, replaces) exactly the rows whose ``checkpoint_id`` is N."""
TARGET_FILE_BYTES = 256 * 1024 * 1024
"""Compaction rewrites a day's files into files of about this size."""
PARTITION_FIELD_ID = 1000

_COMMON: tuple[tuple[str, IcebergType], ...] = (
    ("event_id", StringType()),
    ("file_fingerprint", StringType()),
    ("byte_offset", LongType()),
    ("host", StringType()),
    ("event_time", TimestamptzType()),
    (CHECKPOINT_COLUMN, LongType()),
)
_ICEBERG_TYPES: Mapping[ColumnType, IcebergType] = {
    ColumnType.STRING: StringType(),
    ColumnType.INT: IntegerType(),
    ColumnType.LONG: LongType(),
    ColumnType.DOUBLE: DoubleType(),
    ColumnType.BOOLEAN: BooleanType(),
    ColumnType.TIMESTAMP: TimestamptzType(),
    # Nested fields get their ids in _schema.
    ColumnType.MAP: MapType(0, StringType(), 0, StringType(), value_required=False),
    ColumnType.EXCEPTION: StructType(
        NestedField(0, "class", StringType(), required=False),
        NestedField(0, "message", StringType(), required=False),
        NestedField(
            0,
            "frames",
            ListType(
                0,
                StructType(
                    NestedField(0, "class", StringType(), required=False),
                    NestedField(0, "method", StringType(), required=False),
                    NestedField(0, "file", StringType(), required=False),
                    NestedField(0, "line", IntegerType(), required=False),
                ),
                element_required=False,
            ),
            required=False,
        ),
    ),
}
_FORMAT_COLUMNS: Mapping[str, tuple[tuple[str, IcebergType], ...]] = {
    name.value: tuple((column.name, _ICEBERG_TYPES[column.type]) for column in spec.columns)
    for name, spec in FORMATS.items()
}
_REJECT_COLUMNS: tuple[tuple[str, IcebergType], ...] = (
    ("event_id", StringType()),
    ("file_fingerprint", StringType()),
    ("byte_offset", LongType()),
    ("host", StringType()),
    ("source", StringType()),
    ("raw_line", StringType()),
    ("line_bytes", LongType()),
    ("reason", StringType()),
    ("sealed_at", TimestamptzType()),
    (CHECKPOINT_COLUMN, LongType()),
)


def _schema(columns: tuple[tuple[str, IcebergType], ...]) -> Schema:
    """The columns numbered 1 to N in order, then their nested fields (a map's key and value,
    a struct's fields) from N + 1: the ids Iceberg itself gives a new table's schema, so the
    name mapping matches them."""
    # Every column is optional: Spark writes every Parquet column as optional.
    fields = (
        NestedField(field_id, name, kind, required=False)
        for field_id, (name, kind) in enumerate(columns, start=1)
    )
    return assign_fresh_schema_ids(Schema(*fields))


def _day_partition(schema: Schema, column: str) -> PartitionSpec:
    source_id = schema.find_field(column).field_id
    return PartitionSpec(
        PartitionField(
            source_id=source_id,
            field_id=PARTITION_FIELD_ID,
            transform=DayTransform(),
            name=f"{column}_day",
        )
    )


def formats() -> tuple[str, ...]:
    """The source formats that have a table schema."""
    return tuple(_FORMAT_COLUMNS)


def source_schema(fmt: str, declared: Sequence[tuple[str, ColumnType]] = ()) -> Schema:
    """The schema of a source table of format ``fmt``, with the columns the source declares
    (``regex``: its pattern's groups) after the format's own.

    :raises ValueError: ``fmt`` is not a known format.
    """
    try:
        columns = _FORMAT_COLUMNS[fmt]
    except KeyError:
        raise ValueError(f"no table schema for format {fmt!r}") from None
    own = tuple((name, _ICEBERG_TYPES[kind]) for name, kind in declared)
    return _schema((*_COMMON[:5], *columns, *own, _COMMON[5]))


REJECTS_SCHEMA = _schema(_REJECT_COLUMNS)


def partition_spec(schema: Schema) -> PartitionSpec:
    """``day(event_time)`` for a source table, ``day(sealed_at)`` for the rejects."""
    return _day_partition(schema, time_column(schema))


def time_column(schema: Schema) -> str:
    """The timestamp a table is partitioned by day on."""
    names = {field.name for field in schema.fields}
    return "event_time" if "event_time" in names else "sealed_at"


METADATA_VERSIONS_KEPT = 20
"""Previous ``metadata.json`` files a table keeps (Iceberg's default is 100); older ones are
deleted at each commit. A landing every minute rewrites the table's metadata 1,440 times a
day: without this every version stays forever."""
MANIFESTS_BEFORE_MERGE = 16
"""A landing's commit merges the table's data manifests into one once there are this many
(Iceberg's ``commit.manifest.min-count-to-merge``; its default is 100)."""
MANAGED_PROPERTIES = {
    "commit.retry.num-retries": "0",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": str(METADATA_VERSIONS_KEPT),
    "commit.manifest-merge.enabled": "true",
    "commit.manifest.min-count-to-merge": str(MANIFESTS_BEFORE_MERGE),
}
"""Properties every lake table has, set again on a table created before they were (so an
upgrade applies them to the tables it finds).

* ``commit.retry.num-retries`` 0: pyiceberg re-applies a transaction that lost a race on the
  refreshed table by itself; a landing must instead decide again what to commit
  (``pipeline_core.lake.commit_files``), and a compaction plan its day again, so the tables
  leave retrying to them.
* Old ``metadata.json`` files deleted after each commit, :data:`METADATA_VERSIONS_KEPT` kept.
* Manifests merged at commit, as Iceberg's Java appends do by default (pyiceberg's do not):
  each landing adds a manifest, so without merging a table planned after a month of
  one-minute landings reads tens of thousands of manifests. The manifests that expired
  snapshots leave behind are removed with the orphans (``pipeline_core.lake._maintenance``).
"""


def table_properties(fmt: str) -> dict[str, str]:
    """Properties a lake table is created with (``fmt``: its source format, or ``_rejects``)."""
    return {
        **MANAGED_PROPERTIES,
        "format-version": "2",
        "write.target-file-size-bytes": str(TARGET_FILE_BYTES),
        "write.parquet.compression-codec": "zstd",
        "sluice.format": fmt,
    }


def checkpoint_filter(checkpoint_ids: Collection[int]) -> BooleanExpression:
    """A row filter: the rows of these checkpoints."""
    # pydantic's generated __init__ hides In's (term, literals) signature from type checkers.
    return In(CHECKPOINT_COLUMN, tuple(checkpoint_ids))  # type: ignore[call-arg, arg-type]
