"""What became of a tracked file's content since it was read: the truncation checks.

A file still starting with its signature and still holding the last bytes read where they
were read is the same file (it may have grown); one whose first bytes changed was replaced
(truncated and written again, or another file); one whose first bytes are kept but which is
shorter than what was read, or differs just before its read offset, was cut. The watcher acts
on the answer (:class:`KnownFiles`); a read checks the last bytes before it hands any out.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from pipeline_core.source._fingerprint import signature_matches
from pipeline_core.source._read_memory import KeptLength

if TYPE_CHECKING:
    from pipeline_core.source._tracked_file import TrackedFile


class ContentChange(Enum):
    """What became of an open file since it was last read (:func:`content_change`)."""

    SAME = "same"
    """Still the file read so far (it may have grown)."""
    REPLACED = "replaced"
    """Its first bytes changed: truncated and written again from its start, or another file."""
    CUT = "cut"
    """Its first bytes are kept, but it is shorter than what was read of it, or the bytes just
    before the read offset changed: cut below the read offset (and perhaps written again)."""


def content_change(tracked: TrackedFile, signature_bytes: int) -> ContentChange:
    """What became of ``tracked``'s open file: still the same, replaced, or cut below what was
    read. Grows its signature while the file is shorter than ``signature_bytes``."""
    if not tracked.still_same_file(signature_bytes):
        return ContentChange.REPLACED
    size = tracked.size()
    if size < tracked.read_offset or not tail_intact(tracked):
        # Seen after the signature was checked: a copytruncate between the two looks like
        # a cut, so it is one only if the file still starts as it did now.
        try:
            if tracked.fd is None or not signature_matches(tracked.fd, tracked.signature):
                return ContentChange.REPLACED
        except OSError:
            return ContentChange.REPLACED
        return ContentChange.CUT
    tracked.seen_size = max(tracked.seen_size, size)
    return ContentChange.SAME


def tail_intact(tracked: TrackedFile) -> bool:
    """Whether ``tracked``'s open file still holds the last bytes read where they were read
    (True when closed: nothing to compare)."""
    return tracked.fd is None or tracked.memory.intact(tracked.fd, tracked.read_offset)


def kept_length(tracked: TrackedFile) -> KeptLength:
    """Where ``tracked``'s open file, cut below its read offset with its first bytes kept,
    stops holding the lines that were read (:meth:`ReadMemory.kept_length`)."""
    return tracked.memory.kept_length(tracked.fd, tracked.size())
