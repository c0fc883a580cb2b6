"""Lines longer than ``max_line_bytes``: found, skipped to their end, kept as a prefix.

Such a line is never held whole (it may be gigabytes): the reader keeps its first
``LONG_LINE_PREFIX_BYTES`` and looks for its newline a step at a time, then hands it out as one
chunk of its prefix that covers the whole line (:class:`~pipeline_core.source.LongLine`). The
lake rejects it as ``line_too_long`` with its length; it is never cut into pieces.
"""

from __future__ import annotations

import os

import numpy as np

from pipeline_core.source._chunk import LongLine

LONG_LINE_PREFIX_BYTES = 1024
"""The most bytes of an over-long line that are kept (and staged): its first KiB, or all of
``max_line_bytes`` if that is less."""

_NEWLINE = 10


def prefix_bytes(max_line_bytes: int) -> int:
    """How many first bytes of an over-long line are kept."""
    return min(LONG_LINE_PREFIX_BYTES, max_line_bytes)


class LongLineScan:
    """The search for the end of an over-long line that starts at ``start`` in a file.

    It keeps the line's prefix and how far the line is known to hold no newline, so a line
    whose end is not written yet is searched on from there at the next read, not read again.

    Threading model: owned by the thread reading the file (the collector's mailbox thread).
    """

    def __init__(self, fingerprint: str, start: int, prefix: bytes, scanned: int) -> None:
        self.fingerprint = fingerprint
        self.start = start
        self.prefix = prefix
        """The line's first bytes (no newline among them)."""
        self.scanned = scanned
        """Bytes of the line from ``start`` known to hold no newline."""
        self.found: LongLine | None = None
        """The whole line, once its end was found."""

    def resumes(self, fingerprint: str, start: int, head: bytes | bytearray, size: int) -> bool:
        """Whether this scan is of the line at ``start`` of that file, which begins with
        ``head`` (read again just now) and still holds the bytes scanned (the file has
        ``size`` bytes)."""
        return (
            self.fingerprint == fingerprint
            and self.start == start
            and head[: len(self.prefix)] == self.prefix
            and size >= start + self.scanned
        )

    def advance(self, fd: int, step: int, final: bool) -> LongLine | None:
        """Read on from the scanned bytes, ``step`` bytes at a time, until the line's newline
        or the file's end.

        Returns:
            The line once its end is found: its newline, or the file's end if ``final`` (the
            file will not grow). None while the file ends before the line does.

        Raises:
            OSError: the file cannot be read.
        """
        if self.found is not None:
            return self.found
        buffer = bytearray(step)
        while True:
            read = os.preadv(fd, [buffer], self.start + self.scanned)
            if not read:
                if not final:
                    return None
                self.found = LongLine(self.scanned, terminated=False)
                return self.found
            newline = buffer.find(b"\n", 0, read)
            if newline >= 0:
                self.found = LongLine(self.scanned + newline, terminated=True)
                return self.found
            self.scanned += read


def first_long_line(data: bytes | bytearray, max_line_bytes: int) -> int:
    """Where the first line of ``data`` (whole lines, ending with a newline) longer than
    ``max_line_bytes`` starts, or -1 (vectorised: no Python work per line)."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    over = np.flatnonzero(ends - starts > max_line_bytes)
    return int(starts[over[0]]) if len(over) else -1


def read_long_line(
    fd: int, start: int, end: int, max_line_bytes: int
) -> tuple[bytes, LongLine] | None:
    """Bytes ``[start, end)`` of a file as an over-long line, if they are one: its prefix and
    the line. None if they are a line of at most ``max_line_bytes`` (or cannot be read whole).

    Raises:
        OSError: the file cannot be read.
    """
    if end - start <= max_line_bytes:
        return None
    last = os.pread(fd, 1, end - 1)
    if len(last) != 1:
        return None
    terminated = last == b"\n"
    length = end - start - terminated
    if length <= max_line_bytes:
        return None
    prefix = os.pread(fd, prefix_bytes(max_line_bytes), start)
    return prefix, LongLine(length, terminated)
