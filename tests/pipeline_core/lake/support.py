"""Data files for the lake tests, written with pyarrow as the landing job's would be."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import Table

from pipeline_core.lake import location_filesystem

DAY = datetime(2026, 11, 22, tzinfo=timezone.utc)


def rows(checkpoint_id: int, count: int, *, day: datetime = DAY, first: int = 0) -> pa.Table:
    """``count`` rows of a raw-format table for ``checkpoint_id``, all on ``day``."""
    offsets = list(range(first, first + count))
    fingerprint = f"{checkpoint_id:016x}"
    return pa.table(
        {
            "event_id": pa.array([f"{fingerprint}:{o}" for o in offsets], pa.string()),
            "file_fingerprint": pa.array([fingerprint] * count, pa.string()),
            "byte_offset": pa.array(offsets, pa.int64()),
            "host": pa.array(["web-1"] * count, pa.string()),
            "event_time": pa.array(
                [day + timedelta(seconds=o) for o in offsets], pa.timestamp("us", "UTC")
            ),
            "message": pa.array([f"line {o}" for o in offsets], pa.string()),
            "checkpoint_id": pa.array([checkpoint_id] * count, pa.int64()),
        }
    )


def write_file(table: Table, data: pa.Table, folder: str = "") -> str:
    """Write ``data`` as one Parquet file under the table's ``data/`` (no field ids, as Spark
    writes them); returns its URI."""
    name = folder or f"landing-{uuid.uuid4().hex}"
    directory = f"{table.location().rstrip('/')}/data/{name}"
    filesystem, root = location_filesystem(directory)
    filesystem.create_dir(root, recursive=True)
    path = f"{root}/part-{uuid.uuid4().hex}.parquet"
    with filesystem.open_output_stream(path) as sink:
        pq.write_table(data, sink)
    return f"file://{path}"
