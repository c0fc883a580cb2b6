"""A source's declared columns change: the lake table follows by Iceberg's rules, on a table
with landed rows (pyiceberg, no Spark)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import Table
from pyiceberg.types import IntegerType, LongType, StringType

from pipeline_core.errors import SchemaEvolutionError
from pipeline_core.formats import ColumnType
from pipeline_core.lake import (
    LakeCatalog,
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    location_filesystem,
    open_lake,
)

FIRST = [("level", ColumnType.STRING), ("pid", ColumnType.INT)]


@pytest.fixture
def catalog(lake: LakeLocation) -> Iterator[LakeCatalog]:
    with open_lake(lake) as opened:
        yield opened


def land(table: Table, checkpoint_id: int, columns: dict[str, pa.Array]) -> None:
    """Rows with ``columns`` (and the common ones) committed as a landing commits them."""
    count = len(next(iter(columns.values())))
    data = pa.table(
        {
            "event_id": [f"{checkpoint_id}:{i}" for i in range(count)],
            "file_fingerprint": ["f" * 16] * count,
            "byte_offset": pa.array(range(count), pa.int64()),
            "host": ["web-1"] * count,
            "event_time": pa.array(
                [datetime(2026, 11, 28, tzinfo=timezone.utc)] * count, pa.timestamp("us", "UTC")
            ),
            **columns,
            "checkpoint_id": pa.array([checkpoint_id] * count, pa.int64()),
        }
    )
    filesystem, root = location_filesystem(f"{table.location()}/data/landing-{uuid.uuid4().hex}")
    filesystem.create_dir(root, recursive=True)
    with filesystem.open_output_stream(f"{root}/part-0.parquet") as sink:
        pq.write_table(data, sink)
    files = {checkpoint_id: [f"file://{root}/part-0.parquet"]}
    commit_files(table, TableCommit(files, (checkpoint_id,), "run", LandingMode.APPEND))


def test_a_column_added_and_one_widened_keep_the_landed_rows(catalog: LakeCatalog) -> None:
    table = catalog.ensure_tables({"app": "regex"}, {"app": FIRST})["app"]
    land(table, 1, {"level": pa.array(["INFO", "WARN"]), "pid": pa.array([7, 8], pa.int32())})

    later = [("level", ColumnType.STRING), ("pid", ColumnType.LONG), ("line", ColumnType.INT)]
    evolved = catalog.ensure_tables({"app": "regex"}, {"app": later})["app"]
    land(
        evolved,
        2,
        {"level": pa.array(["ERROR"]), "pid": pa.array([2**40]), "line": pa.array([3], pa.int32())},
    )

    fields = {field.name: field.field_type for field in evolved.schema().fields}
    assert (fields["pid"], fields["line"]) == (LongType(), IntegerType())
    rows = evolved.scan().to_arrow().sort_by("checkpoint_id").to_pylist()
    assert [(r["level"], r["pid"], r["line"]) for r in rows] == [
        ("INFO", 7, None),
        ("WARN", 8, None),
        ("ERROR", 2**40, 3),
    ]


@pytest.mark.parametrize(
    ("column", "declared", "before", "after"),
    [("pid", ColumnType.STRING, "int", "string"), ("level", ColumnType.INT, "string", "int")],
)
def test_a_change_iceberg_cannot_make_is_refused_before_any_table_changes(
    catalog: LakeCatalog, column: str, declared: ColumnType, before: str, after: str
) -> None:
    tables = catalog.ensure_tables({"app": "regex", "web": "regex"}, {"app": FIRST, "web": FIRST})
    land(tables["app"], 1, {"level": pa.array(["INFO"]), "pid": pa.array([7], pa.int32())})
    changed = [(name, declared if name == column else kind) for name, kind in FIRST]
    added = [*FIRST, ("extra", ColumnType.STRING)]

    with pytest.raises(SchemaEvolutionError) as refused:
        catalog.ensure_tables({"web": "regex", "app": "regex"}, {"web": added, "app": changed})

    message = str(refused.value)
    assert f"lake table app: column {column} is {before}" in message
    assert f"now declares {after}" in message
    web = catalog.load("web")
    assert web is not None and "extra" not in {f.name for f in web.schema().fields}
    app = catalog.load("app")
    assert app is not None
    types = {f.name: f.field_type for f in app.schema().fields}
    assert (types["level"], types["pid"]) == (StringType(), IntegerType())
    assert app.scan().to_arrow().num_rows == 1


def test_a_nested_column_added_later_is_taken_again_without_a_change(
    catalog: LakeCatalog,
) -> None:
    dropped = [("a", ColumnType.STRING), ("b", ColumnType.STRING)]
    catalog.ensure_tables({"app": "regex"}, {"app": [*FIRST, *dropped]})
    later = [*FIRST, ("attrs", ColumnType.MAP)]  # a and b left out: they stay
    evolved = catalog.ensure_tables({"app": "regex"}, {"app": later})["app"]
    # The map's key and value got the table's next ids, not those of a table created so.
    metadata = evolved.metadata_location

    again = catalog.ensure_tables({"app": "regex"}, {"app": later})["app"]

    assert again.metadata_location == metadata
    assert str(again.schema().find_field("attrs").field_type) == "map<string, string>"
