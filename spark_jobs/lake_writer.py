"""Writing a landing's data files from the executors through Arrow filesystems.

With the lake in an object store (``s3://``, ``gs://``, ``abfs://``), Spark's own Parquet
writer would need the cluster's Hadoop connector for that store; instead each task writes its
rows with ``pyarrow.parquet`` through ``pyarrow.fs`` (``DataFrame.mapInArrow`` over the rows,
:func:`write_batches`), into the same layout as Spark's writer::

    <folder>/checkpoint=N/<day column>=YYYY-MM-DD/part-<task>-<uuid>.parquet

one file per task, checkpoint and UTC day. The files hold the rows' columns but the two
folder columns (``checkpoint_id`` and the timestamp are kept, as with Spark's writer). Each
task returns, per file written, the rows it holds per checkpoint and per value of the
counted columns (``WRITTEN_SCHEMA``): the driver learns the written files and their counts
from the job's result, without listing the folder or reading the files back. A task that
fails, or an attempt Spark discards, leaves its files as orphans: only the files of the
attempts whose result reached the driver are committed.

This module imports only ``pyarrow`` and the standard library at import time (and
``pipeline_core.storage`` in the task): it is what runs on the executors.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CHECKPOINT_FOLDER = "checkpoint"
CHECKPOINT_ID = "checkpoint_id"
NULL_FOLDER = "__HIVE_DEFAULT_PARTITION__"
"""A day folder's value for rows without a time (as Spark's writer names it)."""
COMPRESSION = "snappy"
"""As Spark's Parquet writer compresses by default."""
WRITTEN_SCHEMA = "path string, checkpoint_id long, key array<string>, rows long"
"""What :func:`write_batches` returns: per file (URI) written, the rows of each checkpoint
and value of the counted columns (``key``: their values as strings, in order)."""


@dataclass
class _OpenFile:
    uri: str
    sink: pa.NativeFile
    writer: pq.ParquetWriter
    counts: dict[tuple[str | None, ...], int] = field(default_factory=dict)


def write_batches(
    batches: Iterator[pa.RecordBatch],
    *,
    folder: str,
    day_column: str,
    count_by: Sequence[str],
) -> Iterator[pa.RecordBatch]:
    """For ``DataFrame.mapInArrow``: rows (with ``checkpoint_id`` and the UTC date column
    ``day_column``) in, written into ``folder`` (an object store's URL) by checkpoint and day;
    out, one ``WRITTEN_SCHEMA`` batch counting the rows of every file written.

    Raises:
        OSError: a file cannot be written (the task fails; Spark retries it).
    """
    from pipeline_core.storage import location_filesystem

    filesystem, root = location_filesystem(folder)
    scheme = urlparse(folder).scheme or "file"
    token = uuid.uuid4().hex
    files: dict[tuple[int, date | None], _OpenFile] = {}
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            groups = table.select([CHECKPOINT_ID, day_column]).group_by(
                [CHECKPOINT_ID, day_column], use_threads=False
            )
            for group in groups.aggregate([]).to_pylist():
                checkpoint_id, day = int(group[CHECKPOINT_ID]), group[day_column]
                rows = table.filter(_in_group(table, checkpoint_id, day_column, day))
                data = rows.drop_columns([day_column])
                key = (checkpoint_id, day)
                if key not in files:
                    folder_name = day.isoformat() if day is not None else NULL_FOLDER
                    path = (
                        f"{root}/{CHECKPOINT_FOLDER}={checkpoint_id}/{day_column}={folder_name}"
                        f"/part-{len(files):05d}-{token}.parquet"
                    )
                    sink = filesystem.open_output_stream(path)
                    files[key] = _OpenFile(
                        f"{scheme}://{path}",
                        sink,
                        pq.ParquetWriter(sink, data.schema, compression=COMPRESSION),
                    )
                files[key].writer.write_table(data)
                _count(files[key].counts, rows, count_by)
        for opened in files.values():
            opened.writer.close()
            opened.sink.close()
    except BaseException:
        for opened in files.values():
            with contextlib.suppress(Exception):  # the first error is the one to report
                opened.writer.close()
                opened.sink.close()
        raise
    paths, checkpoints, keys, counts = [], [], [], []
    for (checkpoint_id, _), opened in files.items():
        for values, rows_of in opened.counts.items():
            paths.append(opened.uri)
            checkpoints.append(checkpoint_id)
            keys.append(list(values))
            counts.append(rows_of)
    if paths:
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(paths, pa.string()),
                pa.array(checkpoints, pa.int64()),
                pa.array(keys, pa.list_(pa.string())),
                pa.array(counts, pa.int64()),
            ],
            names=["path", CHECKPOINT_ID, "key", "rows"],
        )


def _in_group(table: pa.Table, checkpoint_id: int, day_column: str, day: date | None) -> pa.Array:
    same_checkpoint = pc.equal(table.column(CHECKPOINT_ID), checkpoint_id)
    days = table.column(day_column)
    same_day = pc.is_null(days) if day is None else pc.fill_null(pc.equal(days, day), False)
    return pc.and_(same_checkpoint, same_day)


def _count(
    counts: dict[tuple[str | None, ...], int], rows: pa.Table, count_by: Sequence[str]
) -> None:
    if not count_by:
        counts[()] = counts.get((), 0) + rows.num_rows
        return
    grouped = rows.select(list(count_by)).group_by(list(count_by), use_threads=False)
    for item in grouped.aggregate([([], "count_all")]).to_pylist():
        values = tuple(None if item[c] is None else str(item[c]) for c in count_by)
        counts[values] = counts.get(values, 0) + int(item["count_all"])
