"""The unit that crosses thread boundaries: whole lines of one file, as raw bytes."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from pipeline_core.staging_contract import NO_EVENTS, EventRuns, events_in

_compiled: ModuleType | None
try:
    from pipeline_core.source import _framing as _compiled
except ImportError:  # built without a C compiler
    _compiled = None

_NEWLINE = 10
_VECTOR_COUNT_BYTES = 64 * 1024
"""Without the compiled count, newlines are counted with NumPy from this size on: about four
times as fast as ``bytes.count``, and without holding the GIL, so the sink threads write
meanwhile (as the compiled count does)."""


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line longer than ``max_line_bytes``, which a chunk stands for without holding it."""

    length: int
    """The line's bytes, without its newline."""
    terminated: bool
    """Whether a newline ends it (False: the unterminated end of a rotated file)."""

    @property
    def size(self) -> int:
        """The bytes it takes in its file, its newline included."""
        return self.length + self.terminated


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes ``[start, end)`` of one file.

    Usually ``data`` holds those bytes: whole lines, each ending with ``\\n``; only the last may
    lack it (the unterminated end of a rotated file). ``lines`` counts them. The reader hands
    out a ``bytearray``, cut to whole lines in place (without a copy); nothing downstream
    modifies it.

    With ``long_line`` set, the chunk is one line longer than ``max_line_bytes``: ``data`` holds
    only its first bytes (``LONG_LINE_PREFIX_BYTES`` at most, no newline), ``lines`` is 1 and
    the chunk covers the whole line in its file, newline included. The lake rejects it as
    ``line_too_long``; it is never a row.

    ``events`` lists the chunk's multiline events (a source with ``multiline``): a chunk
    always starts at an event's first line and ends after an event's last line; a line no span
    covers is an event of its own.

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
    long_line: LongLine | None = None
    events: EventRuns = NO_EVENTS

    def tracked_as(self, tree: int, edge: int) -> Chunk:
        """The chunk as the acker's ``tree`` carries it on ``edge``: ``dataclasses.replace``
        without its look-up of every field by name (once per chunk read)."""
        return Chunk(
            source=self.source,
            fingerprint=self.fingerprint,
            start=self.start,
            data=self.data,
            lines=self.lines,
            tree=tree,
            edge=edge,
            replay=self.replay,
            long_line=self.long_line,
            events=self.events,
        )

    @property
    def event_count(self) -> int:
        """The events the chunk holds (its lines, when none is multiline)."""
        return events_in(self.events, self.lines) if self.events else self.lines

    @property
    def end(self) -> int:
        """Where the chunk ends in its file."""
        if self.long_line is not None:
            return self.start + self.long_line.size
        return self.start + len(self.data)


def count_lines(data: bytes | bytearray) -> int:
    """Lines in ``data`` as the handoff sink splits them (an unterminated tail is a line)."""
    if not data:
        return 0
    if _compiled is not None:  # no array the size of the data, nor NumPy's dispatch
        newlines: int = _compiled.count_newlines(data)
    elif len(data) < _VECTOR_COUNT_BYTES:
        newlines = data.count(b"\n")
    else:
        newlines = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE))
    return newlines + (0 if data[-1] == _NEWLINE else 1)
