"""The last lines read of a file, as CRC-32s: what is kept of them across a restart.

A tracked file keeps the last bytes it read in memory, to find where a file cut below its read
offset stops holding what was read. A restarted collector has lost them; the metastore keeps,
with each sealed offset, the CRC-32 and end of each of the last :data:`DIGEST_LINES` whole lines
before it. That is enough to find the cut to the line, as the bytes themselves do.
"""

from __future__ import annotations

import itertools
import os
import zlib
from dataclasses import dataclass

DIGEST_LINES = 32
"""How many lines before the sealed offset are kept (about 5 KiB of nginx lines; about 600
characters in the metastore)."""


@dataclass(frozen=True, slots=True)
class LineDigest:
    """Lines ``[start, ends[0])``, ``[ends[0], ends[1])`` … of a file (each with its newline),
    by their CRC-32s."""

    start: int
    ends: tuple[int, ...]
    crcs: tuple[int, ...]

    @classmethod
    def of(cls, tail: bytes, tail_end: int, offset: int) -> LineDigest | None:
        """The digest of the whole lines of ``tail`` (bytes ending at ``tail_end``) that end at
        or before ``offset``; None when none does, or ``offset`` is not within ``tail``."""
        tail_start = tail_end - len(tail)
        if not tail_start <= offset <= tail_end:
            return None
        limit = offset - tail_start
        newlines: list[int] = []
        at = limit
        while len(newlines) <= DIGEST_LINES:
            at = tail.rfind(b"\n", 0, at)
            if at < 0:
                break
            newlines.append(at)
        newlines.reverse()
        if tail_start == 0 and len(newlines) <= DIGEST_LINES:
            newlines.insert(0, -1)  # the file's first line starts the window
        if len(newlines) < 2:
            return None
        ends = tuple(tail_start + n + 1 for n in newlines[1:])
        crcs = tuple(zlib.crc32(tail[a + 1 : b + 1]) for a, b in itertools.pairwise(newlines))
        return cls(tail_start + newlines[0] + 1, ends, crcs)

    def encode(self) -> str:
        """``start;end:crc;end:crc…``: compact text for the metastore."""
        pairs = (f"{e}:{c}" for e, c in zip(self.ends, self.crcs, strict=True))
        return ";".join([str(self.start), *pairs])

    @classmethod
    def decode(cls, text: str | None) -> LineDigest | None:
        """The digest ``encode`` wrote, or None for no digest (or an unreadable one)."""
        if not text:
            return None
        try:
            head, *items = text.split(";")
            pairs = [item.split(":") for item in items]
            return cls(int(head), tuple(int(e) for e, _ in pairs), tuple(int(c) for _, c in pairs))
        except ValueError:
            return None

    def kept_lines_end(self, fd: int, size: int) -> int | None:
        """Where a file now ``size`` bytes long stops holding these lines: the start of the
        first of them that is not whole and unchanged (or the end of the last). None when
        that is the first and it does not start the file: the cut may lie before it."""
        end = min(size, self.ends[-1])
        current = os.pread(fd, end - self.start, self.start) if end > self.start else b""
        line_start = self.start
        for line_end, crc in zip(self.ends, self.crcs, strict=True):
            if line_end > self.start + len(current):
                break
            if zlib.crc32(current[line_start - self.start : line_end - self.start]) != crc:
                break
            line_start = line_end
        if line_start == self.start and self.start > 0:
            return None
        return line_start

    def last_line_intact(self, fd: int) -> bool:
        """Whether the digest's last line is still in the file where it was."""
        start = self.ends[-2] if len(self.ends) > 1 else self.start
        line = os.pread(fd, self.ends[-1] - start, start)
        return zlib.crc32(line) == self.crcs[-1]
