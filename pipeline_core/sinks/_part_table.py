"""Chunks -> the Arrow table of a handoff part file: one row per chunk, no work per line."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from pipeline_core.source import Chunk

HANDOFF_SCHEMA = pa.schema(
    [
        pa.field("file_fingerprint", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("start_offset", pa.int64(), nullable=False),
        pa.field("line_count", pa.int32(), nullable=False),
        pa.field("data", pa.binary(), nullable=False),
    ]
)
"""The columns of a handoff part file (see docs/architecture.md): each row holds whole lines
``[start_offset, start_offset + len(data))`` of one file, as read. The landing job splits them
into lines (in parallel, on the executors)."""


def chunks_table(chunks: Sequence[Chunk]) -> pa.Table:
    """The part-file rows of ``chunks``, built from buffers (the chunks' bytes are joined once;
    nothing is done per line, and ``pa.array`` is avoided: it would import pandas)."""
    if not chunks:
        return HANDOFF_SCHEMA.empty_table()
    count = len(chunks)
    fingerprints: dict[str, int] = {}
    indices = np.fromiter(
        (fingerprints.setdefault(c.fingerprint, len(fingerprints)) for c in chunks),
        dtype=np.int32,
        count=count,
    )
    starts = np.fromiter((c.start for c in chunks), dtype=np.int64, count=count)
    lines = np.fromiter((c.lines for c in chunks), dtype=np.int32, count=count)
    sizes = np.fromiter((len(c.data) for c in chunks), dtype=np.int64, count=count)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"{offsets[-1]} bytes do not fit one row group; flush sooner")
    data = pa.Array.from_buffers(
        pa.binary(),
        count,
        [
            None,
            pa.py_buffer(offsets.astype(np.int32)),
            pa.py_buffer(b"".join(c.data for c in chunks)),
        ],
    )
    fingerprint = pa.DictionaryArray.from_arrays(
        _numeric(pa.int32(), indices), _strings(list(fingerprints))
    )
    return pa.Table.from_arrays(
        [fingerprint, _numeric(pa.int64(), starts), _numeric(pa.int32(), lines), data],
        schema=HANDOFF_SCHEMA,
    )


def _numeric(kind: pa.DataType, values: np.ndarray) -> pa.Array:
    """Wrap a NumPy buffer without a copy (and without pyarrow's pandas-aware conversion)."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _strings(values: list[str]) -> pa.Array:
    encoded = [v.encode() for v in values]
    offsets = np.cumsum([0, *map(len, encoded)], dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
