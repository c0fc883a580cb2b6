"""Reading what the lake tables hold: what landed per checkpoint, and a summary of the lake.

Everything Sluice reports about the lake (the commit step's counts, ``sluice report``, the
state page) reads the Iceberg tables through their catalog, never the data folders.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.conversions import from_bytes
from pyiceberg.table import Table
from pyiceberg.types import PrimitiveType

from pipeline_core.lake._catalog import LakeCatalog
from pipeline_core.lake._schemas import CHECKPOINT_COLUMN, REJECTS_TABLE, checkpoint_filter

STATUS_COLUMN = "status"


@dataclass(frozen=True)
class LandedCheckpoint:
    """What the lake tables hold of one checkpoint."""

    checkpoint_id: int
    rows: dict[str, int]
    """Rows per source table (every table asked about, 0 when it holds none)."""
    rejects: dict[str, int]
    """Rejected lines per reason."""
    snapshots: dict[str, int | None]
    """Each table's current snapshot id as read (None: the table is empty or missing)."""

    @property
    def lines(self) -> int:
        return sum(self.rows.values()) + sum(self.rejects.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "rows": dict(self.rows),
            "rejects": dict(self.rejects),
            "snapshots": {table: snapshot for table, snapshot in self.snapshots.items()},
        }


def landed_checkpoints(
    lake: LakeCatalog, sources: Sequence[str], checkpoint_ids: Collection[int]
) -> dict[int, LandedCheckpoint]:
    """Rows per source table and rejects per reason of each checkpoint, read from the tables."""
    ids = tuple(sorted(set(checkpoint_ids)))
    rows: dict[int, dict[str, int]] = {i: dict.fromkeys(sources, 0) for i in ids}
    rejects: dict[int, Counter[str]] = {i: Counter() for i in ids}
    snapshots: dict[str, int | None] = {}
    for source in sources:
        table = lake.load(source)
        snapshots[source] = _snapshot_id(table)
        counted = _counts_from_metadata(table, ids)
        if counted is None:
            data = _scan(table, ids, (CHECKPOINT_COLUMN,))
            counted = {} if data is None else _value_counts(data.column(CHECKPOINT_COLUMN))
        for checkpoint_id, count in counted.items():
            rows[checkpoint_id][source] = count
    table = lake.load(REJECTS_TABLE)
    snapshots[REJECTS_TABLE] = _snapshot_id(table)
    data = _scan(table, ids, (CHECKPOINT_COLUMN, "reason"))
    if data is not None:
        grouped = data.group_by([CHECKPOINT_COLUMN, "reason"]).aggregate([([], "count_all")])
        for row in grouped.to_pylist():
            rejects[int(row[CHECKPOINT_COLUMN])][str(row["reason"])] = int(row["count_all"])
    return {i: LandedCheckpoint(i, rows[i], dict(rejects[i]), dict(snapshots)) for i in ids}


def _counts_from_metadata(table: Table | None, ids: tuple[int, ...]) -> dict[int, int] | None:
    """Rows per checkpoint of ``ids`` from the metadata of the table's data files (their row
    counts and ``checkpoint_id`` bounds), without reading them; ``None`` when that cannot
    tell: a file holds rows of several checkpoints or nulls, has no bounds, or has deletes.

    A landing writes each checkpoint's rows into files of their own, so the lake's files hold
    one checkpoint each and this is exact for them.
    """
    if table is None or table.current_snapshot() is None or not ids:
        return {}
    column = table.schema().find_field(CHECKPOINT_COLUMN)
    counts: Counter[int] = Counter()
    for task in table.scan(row_filter=checkpoint_filter(ids)).plan_files():
        data_file = task.file
        lower = (data_file.lower_bounds or {}).get(column.field_id)
        upper = (data_file.upper_bounds or {}).get(column.field_id)
        nulls = (data_file.null_value_counts or {}).get(column.field_id)
        if task.delete_files or lower is None or lower != upper or nulls is None or nulls:
            return None
        checkpoint_id = int(from_bytes(cast(PrimitiveType, column.field_type), lower))
        if checkpoint_id in ids:
            counts[checkpoint_id] += data_file.record_count
    return dict(counts)


