"""Building a :class:`PipelineSnapshot` from a pipeline config and its metastore's rows."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipeline_core.config import PipelineConfig, load_pipeline_config, mask_url_passwords
from pipeline_core.errors import MetastoreError, SluiceError
from pipeline_core.metastore import (
    AckerTreeTotals,
    BatchRecord,
    CheckpointRecord,
    LandingCounts,
    LeaseRecord,
    ReadProgressRecord,
    SinkStateRecord,
    open_view,
    redacted_url,
)
from pipeline_core.queues import QueueStats
from pipeline_core.source import FileRecord
from pipeline_core.state._files import file_snapshots
from pipeline_core.state._live import (
    live_collector,
    reported_queues,
    stage_queues,
    with_read_offsets,
)
from pipeline_core.state._models import (
    AckerTreesSnapshot,
    BatchSnapshot,
    CheckpointSnapshot,
    DagRunLookup,
    DagRunSnapshot,
    LeaseSnapshot,
    PipelineSnapshot,
    SinkGroupSnapshot,
    SinkSnapshot,
)
from pipeline_core.state._pipelines import DAG_ID_PREFIX, pipeline_configs, pipeline_name
from pipeline_core.state._progress import read_progress

log = logging.getLogger(__name__)

QUEUE_DEPTHS_NOT_REPORTED = (
    "stage queue depths and read offsets: not reported (only a running collector knows them, "
    "and none has reported on this host in the last minute)"
)
ACKER_TREES_NOT_STORED = (
    "acker trees in flight: not stored in this metastore yet (its schema is migrated when a "
    "collector opens it)"
)
READ_PROGRESS_NOT_STORED = (
    "read progress over time: not stored in this metastore yet (its schema is migrated when a "
    "collector opens it)"
)
DEFAULT_PROGRESS_WINDOW = timedelta(hours=24)


def take_snapshots(
    folder: Path | None = None,
    *,
    limit: int = 20,
    dag_runs: DagRunLookup | None = None,
    names: Iterable[str] | None = None,
    progress_window: timedelta = DEFAULT_PROGRESS_WINDOW,
) -> list[PipelineSnapshot]:
    """Snapshots of the pipelines of ``folder`` (default :func:`pipelines_dir`), by name;
    only those in ``names`` when it is given."""
    wanted = set(names) if names is not None else None
    return [
        take_snapshot(path, limit=limit, dag_runs=dag_runs, progress_window=progress_window)
        for path in pipeline_configs(folder)
        if wanted is None or pipeline_name(path) in wanted
    ]


def take_snapshot(
    config_path: Path,
    *,
    limit: int = 20,
    dag_runs: DagRunLookup | None = None,
    stage_stats: Mapping[str, QueueStats] | None = None,
    now: datetime | None = None,
    progress_window: timedelta = DEFAULT_PROGRESS_WINDOW,
) -> PipelineSnapshot:
    """The state of the pipeline configured by ``config_path``. Never raises for a bad config
    or an unreachable metastore: the snapshot's ``error`` says what went wrong.

    :param limit: how many of the newest checkpoints to show.
    :param dag_runs: looks up the Airflow DAG runs that requested the checkpoints.
    :param stage_stats: an in-process collector's ``stage_stats()``, to report queue depths
        (otherwise they come from a running collector's metrics file, when fresh).
    :param progress_window: how far back the read progress samples go.
    """
    now = now or datetime.now(timezone.utc)
    name = pipeline_name(config_path)
    try:
        config = load_pipeline_config(config_path)
    except SluiceError as exc:
        return PipelineSnapshot(
            name=name,
            dag_id=DAG_ID_PREFIX + name,
            config_path=str(config_path),
            taken_at=now,
            error=mask_url_passwords(str(exc)),
        )
    live, live_document = live_collector(config)
    if stage_stats is None and live_document is not None:
        stage_stats = reported_queues(live_document)
    notes = [] if stage_stats is not None else [QUEUE_DEPTHS_NOT_REPORTED]
    snapshot = PipelineSnapshot(
        name=config.name,
        dag_id=DAG_ID_PREFIX + config.name,
        config_path=str(config_path),
        taken_at=now,
        host=config.collector.host,
        metastore=config.masked(redacted_url(config.metastore_url)),
        stage_queues=stage_queues(config, stage_stats),
        notes=notes,
    )
    try:
        rows = _read_metastore(config, limit, now - progress_window)
    except MetastoreError as exc:
        return snapshot.model_copy(update={"error": config.masked(str(exc))})
    if rows is None:
        notes.insert(0, "metastore: not created yet (the pipeline has not run)")
        rows = _Rows()
    files = with_read_offsets(file_snapshots(config, rows.files), live_document)
    if rows.acker is None:
        notes.append(ACKER_TREES_NOT_STORED)
    if rows.progress is None:
        notes.append(READ_PROGRESS_NOT_STORED)
    acker = [
        AckerTreesSnapshot(
            host=r.host, trees=r.trees, lines=r.lines, bytes=r.bytes, saved_at=r.saved_at
        )
        for r in rows.acker or []
    ]
    leases = [
        LeaseSnapshot(
            host=r.host,
            holder=r.holder,
            acquired_at=r.acquired_at,
            expires_at=r.expires_at,
            live=r.live,
        )
        for r in rows.leases
    ]
    return snapshot.model_copy(
        update={
            "files": files,
            "unread_bytes": sum(f.unread_bytes or 0 for f in files),
            "unmeasured_files": sum(1 for f in files if f.unread_bytes is None),
            "checkpoints": _checkpoints(rows, config.name, dag_runs, notes),
            "sink_groups": _masked_errors(_sink_groups(config, rows.sink_states, now), config),
            "leases": leases,
            "acker_trees": acker,
            "collector": live,
            "read_progress": read_progress(rows.progress or []),
            "read_progress_since": now - progress_window,
            "notes": notes,
        }
    )


@dataclass
class _Rows:
    """What the metastore holds for one pipeline."""

    files: dict[str, list[FileRecord]] = field(default_factory=dict)
    """Per host."""
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    """The newest first."""
    batches: list[BatchRecord] = field(default_factory=list)
    sink_states: dict[str, list[SinkStateRecord]] = field(default_factory=dict)
    """Per host."""
    leases: list[LeaseRecord] = field(default_factory=list)
    acker: list[AckerTreeTotals] | None = field(default_factory=list)
    """Per host; None when the metastore's schema has no acker trees yet."""
    progress: list[ReadProgressRecord] | None = field(default_factory=list)
    """Oldest first; None when the metastore's schema has no read progress yet."""


def _read_metastore(config: PipelineConfig, limit: int, since: datetime) -> _Rows | None:
    """The pipeline's rows; None when there is no metastore yet. Raises MetastoreError."""
    pipeline = config.name
    with open_view(config.metastore_url, config.metastore.pooling) as view:
        if view is None:
            return None
        checkpoints = view.newest_checkpoints(pipeline, limit)
        return _Rows(
            files=view.files(pipeline),
            checkpoints=checkpoints,
            batches=view.batches([c.checkpoint_id for c in checkpoints]),
            sink_states=view.sink_states(pipeline),
            leases=view.leases(pipeline),
            acker=view.acker_tree_totals(pipeline),
            progress=view.read_progress(pipeline, since),
        )


def checkpoint_of_run(config: PipelineConfig, run_id: str) -> CheckpointSnapshot | None:
    """The checkpoint that DAG run ``run_id`` requested, with its batches; None when it
    requested none (or there is no metastore yet). Read-only.

    Raises:
        MetastoreError: the metastore cannot be read.
    """
    with open_view(config.metastore_url, config.metastore.pooling) as view:
        record = view.checkpoint_of_run(config.name, run_id) if view is not None else None
        if view is None or record is None:
            return None
        rows = _Rows(checkpoints=[record], batches=view.batches([record.checkpoint_id]))
    return _checkpoints(rows, config.name, None, [])[0]


_AS_RECORDED = ("checkpoint_id", "run_id", "requested_at", "sealed_at", "committed_at", "error")
"""The fields a checkpoint's snapshot shows as its record holds them."""


def _checkpoints(
    rows: _Rows, pipeline: str, dag_runs: DagRunLookup | None, notes: list[str]
) -> list[CheckpointSnapshot]:
    batches: dict[int, list[BatchSnapshot]] = {}
    for batch in rows.batches:
        batches.setdefault(batch.checkpoint_id, []).append(
            BatchSnapshot(
                host=batch.host,
                lines=batch.line_count,
                bytes=batch.byte_count,
                parts=batch.part_count,
                staging_path=batch.staging_path,
            )
        )
    runs: Mapping[str, DagRunSnapshot] = {}
    run_ids = [c.run_id for c in rows.checkpoints if c.run_id]
    if dag_runs is not None and run_ids:
        try:
            runs = dag_runs(DAG_ID_PREFIX + pipeline, run_ids)
        except Exception as exc:
            log.warning("Reading the DAG runs of %s failed", pipeline, exc_info=True)
            notes.append(f"DAG runs: could not be read from Airflow ({exc})")
    snapshots = []
    for record in rows.checkpoints:
        own = batches.get(record.checkpoint_id, [])
        counts = LandingCounts.of(record.landing)
        interval_start, interval_end = record.data_interval or (None, None)
        snapshots.append(
            CheckpointSnapshot(
                **{name: getattr(record, name) for name in _AS_RECORDED},
                state=record.state.value,
                data_interval_start=interval_start,
                data_interval_end=interval_end,
                lines=sum(b.lines for b in own),
                bytes=sum(b.bytes for b in own),
                landing_rows=counts.rows,
                landing_rejects=counts.rejects,
                landing_snapshots=_snapshots(record.landing),
                batches=own,
                dag_run=runs.get(record.run_id) if record.run_id else None,
            )
        )
    return snapshots


_StoredSink = tuple[str, SinkStateRecord]
"""A sink's stored state and the host it is from."""


def _sink_groups(
    config: PipelineConfig, by_host: Mapping[str, Sequence[SinkStateRecord]], now: datetime
) -> list[SinkGroupSnapshot]:
    stored: dict[tuple[str, str], list[_StoredSink]] = {}
    for host, states in by_host.items():
        for state in states:
            stored.setdefault((state.sink_group, state.sink), []).append((host, state))
    groups = []
    for group in config.sink_groups_in_force:
        sinks = []
        for sink in group.sinks:
            kind = config.sinks[sink].type
            priority = group.priorities.get(sink)
            kept = stored.pop((group.name, sink), [])
            sinks += [_sink(sink, kind, priority, row, now) for row in kept] or [
                _sink(sink, kind, priority, None, now)
            ]
        groups.append(
            SinkGroupSnapshot(name=group.name, processor=group.processor.value, sinks=sinks)
        )
    leftovers: dict[str, list[SinkSnapshot]] = {}
    for (group_name, sink), kept in stored.items():
        leftovers.setdefault(group_name, []).extend(
            _sink(sink, None, None, row, now) for row in kept
        )
    groups += [SinkGroupSnapshot(name=n, processor=None, sinks=s) for n, s in leftovers.items()]
    return groups


def _sink(
    name: str, kind: str | None, priority: int | None, row: _StoredSink | None, now: datetime
) -> SinkSnapshot:
    if row is None:
        return SinkSnapshot(
            name=name,
            type=kind,
            priority=priority,
            host=None,
            consecutive_failures=0,
            excluded_until=None,
            penalty_remaining_s=0.0,
            last_failure_at=None,
            last_error=None,
        )
    host, state = row
    return SinkSnapshot(
        name=name,
        type=kind,
        priority=priority,
        host=host,
        consecutive_failures=state.consecutive_failures,
        excluded_until=_epoch(state.excluded_until),
        penalty_remaining_s=max(state.excluded_until - now.timestamp(), 0.0),
        last_failure_at=_epoch(state.last_failure_at),
        last_error=state.last_error,
    )


def _masked_errors(
    groups: list[SinkGroupSnapshot], config: PipelineConfig
) -> list[SinkGroupSnapshot]:
    """``groups`` with each sink's ``last_error`` masked (``config.masked``: URL secrets, the
    values of secret variables): a row may have been stored by a collector that did not mask."""
    return [
        group.model_copy(
            update={
                "sinks": [
                    sink.model_copy(update={"last_error": config.masked(sink.last_error)})
                    if sink.last_error
                    else sink
                    for sink in group.sinks
                ]
            }
        )
        for group in groups
    ]


def _epoch(seconds: float) -> datetime | None:
    return datetime.fromtimestamp(seconds, timezone.utc) if seconds > 0 else None


def _snapshots(landing: dict[str, Any]) -> dict[str, int | None]:
    """The lake tables' snapshots a commit read (none for a checkpoint not committed)."""
    found = landing.get("snapshots")
    if not isinstance(found, dict):
        return {}
    return {str(table): s if isinstance(s, int) else None for table, s in found.items()}
