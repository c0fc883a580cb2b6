"""Value objects read from and written to the metastore."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class CheckpointState(StrEnum):
    """Lifecycle of a checkpoint: REQUESTED -> SEALED -> COMMITTED (or FAILED)."""

    REQUESTED = "requested"
    SEALED = "sealed"
    COMMITTED = "committed"
    FAILED = "failed"


class FileState(StrEnum):
    """Where a tracked file stands."""

    LIVE = "live"
    """Found at one of the source's paths."""
    ROTATED = "rotated"
    """Renamed away from the paths or deleted; read to its end from the open descriptor."""
    DETACHED = "detached"
    """Its inode was truncated or reused (copytruncate); waiting for the copy to turn up."""
    COPIED = "copied"
    """The copy copytruncate made of a file, found at a source path: never written again, so
    read to its end (an unterminated last line included), then kept, claimed at its path, so
    it is never read as a new file."""
    DONE = "done"
    """Read to its end after rotation; kept so it is never read again."""


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


@dataclass(frozen=True)
class CheckpointRecord:
    checkpoint_id: int
    pipeline: str
    state: CheckpointState
    run_id: str | None
    requested_at: datetime
    sealed_at: datetime | None
    committed_at: datetime | None
    landing: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, end)`` of one file, holding ``lines`` whole lines."""

    fingerprint: str
    start: int
    end: int
    lines: int


@dataclass(frozen=True)
class BatchRecord:
    """One host's sealed share of a checkpoint."""

    checkpoint_id: int
    host: str
    staging_path: str
    line_count: int
    byte_count: int
    part_count: int
    checksum: str
    manifest: dict[str, Any]
    ranges: tuple[ByteRange, ...]
    batch_id: int | None = None


@dataclass(frozen=True)
class SinkStateRecord:
    """The stored penalty/backoff state of one sink of a sink group (times in epoch seconds)."""

    sink_group: str
    sink: str
    consecutive_failures: int
    excluded_until: float
    last_failure_at: float
    last_error: str | None


@dataclass(frozen=True)
class AckerTreeRecord:
    """An acker tree in flight: bytes ``[start, end)`` of a file not yet acked by every sink
    group. Ids are unsigned 64-bit integers."""

    tree_id: int
    value: int
    source: str
    fingerprint: str
    start: int
    end: int
    lines: int