def _scan(table: Table | None, ids: tuple[int, ...], columns: tuple[str, ...]) -> pa.Table | None:
    if table is None or table.current_snapshot() is None or not ids:
        return None
    return table.scan(row_filter=checkpoint_filter(ids), selected_fields=columns).to_arrow()


def _snapshot_id(table: Table | None) -> int | None:
    snapshot = table.current_snapshot() if table is not None else None
    return snapshot.snapshot_id if snapshot is not None else None


def _value_counts(column: pa.ChunkedArray) -> dict[int, int]:
    counts = pc.value_counts(column)
    return {
        int(item["values"]): int(item["counts"])
        for item in counts.to_pylist()
        if item["values"] is not None
    }


@dataclass(frozen=True)
class LakeSummary:
    """Row counts of a pipeline's lake tables."""

    rows: dict[str, int]
    """Parsed rows per source table."""
    rejects: dict[str, int]
    """Rejected lines per reason."""
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    """Rows per HTTP status, for tables that have a ``status`` column."""
    distinct_event_ids: int = 0
    snapshots: dict[str, int | None] = field(default_factory=dict)
    """Each table's current snapshot id."""

    def lines(self) -> list[str]:
        out = []
        for source, count in self.rows.items():
            snapshot = self.snapshots.get(source)
            out.append(
                f"lake table {source}: {count} rows"
                + (f" (snapshot {snapshot})" if snapshot is not None else "")
            )
            for status, n in sorted(self.statuses.get(source, Counter()).items()):
                out.append(f"  status {status}: {n}")
        out.append(
            f"distinct event ids: {self.distinct_event_ids} (one per row: no duplicates)"
            if self.distinct_event_ids == sum(self.rows.values())
            else f"distinct event ids: {self.distinct_event_ids} (DUPLICATES in the lake)"
        )
        total = sum(self.rejects.values())
        out.append(f"rejects: {total} lines")
        for reason, n in sorted(self.rejects.items()):
            out.append(f"  {reason}: {n}")
        return out


def summarize_tables(lake: LakeCatalog, sources: Sequence[str]) -> LakeSummary:
    """Rows, rows per HTTP status and distinct event ids of each source table, and the
    rejects per reason, read from the tables' current snapshots."""
    rows: dict[str, int] = {}
    statuses: dict[str, Counter[int]] = {}
    snapshots: dict[str, int | None] = {}
    distinct = 0
    for source in sources:
        table = lake.load(source)
        snapshots[source] = _snapshot_id(table)
        if table is None or table.current_snapshot() is None:
            rows[source] = 0
            continue
        names = {f.name for f in table.schema().fields}
        columns = ("event_id", STATUS_COLUMN) if STATUS_COLUMN in names else ("event_id",)
        data = table.scan(selected_fields=columns).to_arrow()
        rows[source] = data.num_rows
        distinct += len(pc.unique(data.column("event_id")))
        if STATUS_COLUMN in columns:
            statuses[source] = Counter(
                {int(k): v for k, v in _value_counts(data.column(STATUS_COLUMN)).items()}
            )
    rejects: Counter[str] = Counter()
    table = lake.load(REJECTS_TABLE)
    snapshots[REJECTS_TABLE] = _snapshot_id(table)
    if table is not None and table.current_snapshot() is not None:
        rejects.update(
            table.scan(selected_fields=("reason",)).to_arrow().column("reason").to_pylist()
        )
    return LakeSummary(rows, dict(rejects), statuses, distinct, snapshots)


def table_names(formats: Mapping[str, str]) -> list[str]:
    """The tables of a pipeline whose sources have ``formats``: its sources', then rejects."""
    return [*formats, REJECTS_TABLE]
