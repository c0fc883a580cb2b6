"""Reading back what landed in the lake, to check a landing in tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from pipeline_core.lake import LakeLocation


def table_rows(lake: LakeLocation, table: str, checkpoint_id: int | None = None) -> pa.Table:
    """The rows of ``table`` (of one checkpoint, or all), read through the catalog; an empty
    table when it does not exist or holds nothing."""
    import pyarrow as pa

    from pipeline_core.lake import open_lake

    with open_lake(lake) as catalog:
        loaded = catalog.load(table)
        if loaded is None or loaded.current_snapshot() is None:
            return pa.table({})
        scan = (
            loaded.scan()
            if checkpoint_id is None
            else loaded.scan(row_filter=f"checkpoint_id == {checkpoint_id}")
        )
        return scan.to_arrow()
