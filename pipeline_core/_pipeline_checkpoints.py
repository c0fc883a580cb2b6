"""PipelineCheckpoints: one pipeline's checkpoints as views (``CheckpointInfo``), the commands
that request and excuse them, and collecting once.

Each method uses the context's metastore: the one held for a ``with open_pipeline(...)`` block
(a poller keeps one open that way), else one opened and closed for the call. A list of views
reads the checkpoints' batches in one query, whatever their number.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from pipeline_core._pipeline_context import PipelineContext
from pipeline_core._pipeline_views import CheckpointInfo, CollectReport, checkpoint_views
from pipeline_core._stop_request import StopRequest
from pipeline_core.collector import CollectorSession
from pipeline_core.errors import CheckpointError
from pipeline_core.metastore import (
    CheckpointRecord,
    CheckpointState,
    LeaseHolder,
    as_utc,
    view_of,
)

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
            return self.views([record])[0]

    def get(self, checkpoint_id: int) -> CheckpointInfo:
        """Raises CheckpointError for an unknown id or one of another pipeline."""
        with self._context.metastore():
            return self.views([self.record(checkpoint_id)])[0]

    def record(self, checkpoint_id: int) -> CheckpointRecord:
        """The checkpoint's row. Raises CheckpointError: unknown, or of another pipeline."""
        with self._context.metastore() as metastore:
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
            if self.record(checkpoint_id).state is not CheckpointState.REQUESTED:
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
        """The data interval of the DAG run that requested the checkpoint, if one was recorded.
        Raises CheckpointError: unknown, or of another pipeline."""
        return self.record(checkpoint_id).data_interval

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
            return self.views(records)

    def in_states(self, *states: CheckpointState) -> list[CheckpointInfo]:
        """The checkpoints in one of ``states``, oldest first."""
        with self._context.metastore() as metastore:
            return self.views(metastore.checkpoints(self._context.config.name, list(states)))

    def newest(self, limit: int = 20) -> list[CheckpointInfo]:
        """The newest ``limit`` checkpoints, oldest first."""
        with self._context.metastore() as metastore:
            return self.views(metastore.checkpoints(self._context.config.name, limit=limit))

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
            records = [metastore.checkpoint(s.checkpoint_id) for s in result.sealed]
            sealed = tuple(self.views(records))
        return CollectReport(sealed, result.files, result.lines, result.bytes, result.seconds)

    def views(self, records: Sequence[CheckpointRecord]) -> list[CheckpointInfo]:
        """The views of ``records``, in their order, with their batches' hosts and counts
        (the batches of them all read in one query)."""
        if not records:
            return []
        with self._context.metastore() as metastore, view_of(metastore) as view:
            batches = view.batches([record.checkpoint_id for record in records])
        return checkpoint_views(records, batches, self._context.config.staging_area)
