"""Value objects read from and written to the metastore."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pipeline_core.metastore._lifecycle import CheckpointState


@dataclass(frozen=True)
class CheckpointRecord:
    """A checkpoint as the metastore holds it (times in UTC)."""

    checkpoint_id: int
    pipeline: str
    state: CheckpointState
    run_id: str | None
    requested_at: datetime
    sealed_at: datetime | None
    committed_at: datetime | None
    landing: dict[str, Any] = field(default_factory=dict)
    """The landing job's summary, stored when the checkpoint was committed (empty before)."""
    error: str | None = None
    """Why the checkpoint FAILED (``None`` otherwise)."""
    data_interval: tuple[datetime, datetime] | None = None
    """The data interval of the DAG run that requested it, when one was recorded."""


@dataclass(frozen=True)
class LandingCounts:
    """The totals of a landing job's summary: rows parsed into the lake tables and lines
    rejected, each ``None`` when the summary does not report it."""

    rows: int | None
    rejects: int | None

    @classmethod
    def of(cls, landing: Mapping[str, Any]) -> LandingCounts:
        """The totals of ``landing`` (``{"rows": {table: n}, "rejects": {reason: n}}``; a
        count may also be a plain number)."""
        return cls(_total(landing.get("rows")), _total(landing.get("rejects")))


def _total(count: object) -> int | None:
    if isinstance(count, Mapping):
        return sum(int(value) for value in count.values())
    if isinstance(count, int | float | str):
        return int(count)
    return None


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
    event_count: int
    """Its lines, less those that continue a multiline event: the rows + rejects it lands as."""
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


@dataclass(frozen=True)
class AckerTreeTotals:
    """What the acker trees saved for one host hold, in sum."""

    host: str
    trees: int
    lines: int
    bytes: int
    saved_at: datetime
    """When the newest of them was saved (UTC)."""


@dataclass(frozen=True)
class LeaseRecord:
    """Which collector process holds a pipeline's lease on a host, until when (UTC); ``live``:
    not expired by the database's clock when it was read."""

    host: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    live: bool = False


@dataclass(frozen=True)
class ReadProgressRecord:
    """One sample of what a collector read of a pipeline's files on one host.

    ``bytes_read`` and ``lines_read`` count what it read in the ``elapsed_s`` seconds before
    ``sampled_at``: since its previous sample, or since it began serving the pipeline (its
    first sample). ``unread_bytes`` is what its files held past its read offsets at
    ``sampled_at``: the collector's lag.
    """

    host: str
    sampled_at: datetime
    """When the sample was taken (UTC)."""
    elapsed_s: float
    bytes_read: int
    lines_read: int
    unread_bytes: int

    @property
    def follows_at(self) -> datetime:
        """When the span the sample counts began (its previous sample, when it had one)."""
        return self.sampled_at - timedelta(seconds=self.elapsed_s)
