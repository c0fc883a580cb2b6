"""What the operations on a pipeline report: a checkpoint with what it holds (built from its
record and its batches by :func:`checkpoint_views`), and what one collect did."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline_core.metastore import BatchRecord, CheckpointRecord, CheckpointState, LandingCounts
from pipeline_core.staging_contract import StagingArea


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint and what it holds, across every host's batch."""

    checkpoint_id: int
    pipeline: str
    state: CheckpointState
    run_id: str | None
    staging_dir: Path
    """``<staging>/<pipeline>/<checkpoint:08d>``: one folder per host's batch. With staging in
    an object store, the collector's spool folder of the checkpoint (where batches wait for
    their upload; ``staging_url`` is where they are)."""
    line_count: int
    byte_count: int
    batch_ids: tuple[int, ...]
    requested_at: datetime
    sealed_at: datetime | None
    committed_at: datetime | None
    landing: dict[str, Any] = field(default_factory=dict)
    """What the lake tables held of it when it was committed: ``rows`` per table, ``rejects``
    per reason, the tables' ``snapshots`` (empty until committed)."""
    error: str | None = None
    """Why the checkpoint FAILED (``None`` otherwise, or when nobody said)."""
    hosts: tuple[str, ...] = ()
    """The hosts whose batches the metastore recorded (the batch folders to land)."""
    data_interval: tuple[datetime, datetime] | None = None
    """The data interval of the DAG run that requested it, when one was recorded."""
    staging_url: str | None = None
    """With staging in an object store: ``<staging>/<pipeline>/<checkpoint:08d>`` there."""
    event_count: int = 0
    """The events its batches hold, which land as its rows + rejects: its lines, less the
    lines that continue a multiline event."""

    @property
    def staging(self) -> str:
        """Where the checkpoint's batches are: ``staging_url``, or the ``staging_dir`` path."""
        return self.staging_url or str(self.staging_dir)

    @property
    def landed(self) -> LandingCounts:
        """The totals of ``landing``: rows and rejects (``None`` until committed)."""
        return LandingCounts.of(self.landing)


@dataclass(frozen=True)
class CollectReport:
    """What one ``collect_once`` did."""

    sealed: tuple[CheckpointInfo, ...]
    files: int
    lines: int
    bytes: int
    seconds: float


def checkpoint_views(
    records: Sequence[CheckpointRecord], batches: Iterable[BatchRecord], staging: StagingArea
) -> list[CheckpointInfo]:
    """The views of ``records``, in their order, each with its batches (``batches`` holds
    those of them all, read in one query) and its locations in ``staging``."""
    own: dict[int, list[BatchRecord]] = {record.checkpoint_id: [] for record in records}
    for batch in batches:
        own.setdefault(batch.checkpoint_id, []).append(batch)
    return [_view(record, own[record.checkpoint_id], staging) for record in records]


def _view(
    record: CheckpointRecord, batches: list[BatchRecord], staging: StagingArea
) -> CheckpointInfo:
    return CheckpointInfo(
        checkpoint_id=record.checkpoint_id,
        pipeline=record.pipeline,
        state=record.state,
        run_id=record.run_id,
        staging_dir=staging.sealed_dir(record.checkpoint_id),
        staging_url=staging.checkpoint_url(record.checkpoint_id),
        line_count=sum(b.line_count for b in batches),
        byte_count=sum(b.byte_count for b in batches),
        event_count=sum(b.event_count for b in batches),
        batch_ids=tuple(b.batch_id for b in batches if b.batch_id is not None),
        hosts=tuple(sorted(b.host for b in batches)),
        requested_at=record.requested_at,
        sealed_at=record.sealed_at,
        committed_at=record.committed_at,
        landing=record.landing,
        error=record.error,
        data_interval=record.data_interval,
    )
