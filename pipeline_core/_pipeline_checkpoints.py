"""PipelineCheckpoints: one pipeline's checkpoints as views (``CheckpointInfo``), the commands
that request and excuse them, collecting, and the pipeline's status.

Each method uses the context's metastore: the one held for a ``with open_pipeline(...)`` block
(a poller keeps one open that way), else one opened and closed for the call.
"""

from __future__ import annotations

import logging
from datetime import datetime

from pipeline_core._pipeline_context import PipelineContext
from pipeline_core._pipeline_views import CheckpointInfo, CollectReport, PipelineStatus
from pipeline_core._stop_request import StopRequest
from pipeline_core.collector import CollectorSession
from pipeline_core.errors import CheckpointError
from pipeline_core.metastore import (
    CheckpointRecord,
    CheckpointState,
    LeaseHolder,
    Metastore,
    as_utc,
)
from pipeline_core.staging_contract import checkpoint_dir

log = logging.getLogger(__name__)


class PipelineCheckpoints:
    """The checkpoints of the pipeline of ``context``."""

    def __init__(self, context: PipelineContext) -> None:
        self._context = context

    def request(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        """Ask for a checkpoint; idempotent per ``run_id`` (a retried task gets the same one)."""
        with self._context.metastore() as metastore:
            record = metastore.request_checkpoint(self._context.config.name, run_id, data_interval)
            return self.info(metastore, record)

    def get(self, checkpoint_id: int) -> CheckpointInfo:
        """Raises CheckpointError for an unknown id or one of another pipeline."""
        with self._context.metastore() as metastore:
            return self.info(metastore, self.record(metastore, checkpoint_id))

    def record(self, metastore: Metastore, checkpoint_id: int) -> CheckpointRecord:
        """The checkpoint's row. Raises CheckpointError: unknown, or of another pipeline."""
        record = metastore.checkpoint(checkpoint_id)
        name = self._context.config.name
        if record.pipeline != name:
            raise CheckpointError(
                f"checkpoint {checkpoint_id} belongs to pipeline {record.pipeline!r}, not {name!r}"
            )
        return record

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> tuple[str, ...]:
        """Stop waiting, for a REQUESTED checkpoint, for the hosts whose collector lease has
        lapsed (dead or cut off: what they read but did not seal goes into a later checkpoint
        when they are back), and seal it if every remaining host has sealed its batch.
        Returns the hosts excused; none for a checkpoint no longer REQUESTED.

        Raises:
            CheckpointError: an unknown id or one of another pipeline.
        """
        with self._context.metastore() as metastore:
            if self.record(metastore, checkpoint_id).state is not CheckpointState.REQUESTED:
                return ()
            excused = tuple(metastore.transitions.excuse_lapsed_hosts(checkpoint_id))
        if excused:
            log.warning(
                "checkpoint %d no longer waits for %s: their collectors' leases lapsed",
                checkpoint_id,
                ", ".join(excused),
            )
        return excused

    def landable(self, checkpoint_id: int) -> CheckpointInfo:
        """A checkpoint the Spark job can land (again): SEALED, or COMMITTED already.

        Raises:
            CheckpointFailedError: it is FAILED (the message holds its error).
            CheckpointError: unknown, of another pipeline, or not sealed yet.
        """
        info = self.get(checkpoint_id)
        info.state.check_landable(checkpoint_id, info.error)
        return info

    def data_interval(self, checkpoint_id: int) -> tuple[datetime, datetime] | None:
        """The data interval of the DAG run that requested the checkpoint, if one was recorded."""
        name = self._context.config.name
        with self._context.metastore() as metastore:
            try:
                record = metastore.checkpoint(checkpoint_id)
            except CheckpointError:
                record = None
        if record is None or record.pipeline != name:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id} of pipeline {name!r}")
        return record.data_interval

    def in_interval(self, start: datetime, end: datetime) -> list[CheckpointInfo]:
        """The sealed or committed checkpoints that belong to ``[start, end)``, oldest first.

        A checkpoint belongs to the interval holding the start of the data interval recorded
        when it was requested (the DAG run's); one requested without an interval (``sluice
        collect``, a worker sealing on stop) belongs to the interval holding its ``sealed_at``.
        Adjacent intervals therefore share no checkpoint. A zero-width interval
        (``start == end``, a trigger timetable's run) holds the checkpoints recorded for
        exactly that instant. Read-only.
        """
        if as_utc(end) < as_utc(start):
            raise ValueError(f"the interval ends ({end}) before it starts ({start})")
        with self._context.metastore() as metastore:
            records = metastore.checkpoints_in_interval(self._context.config.name, start, end)
            return [self.info(metastore, record) for record in records]

    def in_states(self, *states: CheckpointState) -> list[CheckpointInfo]:
        """The checkpoints in one of ``states``, oldest first."""
        with self._context.metastore() as metastore:
            records = metastore.checkpoints(self._context.config.name, list(states))
            return [self.info(metastore, record) for record in records]

    def worker_is_live(self) -> bool:
        """True while a collector holds this pipeline's lease on this host, unless this
        machine can prove it dead (killed: the next collector takes its lease over at once)."""
        config = self._context.config
        with self._context.metastore() as metastore:
            holder = metastore.lease_holder(config.name, config.collector.host)
        if holder is None:
            return False
        parsed = LeaseHolder.parse(holder)
        return parsed is None or not parsed.is_dead_on_this_host()

    def collect_once(self, stop: StopRequest | None = None) -> CollectReport:
        """Read every file to its current end, seal every requested checkpoint (requesting one
        when none is pending), and return. Raises CollectorBusyError when a live collector
        holds the lease.

        ``stop``: once it is requested, reading stops and what was read is sealed at once (the
        rest waits for the next run)."""
        session = CollectorSession([self._context.config])
        if stop is not None:
            stop.when_requested(session.stop)
        result = session.run(once=True)
        with self._context.metastore() as metastore:
            sealed = tuple(
                self.info(metastore, metastore.checkpoint(s.checkpoint_id)) for s in result.sealed
            )
        return CollectReport(sealed, result.files, result.lines, result.bytes, result.seconds)

    def status(self, limit: int = 20) -> PipelineStatus:
        """The pipeline on this host: its files, its last ``limit`` checkpoints, its lease."""
        config = self._context.config
        host = config.collector.host
        with self._context.metastore() as metastore:
            records = metastore.checkpoints(config.name, limit=limit)
            return PipelineStatus(
                pipeline=config.name,
                host=host,
                files=tuple(metastore.files(config.name, host)),
                checkpoints=tuple(self.info(metastore, r) for r in records),
                lease_holder=metastore.lease_holder(config.name, host),
            )

    def info(self, metastore: Metastore, record: CheckpointRecord) -> CheckpointInfo:
        """The view of ``record``, with its batches' hosts and counts."""
        config = self._context.config
        batches = metastore.batches(record.checkpoint_id)
        return CheckpointInfo(
            checkpoint_id=record.checkpoint_id,
            pipeline=record.pipeline,
            state=record.state,
            run_id=record.run_id,
            staging_dir=checkpoint_dir(config.seal_dir, config.name, record.checkpoint_id),
            staging_url=config.staging_area.checkpoint_url(record.checkpoint_id),
            line_count=sum(b.line_count for b in batches),
            byte_count=sum(b.byte_count for b in batches),
            batch_ids=tuple(b.batch_id for b in batches if b.batch_id is not None),
            hosts=tuple(sorted(b.host for b in batches)),
            requested_at=record.requested_at,
            sealed_at=record.sealed_at,
            committed_at=record.committed_at,
            landing=record.landing,
            error=record.error,
            data_interval=record.data_interval,
        )
