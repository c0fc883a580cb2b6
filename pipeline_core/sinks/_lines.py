"""Chunks of raw lines -> an Arrow table, with no Python work per line."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from pipeline_core.source import Chunk

HANDOFF_SCHEMA = pa.schema(
    [
        pa.field("file_fingerprint", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("byte_offset", pa.int64(), nullable=False),
        pa.field("line", pa.binary(), nullable=False),
    ]
)
"""The columns of a handoff part file (see docs/architecture.md)."""

_NEWLINE = 10


def lines_table(chunks: Sequence[Chunk]) -> pa.Table:
    """One row per line of ``chunks``: the file's fingerprint, the line's offset, its bytes
    without the trailing newline. Newlines are found with NumPy, bytes joined in C."""
    fingerprints: dict[str, int] = {}
    values: list[bytes] = []
    value_offsets: list[np.ndarray] = []
    byte_offsets: list[np.ndarray] = []
    file_indices: list[np.ndarray] = []
    base = 0
    for chunk in chunks:
        data = chunk.data
        if not data:
            continue
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
        terminated = data[-1] == _NEWLINE
        starts = np.empty(len(newlines) + (0 if terminated else 1), dtype=np.int64)
        starts[0] = 0
        starts[1:] = newlines[: len(starts) - 1] + 1
        # Line i starts after i newlines, so in the newline-free buffer it starts at start - i.
        value_offsets.append(starts - np.arange(len(starts), dtype=np.int64) + base)
        byte_offsets.append(starts + chunk.start)
        index = fingerprints.setdefault(chunk.fingerprint, len(fingerprints))
        file_indices.append(np.full(len(starts), index, dtype=np.int32))
        stripped = data.replace(b"\n", b"")
        values.append(stripped)
        base += len(stripped)
    if not values:
        return HANDOFF_SCHEMA.empty_table()
    offsets = np.concatenate([*value_offsets, np.array([base], dtype=np.int64)])
    rows = len(offsets) - 1
    if base >= 2**31:
        raise ValueError(f"{base} bytes of lines do not fit one row group; flush sooner")
    line = pa.Array.from_buffers(
        pa.binary(),
        rows,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(values))],
    )
    fingerprint = pa.DictionaryArray.from_arrays(
        _numeric(pa.int32(), np.concatenate(file_indices)),
        _strings(list(fingerprints)),
    )
    byte_offset = _numeric(pa.int64(), np.concatenate(byte_offsets))
    return pa.Table.from_arrays([fingerprint, byte_offset, line], schema=HANDOFF_SCHEMA)


def _numeric(kind: pa.DataType, values: np.ndarray) -> pa.Array:
    """Wrap a NumPy buffer without a copy (and without pyarrow's pandas-aware conversion)."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _strings(values: list[str]) -> pa.Array:
    """A string array built from buffers: ``pa.array`` on a list would import pandas (seconds)."""
    encoded = [v.encode() for v in values]
    offsets = np.cumsum([0, *map(len, encoded)], dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
