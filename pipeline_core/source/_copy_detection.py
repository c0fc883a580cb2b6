"""Telling a copytruncate copy from a file that merely looks like one."""

from __future__ import annotations

import os
import zlib

from pipeline_core.source._tracked_file import TrackedFile


def match_signature(fd: int, candidates: list[TrackedFile]) -> TrackedFile | None:
    """The first candidate whose signature (first bytes) the file at ``fd`` starts with."""
    heads: dict[int, int] = {}
    for tracked in candidates:
        size = tracked.signature.size
        if size not in heads:
            head = os.pread(fd, size, 0)
            heads[size] = -1 if len(head) < size else zlib.crc32(head)
        if heads[size] == tracked.signature.crc:
            return tracked
    return None


def after_last_newline(fd: int, size: int) -> int:
    """Offset just after the last complete line before ``size`` (reading from the end)."""
    window = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    cut = window.rfind(b"\n")
    return size - len(window) + cut + 1 if cut >= 0 else 0


COPY_PROBE_BYTES = 4096
"""How many bytes before its end a file is compared with a live file of the same signature."""


def same_bytes_at_end(fd: int, original: TrackedFile, size: int) -> bool:
    """Whether the file at ``fd`` (``size`` bytes) ends like ``original`` at the same offset:
    then it is a copy of it (copytruncate, before the truncation). Files that merely share
    their first bytes (a common header) differ there and are distinct files. A file longer
    than a live original that was not truncated cannot be its copy. When ``original`` was just
    truncated (shorter than what was read of it), it counts as a copy: the next scan sees the
    truncation and adopts the copy properly."""
    if original.fd is None:
        return True
    current = original.size()
    if current < original.read_offset:
        return True
    if current < size:
        return False
    probe = min(size, COPY_PROBE_BYTES)
    offset = size - probe
    try:
        return os.pread(fd, probe, offset) == os.pread(original.fd, probe, offset)
    except OSError:
        return True


def copy_in_the_making(fd: int, size: int, candidates: list[TrackedFile]) -> bool:
    """Whether the file at ``fd`` (``size`` bytes) is shorter than the signature of a file
    still open and holds exactly that file's first bytes: a copy caught while being written
    (copytruncate), which would otherwise be tracked as a new file and read again in full."""
    head: bytes | None = None
    for tracked in candidates:
        if tracked.fd is None or size >= tracked.signature.size:
            continue
        try:
            head = os.pread(fd, size, 0) if head is None else head
            if len(head) == size and os.pread(tracked.fd, size, 0) == head:
                return True
        except OSError:
            continue
    return False
