"""A tracked file as it is kept between runs: its identity, its sealed offset and its state.

The metastore stores these with every sealed batch; a restarted collector's watcher starts from
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pipeline_core.source._file_lifecycle import FileState


@dataclass(frozen=True)
class FileRecord:
    """A file as the metastore remembers it, at the offset covered by sealed batches."""

    source: str
    fingerprint: str
    path: str
    dev: int
    ino: int
    sig_size: int
    sig_crc: int
    sealed_offset: int
    state: FileState
    tail_digest: str | None = None
    """The last lines before ``sealed_offset`` as CRC-32s (``source.LineDigest``, encoded):
    lets a restarted collector find where a file cut below its offset stops holding them."""
    updated_at: datetime | None = field(default=None, compare=False)
    """When the metastore last saved the record (None: not saved yet). A file DONE at that
    time has been DONE at least since (``FileWatcher.forget_done``)."""
