"""Building a :class:`PipelineSnapshot` from a pipeline config and its metastore's rows."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from pipeline_core.collector import metrics_file, read_metrics
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.errors import SluiceError
from pipeline_core.metastore import _schema as t
from pipeline_core.queues import QueueStats
from pipeline_core.state._files import file_snapshots
from pipeline_core.state._models import (
    AckerTreesSnapshot,
    BatchSnapshot,
    CheckpointSnapshot,
    DagRunLookup,
    DagRunSnapshot,
    FileSnapshot,
    LeaseSnapshot,
    LiveCollectorSnapshot,
    PipelineSnapshot,
    SinkGroupSnapshot,
    SinkSnapshot,
    StageQueueSnapshot,
)
from pipeline_core.state._pipelines import DAG_ID_PREFIX, pipeline_configs, pipeline_name

log = logging.getLogger(__name__)

QUEUE_DEPTHS_NOT_REPORTED = (
    "stage queue depths and read offsets: not reported (only a running collector knows them, "
    "and none has reported on this host in the last minute)"
)
ACKER_TREES_NOT_STORED = (
    "acker trees in flight: not stored in this metastore yet (its schema is migrated when a "
    "collector opens it)"
)


def take_snapshots(
    folder: Path | None = None,
    *,
    limit: int = 20,
    dag_runs: DagRunLookup | None = None,
    names: Iterable[str] | None = None,
) -> list[PipelineSnapshot]:
    """Snapshots of the pipelines of ``folder`` (default :func:`pipelines_dir`), by name;
    only those in ``names`` when it is given."""
    wanted = set(names) if names is not None else None
    return [
        take_snapshot(path, limit=limit, dag_runs=dag_runs)
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
) -> PipelineSnapshot:
    """The state of the pipeline configured by ``config_path``. Never raises for a bad config
    or an unreachable metastore: the snapshot's ``error`` says what went wrong.

    :param limit: how many of the newest checkpoints to show.
    :param dag_runs: looks up the Airflow DAG runs that requested the checkpoints.
    :param stage_stats: an in-process collector's ``stage_stats()``, to report queue depths
        (otherwise they come from a running collector's metrics file, when fresh).
    """
    now = now or datetime.now(UTC)
    name = pipeline_name(config_path)
    try:
        config = load_pipeline_config(config_path)
    except SluiceError as exc:
        return PipelineSnapshot(
            name=name,
            dag_id=DAG_ID_PREFIX + name,
            config_path=str(config_path),
            taken_at=now,
            error=str(exc),
        )
    live, live_document = _live_collector(config)
    if stage_stats is None and live_document is not None:
        stage_stats = _reported_queues(live_document)
    notes = [] if stage_stats is not None else [QUEUE_DEPTHS_NOT_REPORTED]
    snapshot = PipelineSnapshot(
        name=config.name,
        dag_id=DAG_ID_PREFIX + config.name,
        config_path=str(config_path),
        taken_at=now,
        host=config.collector.host,
        metastore=_safe_url(config.metastore_url),
        stage_queues=_stage_queues(config, stage_stats),
        notes=notes,
    )
    try:
        rows = _read_metastore(config.metastore_url, config.name, limit)
    except SQLAlchemyError as exc:
        error = f"cannot read the metastore {snapshot.metastore}: {exc}"
        return snapshot.model_copy(update={"error": error})
    if rows is None:
        notes.insert(0, "metastore: not created yet (the pipeline has not run)")
        rows = _Rows()
    files = _with_read_offsets(file_snapshots(config, rows.files), live_document)
    if rows.acker is None:
        notes.append(ACKER_TREES_NOT_STORED)
    acker = [
        AckerTreesSnapshot(
            host=r.host,
            trees=int(r.trees),
            lines=int(r.lines or 0),
            bytes=int(r.bytes or 0),
            saved_at=_aware(r.saved_at),
        )
        for r in rows.acker or []
    ]
    leases = [
        LeaseSnapshot(
            host=r.host,
            holder=r.holder,
            acquired_at=_aware(r.acquired_at),
            expires_at=_aware(r.expires_at),
            live=_aware(r.expires_at) > now,
        )
        for r in rows.leases
    ]
    return snapshot.model_copy(
        update={
            "files": files,
            "unread_bytes": sum(f.unread_bytes or 0 for f in files),
            "unmeasured_files": sum(1 for f in files if f.unread_bytes is None),
            "checkpoints": _checkpoints(rows, config.name, dag_runs, notes),
            "sink_groups": _sink_groups(config, rows.sink_states, now),
            "leases": leases,
            "acker_trees": acker,
            "collector": live,
            "notes": notes,
        }
    )


def _live_collector(
    config: PipelineConfig,
) -> tuple[LiveCollectorSnapshot | None, Mapping[str, Any] | None]:
    """The running collector's fresh report for the pipeline (its metrics file), if any."""
    document = read_metrics(config.data_dir, config.name)
    if document is None:
        return None, None
    try:
        reported_at = metrics_file(config.data_dir, config.name).stat().st_mtime
        live = LiveCollectorSnapshot(
            host=document["host"],
            state=document["state"],
            reported_at=datetime.fromtimestamp(reported_at, UTC),
            lines_read=document["lines_read"],
            bytes_read=document["bytes_read"],
            bytes_sent=document["bytes_sent"],
            trees_in_flight=document["trees_in_flight"],
            trees_replayed=document["trees_replayed"],
            blocked_seconds=document["blocked_seconds"],
        )
    except (OSError, KeyError, TypeError, ValueError) as exc:
        log.warning("Ignoring the metrics file of pipeline %s: %s", config.name, exc)
        return None, None
    return live, document


def _reported_queues(document: Mapping[str, Any]) -> dict[str, QueueStats] | None:
    """The stage queues of a collector's report, as the ``QueueStats`` fields they carry."""
    try:
        return {
            name: QueueStats(
                size=int(q["size"]),
                high=int(q["high"]),
                low=int(q["low"]),
                writable=bool(q["writable"]),
                pushes=0,
                urgent_pushes=0,
                refusals=int(q["refusals"]),
                pops=0,
                feedbacks=0,
            )
            for name, q in dict(document["queues"]).items()
        }
    except (KeyError, TypeError, ValueError):
        return None


def _with_read_offsets(
    files: list[FileSnapshot], document: Mapping[str, Any] | None
) -> list[FileSnapshot]:
    """``files`` with the read offsets a running collector reported, matched by fingerprint."""
    if document is None:
        return files
    reported: dict[str, int] = {}
    for item in document.get("files", []):
        if isinstance(item, dict) and isinstance(item.get("read_offset"), int):
            reported[str(item.get("fingerprint"))] = item["read_offset"]
    return [
        f.model_copy(update={"read_offset": reported[f.fingerprint]})
        if f.fingerprint in reported
        else f
        for f in files
    ]


class _Rows:
    """The metastore rows of one pipeline."""

    def __init__(self) -> None:
        self.files: list[Any] = []
        self.checkpoints: list[Any] = []
        self.batches: list[Any] = []
        self.sink_states: list[Any] = []
        self.leases: list[Any] = []
        self.acker: list[Any] | None = []
        """Per host: trees, lines, bytes, saved_at; None when the table does not exist."""


@contextmanager
def _connect(url: str) -> Iterator[sa.Connection | None]:
    """A connection to the metastore at ``url``, or None when it does not exist yet.

    Nothing is ever created: a missing SQLite file or a database without Sluice's tables is
    "no metastore yet". On PostgreSQL the connection reads one consistent snapshot.
    """
    engine_url = sa.make_url(url)
    sqlite = engine_url.get_backend_name() == "sqlite"
    database = engine_url.database
    if sqlite and database and database != ":memory:" and not Path(database).exists():
        yield None
        return
    connect_args = {"timeout": 5} if sqlite else {"connect_timeout": 5}
    engine = sa.create_engine(engine_url, poolclass=NullPool, connect_args=connect_args)
    try:
        with engine.connect() as connection:
            if not sqlite:
                connection.execution_options(isolation_level="REPEATABLE READ")
            if not sa.inspect(connection).has_table(t.checkpoints.name):
                yield None
            else:
                yield connection
    finally:
        engine.dispose()


def _read_metastore(url: str, pipeline: str, limit: int) -> _Rows | None:
    """The pipeline's rows; None when there is no metastore yet."""
    with _connect(url) as connection:
        if connection is None:
            return None
        rows = _Rows()
        rows.files = _all(connection, t.files, t.files.c.host, t.files.c.id, pipeline=pipeline)
        newest = (
            sa.select(t.checkpoints)
            .where(t.checkpoints.c.pipeline == pipeline)
            .order_by(t.checkpoints.c.id.desc())
            .limit(limit)
        )
        rows.checkpoints = list(connection.execute(newest))
        rows.batches = _batches(connection, [row.id for row in rows.checkpoints])
        c = t.sink_states.c
        rows.sink_states = _all(
            connection, t.sink_states, c.host, c.sink_group, c.sink, pipeline=pipeline
        )
        rows.leases = _all(connection, t.leases, t.leases.c.host, pipeline=pipeline)
        rows.acker = _acker_trees(connection, pipeline)
        return rows


def _acker_trees(connection: sa.Connection, pipeline: str) -> list[Any] | None:
    """The saved in-flight trees, summed per host; None on a schema without the table."""
    if not sa.inspect(connection).has_table(t.acker_trees.name):
        return None
    c = t.acker_trees.c
    query = (
        sa.select(
            c.host,
            sa.func.count().label("trees"),
            sa.func.sum(c.line_count).label("lines"),
            sa.func.sum(c.end_offset - c.start_offset).label("bytes"),
            sa.func.max(c.saved_at).label("saved_at"),
        )
        .where(c.pipeline == pipeline)
        .group_by(c.host)
        .order_by(c.host)
    )
    return list(connection.execute(query))


def checkpoint_of_run(config: PipelineConfig, run_id: str) -> CheckpointSnapshot | None:
    """The checkpoint that DAG run ``run_id`` requested, with its batches; None when it
    requested none (or there is no metastore yet). Read-only.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the metastore cannot be read.
    """
    with _connect(config.metastore_url) as connection:
        if connection is None:
            return None
        rows = _Rows()
        rows.checkpoints = list(
            connection.execute(
                sa.select(t.checkpoints).where(
                    t.checkpoints.c.pipeline == config.name, t.checkpoints.c.run_id == run_id
                )
            )
        )
        rows.batches = _batches(connection, [row.id for row in rows.checkpoints])
    found = _checkpoints(rows, config.name, None, [])
    return found[0] if found else None


def _batches(connection: sa.Connection, checkpoint_ids: list[int]) -> list[Any]:
    query = (
        sa.select(t.batches)
        .where(t.batches.c.checkpoint_id.in_(checkpoint_ids))
        .order_by(t.batches.c.checkpoint_id, t.batches.c.host)
    )
    return list(connection.execute(query))


def _all(connection: sa.Connection, table: sa.Table, *order: Any, pipeline: str) -> list[Any]:
    query = sa.select(table).where(table.c.pipeline == pipeline).order_by(*order)
    return list(connection.execute(query))


def _checkpoints(
    rows: _Rows, pipeline: str, dag_runs: DagRunLookup | None, notes: list[str]
) -> list[CheckpointSnapshot]:
    batches: dict[int, list[BatchSnapshot]] = {}
    for row in rows.batches:
        batches.setdefault(row.checkpoint_id, []).append(
            BatchSnapshot(
                host=row.host,
                lines=row.line_count,
                bytes=row.byte_count,
                parts=row.part_count,
                staging_path=row.staging_path,
            )
        )
    runs: Mapping[str, DagRunSnapshot] = {}
    run_ids = [row.run_id for row in rows.checkpoints if row.run_id]
    if dag_runs is not None and run_ids:
        try:
            runs = dag_runs(DAG_ID_PREFIX + pipeline, run_ids)
        except Exception as exc:
            log.warning("Reading the DAG runs of %s failed", pipeline, exc_info=True)
            notes.append(f"DAG runs: could not be read from Airflow ({exc})")
    snapshots = []
    for row in rows.checkpoints:
        landing = json.loads(row.landing) if row.landing else {}
        own = batches.get(row.id, [])
        snapshots.append(
            CheckpointSnapshot(
                checkpoint_id=row.id,
                state=row.state,
                run_id=row.run_id,
                requested_at=_aware(row.requested_at),
                sealed_at=_maybe_aware(row.sealed_at),
                committed_at=_maybe_aware(row.committed_at),
                data_interval_start=_maybe_aware(row.data_interval_start),
                data_interval_end=_maybe_aware(row.data_interval_end),
                lines=sum(b.lines for b in own),
                bytes=sum(b.bytes for b in own),
                landing_rows=_total(landing.get("rows")),
                landing_rejects=_total(landing.get("rejects")),
                error=row.error,
                batches=own,
                dag_run=runs.get(row.run_id) if row.run_id else None,
            )
        )
    return snapshots


def _total(counts: object) -> int | None:
    return sum(int(n) for n in counts.values()) if isinstance(counts, dict) else None


def _sink_groups(
    config: PipelineConfig, rows: Sequence[Any], now: datetime
) -> list[SinkGroupSnapshot]:
    stored: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        stored.setdefault((row.sink_group, row.sink), []).append(row)
    groups = []
    for group in config.sink_groups_in_force:
        sinks = []
        for sink in group.sinks:
            kind = config.sinks[sink].type
            priority = group.priorities.get(sink)
            states = stored.pop((group.name, sink), [])
            sinks += [_sink(sink, kind, priority, row, now) for row in states] or [
                _sink(sink, kind, priority, None, now)
            ]
        groups.append(
            SinkGroupSnapshot(name=group.name, processor=group.processor.value, sinks=sinks)
        )
    leftovers: dict[str, list[SinkSnapshot]] = {}
    for (group_name, sink), states in stored.items():
        leftovers.setdefault(group_name, []).extend(
            _sink(sink, None, None, row, now) for row in states
        )
    groups += [SinkGroupSnapshot(name=n, processor=None, sinks=s) for n, s in leftovers.items()]
    return groups


def _sink(
    name: str, kind: str | None, priority: int | None, row: Any, now: datetime
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
    return SinkSnapshot(
        name=name,
        type=kind,
        priority=priority,
        host=row.host,
        consecutive_failures=row.consecutive_failures,
        excluded_until=_epoch(row.excluded_until),
        penalty_remaining_s=max(row.excluded_until - now.timestamp(), 0.0),
        last_failure_at=_epoch(row.last_failure_at),
        last_error=row.last_error,
    )


def _stage_queues(
    config: PipelineConfig, stats: Mapping[str, QueueStats] | None
) -> list[StageQueueSnapshot]:
    configured = {
        "process": config.collector.process_queue_size,
        "send": config.collector.send_queue_size,
    }
    queues = []
    for name, high in configured.items():
        reported = stats.get(name) if stats is not None else None
        queues.append(
            StageQueueSnapshot(
                name=name,
                high_watermark=reported.high if reported else high,
                low_watermark=reported.low if reported else high * 2 // 3,
                depth=reported.size if reported else None,
            )
        )
    return queues


# -- values ------------------------------------------------------------------------------------


def _aware(value: datetime) -> datetime:
    """SQLite returns naive datetimes; the metastore writes UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _maybe_aware(value: datetime | None) -> datetime | None:
    return None if value is None else _aware(value)


def _epoch(seconds: float) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


def _safe_url(url: str) -> str:
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"
