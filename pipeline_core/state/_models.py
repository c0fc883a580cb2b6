"""The snapshot's models: frozen pydantic values with a ``to_dict()`` JSON form."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, computed_field

from pipeline_core._compat import StrEnum


class _Snapshot(BaseModel):
    model_config = ConfigDict(frozen=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: datetimes as ISO 8601 strings, enums as their values."""
        return self.model_dump(mode="json")


class FileStatus(StrEnum):
    """A file's state in the metastore, or ``untracked`` for one found but never sealed."""

    LIVE = "live"
    ROTATED = "rotated"
    DETACHED = "detached"
    COPIED = "copied"
    DONE = "done"
    UNTRACKED = "untracked"


class FileSnapshot(_Snapshot):
    """One file of a pipeline and the bytes behind it that no sealed batch covers yet."""

    source: str
    host: str
    path: str
    """Where the file was at its last seal (for an untracked file: where it was found), shown
    escaped as ``pipeline_core._file_names.shown_path`` shows any name (so is
    ``current_path``)."""
    fingerprint: str | None
    """The metastore's identity of the file; None while untracked."""
    state: FileStatus
    sealed_offset: int
    """Bytes ``[0, sealed_offset)`` belong to sealed batches."""
    current_path: str | None = None
    """Where the same file (device, inode and first bytes) is now, when it could be found."""
    size: int | None = None
    """Its size on disk now; None when it could not be measured (see ``note``)."""
    unread_bytes: int | None = None
    """``size - sealed_offset``: bytes no sealed batch covers yet (a running collector may have
    read some of them already); 0 for a file read to its end; None when unknown."""
    read_offset: int | None = None
    """How far a running collector has read (None: not reported; see ``collector``)."""
    note: str | None = None


class BatchSnapshot(_Snapshot):
    """One collector host's sealed share of a checkpoint."""

    host: str
    lines: int
    bytes: int
    parts: int
    staging_path: str


class DagRunSnapshot(_Snapshot):
    """The Airflow DAG run that requested a checkpoint, as Airflow records it."""

    dag_id: str
    run_id: str
    state: str
    run_type: str | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None


DagRunLookup = Callable[[str, Sequence[str]], Mapping[str, DagRunSnapshot]]
"""``lookup(dag_id, run_ids) -> {run_id: DagRunSnapshot}`` for the runs that exist."""


class CheckpointSnapshot(_Snapshot):
    checkpoint_id: int
    state: str
    run_id: str | None
    requested_at: datetime
    sealed_at: datetime | None
    committed_at: datetime | None
    data_interval_start: datetime | None
    data_interval_end: datetime | None
    lines: int
    bytes: int
    landing_rows: int | None
    """Rows the landing job wrote (None until committed)."""
    landing_rejects: int | None
    landing_snapshots: dict[str, int | None] = {}
    """Each lake table's Iceberg snapshot when the checkpoint was committed (what the rows and
    rejects were read from)."""
    error: str | None
    batches: list[BatchSnapshot]
    dag_run: DagRunSnapshot | None = None
    """The requesting DAG run's outcome, read from Airflow (None: no run_id, or not found)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def seal_latency_s(self) -> float | None:
        """Seconds from the request to the seal (None until sealed)."""
        return _seconds(self.requested_at, self.sealed_at)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def commit_latency_s(self) -> float | None:
        """Seconds from the seal to the (latest) commit (None until committed)."""
        return _seconds(self.sealed_at, self.committed_at)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else (end - start).total_seconds()


class ReadProgressSnapshot(_Snapshot):
    """What a collector host read of the pipeline's files in the ``elapsed_s`` seconds before
    ``sampled_at``, and the bytes its files held past its read offsets then (its lag). Stored
    samples are merged when a window holds too many to show: counts add up, ``unread_bytes`` is
    the largest, ``sampled_at`` the last (``samples`` says how many were merged)."""

    host: str
    sampled_at: datetime
    elapsed_s: float
    """Seconds the counts cover: since the collector's previous sample, or since it began
    serving the pipeline."""
    bytes_read: int
    lines_read: int
    unread_bytes: int
    samples: int = 1

    @computed_field  # type: ignore[prop-decorator]
    @property
    def bytes_per_s(self) -> float | None:
        """The read rate over ``elapsed_s`` (None when it covers no time)."""
        return self.bytes_read / self.elapsed_s if self.elapsed_s > 0 else None


class SinkSnapshot(_Snapshot):
    """A sink of a sink group and its stored penalty/backoff state on one host."""

    name: str
    type: str | None
    """The sink's ``type`` in the config; None for stored state of a sink no longer there."""
    priority: int | None
    host: str | None
    """The collector host the state is from; None when no state was ever stored."""
    consecutive_failures: int
    excluded_until: datetime | None
    """End of the sink's penalty (failover) or exclusion (load balancing), if any was set."""
    penalty_remaining_s: float
    """Seconds of that penalty left when the snapshot was taken (0: the sink may be used)."""
    last_failure_at: datetime | None
    last_error: str | None


