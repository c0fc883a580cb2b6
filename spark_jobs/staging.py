"""Reading handoff part files: chunk rows (as the collector read them) -> one row per line.

A part file holds one row per chunk: ``file_fingerprint``, ``start_offset``, ``line_count`` and
``data`` (whole lines of one file, as read). ``split_chunks`` turns record batches of such rows
into record batches of lines with NumPy (no Python work per line), for ``mapInArrow``: the
splitting runs on the executors, in parallel, next to the parsing.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

PART_SCHEMA = StructType(
    [
        StructField("file_fingerprint", StringType()),
        StructField("start_offset", LongType()),
        StructField("line_count", IntegerType()),
        StructField("data", BinaryType()),
    ]
)
"""The columns of a handoff part file (see docs/architecture.md)."""

LINE_SCHEMA = StructType(
    [
        StructField("uri", StringType()),
        StructField("file_fingerprint", StringType()),
        StructField("byte_offset", LongType()),
        StructField("line", BinaryType()),
    ]
)
"""What ``split_chunks`` yields: a row per line, with the part file it came from."""

CHUNKS_PER_ARROW_BATCH = 8
"""Chunk rows (up to about ``read_chunk_bytes`` each) per Arrow batch sent to the workers."""

_NEWLINE = 10


def split_chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``DataFrame.mapInArrow``: batches of ``(uri, file_fingerprint, start_offset, data)``
    chunk rows in, batches of ``LINE_SCHEMA`` lines out.

    A line is the bytes up to and without its ``\\n``; a chunk's last line may lack one (a line
    cut at ``max_line_bytes``, or the unterminated end of a rotated file) and is a line too.
    """
    for batch in batches:
        uris: list[pa.Array] = []
        fingerprints: list[pa.Array] = []
        offsets: list[np.ndarray] = []
        value_offsets: list[np.ndarray] = []
        values: list[bytes] = []
        base = 0
        uri_column = batch.column("uri")
        fingerprint_column = batch.column("file_fingerprint")
        start_column = batch.column("start_offset")
        data_column = batch.column("data")
        for row in range(batch.num_rows):
            data = data_column[row].as_py()
            if not data:
                continue
            newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
            terminated = data[-1] == _NEWLINE
            starts = np.empty(len(newlines) + (0 if terminated else 1), dtype=np.int64)
            starts[0] = 0
            starts[1:] = newlines[: len(starts) - 1] + 1
            count = len(starts)
            # Line i starts after i newlines, so without them it starts at start - i.
            value_offsets.append(starts - np.arange(count, dtype=np.int64) + base)
            offsets.append(starts + start_column[row].as_py())
            stripped = data.replace(b"\n", b"")
            values.append(stripped)
            base += len(stripped)
            uris.append(pa.repeat(uri_column[row], count))
            fingerprints.append(pa.repeat(fingerprint_column[row], count))
        if not values:
            continue
        all_offsets = np.concatenate([*value_offsets, np.array([base], dtype=np.int64)])
        rows = len(all_offsets) - 1
        line = pa.Array.from_buffers(
            pa.large_binary(),
            rows,
            [None, pa.py_buffer(all_offsets), pa.py_buffer(b"".join(values))],
        ).cast(pa.binary())
        byte_offset = np.concatenate(offsets)
        yield pa.RecordBatch.from_arrays(
            [
                pa.concat_arrays(uris).cast(pa.string()),
                pa.concat_arrays(fingerprints).cast(pa.string()),
                pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(byte_offset)]),
                line,
            ],
            names=["uri", "file_fingerprint", "byte_offset", "line"],
        )
