"""What a tracked file remembers of the bytes it read: enough to tell whether the file still
holds them, and where a file cut below its read offset stops holding them.

The last :data:`TAIL_WINDOW_BYTES` bytes read stay in memory (with the offset they end at);
across a restart the metastore keeps the CRC-32s of the last lines sealed (:class:`LineDigest`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pipeline_core.source._line_digest import LineDigest

TAIL_WINDOW_BYTES = 16 * 1024
"""How many of the last bytes read are kept, to find where a file cut below its read offset
(its beginning kept) starts to differ from what was read."""
TAIL_CHECK_BYTES = 64
"""How many bytes just before the read offset are compared with what was read, before each read
and at each scan: a file cut and written again past its read offset differs there."""


@dataclass(frozen=True, slots=True)
class KeptLength:
    """Where a cut file stops being the bytes that were read (:meth:`ReadMemory.kept_length`)."""

    offset: int
    """Bytes before it are the ones already read; bytes from it on are new."""
    verified: bool
    """False when the cut lies before the bytes kept to compare (or none are kept, after a
    restart): ``offset`` is then the file's size, taken on trust."""


class ReadMemory:
    """The last bytes read of one file, and the digest of the last lines sealed.

    Threading model: owned by the collector's mailbox thread, with its tracked file.
    """

    __slots__ = ("_tail", "_tail_end", "digest")

    def __init__(self, digest: LineDigest | None = None) -> None:
        self._tail = b""
        self._tail_end = 0
        self.digest = digest
        """The last lines sealed, as the metastore kept them (compared after a restart)."""

    @property
    def _tail_start(self) -> int:
        return self._tail_end - len(self._tail)

    def remember(self, data: bytes | bytearray, end: int) -> None:
        """Keep the last bytes read, which end at ``end``."""
        if len(data) >= TAIL_WINDOW_BYTES:
            self._tail = bytes(data[-TAIL_WINDOW_BYTES:])
        elif self._tail_end == end - len(data):
            self._tail = (self._tail + bytes(data))[-TAIL_WINDOW_BYTES:]
        else:
            self._tail = bytes(data)
        self._tail_end = end

    def digest_at(self, offset: int) -> LineDigest | None:
        """The digest to store with a sealed ``offset``: of the last bytes read, or the one
        loaded at the start while nothing newer covers it."""
        digest = LineDigest.of(self._tail, self._tail_end, offset)
        if digest is None and self.digest is not None and self.digest.ends[-1] <= offset:
            return self.digest
        return digest

    def intact(self, fd: int, read_offset: int) -> bool:
        """Whether the bytes just before ``read_offset`` are still the ones read there (or,
        just after a restart, the last line sealed is)."""
        end = read_offset
        start = max(end - TAIL_CHECK_BYTES, self._tail_start)
        try:
            if end > self._tail_end or start >= end:
                digest = self.digest
                if digest is not None and digest.ends[-1] == end:
                    return digest.last_line_intact(fd)
                return True  # nothing read here is kept to compare with
            at = len(self._tail) - (self._tail_end - start)
            return os.pread(fd, end - start, start) == self._tail[at : at + end - start]
        except OSError:
            return True

    def holds_what_was_read(self, fd: int) -> bool:
        """Whether the file at ``fd`` holds the last bytes read where they were read (as far
        as it is long): what a copy of the file does."""
        start = self._tail_start
        end = min(self._tail_end, os.fstat(fd).st_size)
        if not self._tail or end <= start:
            return True  # nothing kept to compare with
        return os.pread(fd, end - start, start) == self._tail[: end - start]

    def kept_length(self, fd: int | None, size: int) -> KeptLength:
        """Where the file (open at ``fd``, ``size`` bytes now), cut below its read offset with
        its first bytes kept, stops holding the lines that were read: the start of the first
        line that differs from what was read, or the file's end if none does. A line is new as
        a whole: one whose first bytes happen to be the old line's, or a line cut in two whose
        kept half the next write joins, is read again from its start, as it now stands.

        What was read is compared through the last bytes read or, after a restart, the digest
        of the last lines sealed. A cut before both cannot be checked: it is taken to be at the
        file's size, or where the first compared line starts if that is sooner."""
        trusted = size
        if fd is not None:
            try:
                kept = self._kept_in_tail(fd, size)
                if kept is not None:
                    return KeptLength(kept, verified=True)
                if self._tail:
                    trusted = min(trusted, self._tail_start)
                if self.digest is not None:
                    end = self.digest.kept_lines_end(fd, size)
                    if end is not None:
                        return KeptLength(end, verified=True)
                    trusted = min(trusted, self.digest.start)
            except OSError:
                pass
        return KeptLength(trusted, verified=False)

    def _kept_in_tail(self, fd: int, size: int) -> int | None:
        """:meth:`kept_length` from the last bytes read; None if they cannot tell."""
        start = self._tail_start
        if not self._tail or size < start:
            return None
        current = os.pread(fd, min(size, self._tail_end) - start, start)
        differs = _first_difference(current, self._tail)
        if differs is None:
            if current.endswith(b"\n") or not current:
                return start + len(current)
            differs = len(current)  # cut within a line: what is written next joins it
        line_start = current.rfind(b"\n", 0, differs) + 1
        if line_start == 0 and start > 0:
            return None  # the differing line began before the kept bytes
        return start + line_start


def _first_difference(a: bytes, b: bytes) -> int | None:
    """The first index where ``a`` differs from ``b`` (over ``a``'s length), or None."""
    if b.startswith(a):
        return None
    low, high = 0, len(a)  # a[:low] == b[:low]; a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low