class SinkGroupSnapshot(_Snapshot):
    name: str
    processor: str | None
    """``default``, ``failover`` or ``load_balance``; None for a group no longer configured."""
    sinks: list[SinkSnapshot]


class LeaseSnapshot(_Snapshot):
    """Which collector process may read the pipeline's files on a host, until when."""

    host: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    live: bool


class StageQueueSnapshot(_Snapshot):
    """A stage queue's watermarks (from the config) and, when reported, its depth."""

    name: str
    high_watermark: int
    low_watermark: int
    depth: int | None = None
    """Chunks queued; None: not reported (only a running collector knows)."""


class AckerTreesSnapshot(_Snapshot):
    """The acker's in-flight trees of one collector host as last saved (at every checkpoint
    and every ``collector.acker_snapshot_s``): chunks read but not yet acked by every sink
    group, which a restarted collector delivers again."""

    host: str
    trees: int
    lines: int
    bytes: int
    saved_at: datetime


class LiveCollectorSnapshot(_Snapshot):
    """What a running collector (``sluice collect``) last reported for the pipeline: the
    metrics file it rewrites every few seconds under the pipeline's data directory, used only
    while fresh."""

    host: str
    state: str
    reported_at: datetime
    lines_read: int
    bytes_read: int
    bytes_sent: int
    trees_in_flight: int
    """Acker trees in flight now (read, not yet acked by every sink group)."""
    trees_replayed: int
    blocked_seconds: float


class PipelineSnapshot(_Snapshot):
    name: str
    dag_id: str
    config_path: str
    taken_at: datetime
    host: str | None = None
    """The collector host this config resolves to here (whose files can be measured)."""
    metastore: str | None = None
    """The metastore URL, password hidden."""
    error: str | None = None
    """Why the config or the metastore could not be read; the lists below are then partial."""
    files: list[FileSnapshot] = []
    unread_bytes: int = 0
    """Sum of the known ``unread_bytes`` of the files."""
    unmeasured_files: int = 0
    """Files whose unread bytes could not be measured here."""
    checkpoints: list[CheckpointSnapshot] = []
    """The newest checkpoints, newest first."""
    sink_groups: list[SinkGroupSnapshot] = []
    leases: list[LeaseSnapshot] = []
    collector: LiveCollectorSnapshot | None = None
    """The running collector's last report on this host; None when none is fresh."""
    stage_queues: list[StageQueueSnapshot] = []
    acker_trees: list[AckerTreesSnapshot] = []
    """In-flight acker trees per host, as last saved (no entry: none in flight then)."""
    read_progress: list[ReadProgressSnapshot] = []
    """What each collector host read, and had not read yet, sampled over the window since
    ``read_progress_since``, oldest first."""
    read_progress_since: datetime | None = None
    notes: list[str] = []
    """What the snapshot cannot show, and why."""


class PipelineSummary(_Snapshot):
    """One line of the pipeline list."""

    name: str
    dag_id: str
    config_path: str
    error: str | None
    files: int
    unread_bytes: int
    unmeasured_files: int
    latest_checkpoint_id: int | None
    latest_checkpoint_state: str | None
    live_leases: int

    @classmethod
    def of(cls, snapshot: PipelineSnapshot) -> PipelineSummary:
        latest = snapshot.checkpoints[0] if snapshot.checkpoints else None
        return cls(
            name=snapshot.name,
            dag_id=snapshot.dag_id,
            config_path=snapshot.config_path,
            error=snapshot.error,
            files=len(snapshot.files),
            unread_bytes=snapshot.unread_bytes,
            unmeasured_files=snapshot.unmeasured_files,
            latest_checkpoint_id=latest.checkpoint_id if latest else None,
            latest_checkpoint_state=latest.state if latest else None,
            live_leases=sum(1 for lease in snapshot.leases if lease.live),
        )
