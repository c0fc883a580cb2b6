"""The unit that crosses thread boundaries: whole lines of one file, as raw bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_NEWLINE = 10
_VECTOR_COUNT_BYTES = 64 * 1024
"""From this size on, newlines are counted with NumPy: about four times as fast as
``bytes.count``, and without holding the GIL, so the sink threads write meanwhile."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes ``[start, start + len(data))`` of one file.

    ``data`` holds whole lines, each ending with ``\\n``; only the last may lack it (a line cut at
    ``max_line_bytes``, or the unterminated end of a rotated file). ``lines`` counts them. The
    reader hands out a ``bytearray``, cut to whole lines in place (without a copy); nothing
    downstream modifies it.

    ``tree`` and ``edge`` are the acker's tree id and the id of the edge that carries the chunk
    (0: not tracked); ``replay`` marks a range read again for sinks that did not ack it.
    """

    source: str
    fingerprint: str
    start: int
    data: bytes | bytearray
    lines: int
    tree: int = 0
    edge: int = 0
    replay: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.data)


def count_lines(data: bytes | bytearray) -> int:
    """Lines in ``data`` as the handoff sink splits them (an unterminated tail is a line)."""
    if not data:
        return 0
    if len(data) < _VECTOR_COUNT_BYTES:
        newlines = data.count(b"\n")
    else:
        newlines = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE))
    return newlines + (0 if data[-1] == _NEWLINE else 1)
