"""The lake each landing test gets, reads of its Iceberg tables, and rows appended to them
without Spark.

``lake`` is a :class:`LakeLocation` on the test's metastore (SQLite, or a fresh PostgreSQL
database in the PostgreSQL pass), migrated, with its warehouse in the test's folder;
``module_lake`` is one for a whole test module (on ``module_metastore_url``), for a landing its
tests share.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline_core.lake import REJECTS_TABLE, LakeLocation, open_lake
from pipeline_core.metastore import Metastore
from pipeline_core.testing import table_rows

NAMESPACE = "web_access"


@pytest.fixture
def lake(metastore_url: str, tmp_path: Path) -> LakeLocation:
    Metastore.open(metastore_url).close()  # migrated: the catalog tables exist
    return LakeLocation(metastore_url, tmp_path / "lake", NAMESPACE)


@pytest.fixture(scope="module")
def module_lake(
    module_metastore_url: str, tmp_path_factory: pytest.TempPathFactory
) -> LakeLocation:
    Metastore.open(module_metastore_url).close()
    return LakeLocation(module_metastore_url, tmp_path_factory.mktemp("module") / "lake", NAMESPACE)


def assert_exactly_once(lake: LakeLocation, table: str, checkpoint_id: int | None = None) -> int:
    """No event id twice in ``table``; returns its rows (of ``checkpoint_id``)."""
    rows = table_rows(lake, table, checkpoint_id)
    if rows.num_rows == 0:
        return 0
    ids = Counter(rows.column("event_id").to_pylist())
    assert not [event_id for event_id, count in ids.items() if count > 1]
    return int(rows.num_rows)


def snapshot_operations(lake: LakeLocation, table: str) -> list[tuple[str, str | None]]:
    """``(operation, sluice.checkpoint-ids)`` of each snapshot of ``table``, oldest first."""
    with open_lake(lake) as catalog:
        loaded = catalog.load(table)
        if loaded is None:
            return []
        return [
            (
                s.summary.operation.value if s.summary else "",
                s.summary.get("sluice.checkpoint-ids") if s.summary else None,
            )
            for s in loaded.snapshots()
        ]


def append_rows(
    lake: LakeLocation, table: str, rows: Sequence[Mapping[str, Any]], fmt: str = "raw"
) -> int | None:
    """Append ``rows`` to ``table`` in one commit, without Spark, creating the table when
    missing with the schema of source format ``fmt`` (the rejects' schema for ``_rejects``);
    a column a row leaves out is null. Returns the new snapshot's id.

    The rows are written as one Parquet file in the table's ``data/`` folder and added to the
    table (``add_files``), as the landing job's commit adds its files: the rows must all fall
    on one day of the table's partitioning. (pyiceberg's own ``append`` computes partitions
    with ``pyiceberg-core``, which the project does not install.)"""
    with open_lake(lake) as catalog:
        formats = {} if table == REJECTS_TABLE else {table: fmt}
        loaded = catalog.ensure_tables(formats)[table]
        data = pa.Table.from_pylist(list(rows), schema=loaded.schema().as_arrow())
        folder = Path(loaded.location().removeprefix("file://")) / "data" / "appended"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4().hex}.parquet"
        pq.write_table(data, path)
        loaded.add_files([f"file://{path}"])
        snapshot = loaded.current_snapshot()
        return snapshot.snapshot_id if snapshot is not None else None
