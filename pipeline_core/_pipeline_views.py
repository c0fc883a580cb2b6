"""What the operations on a pipeline report: a checkpoint with what it holds, what one collect
did, and the pipeline's status."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline_core.metastore import CheckpointState, LandingCounts
from pipeline_core.source import FileRecord


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


@dataclass(frozen=True)
class PipelineStatus:
    """Files and offsets, checkpoints and who holds the collector lease."""

    pipeline: str
    host: str
    files: tuple[FileRecord, ...]
    checkpoints: tuple[CheckpointInfo, ...]
    lease_holder: str | None
