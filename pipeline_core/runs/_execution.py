"""Carrying out a :class:`RunPlan` against a pipeline: :func:`execute_plan`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from pipeline_core._compat import StrEnum
from pipeline_core.errors import CheckpointError, CollectorBusyError
from pipeline_core.metastore import CheckpointState
from pipeline_core.runs._plan import CollectPolicy, RunMode, RunPlan, RunPlanError, Selection

if TYPE_CHECKING:
    from pipeline_core.operations import CheckpointInfo, CollectReport

log = logging.getLogger(__name__)


class RunOperations(Protocol):
    """What carrying out a plan asks of a pipeline; ``PipelineOperations`` is the real one."""

    def request_checkpoint(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        """Request a checkpoint: idempotent per ``run_id`` (the same run gets the same one),
        recording ``data_interval`` with a new one. Returns it as it is now (it may be sealed
        already)."""
        ...

    def landable(self, checkpoint_id: int) -> CheckpointInfo:
        """The checkpoint, which is SEALED or COMMITTED.

        :raises CheckpointError: unknown, of another pipeline, or in any other state.
        """
        ...

    def pending_landings(self) -> list[CheckpointInfo]:
        """Sealed checkpoints not committed yet, oldest first."""
        ...

    def checkpoints_in_interval(self, start: datetime, end: datetime) -> list[CheckpointInfo]:
        """Sealed or committed checkpoints of the data interval ``[start, end)``, oldest first.
        Read-only."""
        ...

    def worker_is_live(self) -> bool:
        """True while a collector holds the pipeline's lease on this host."""
        ...

    def collect_once(self) -> CollectReport:
        """Read every file to its current end and seal every requested checkpoint.

        :raises CollectorBusyError: a live collector holds the lease.
        """
        ...


class Collection(StrEnum):
    """What the collect step of a plan did for the run's requested checkpoint."""

    NOT_PLANNED = "not_planned"
    """The plan collects nothing (policy ``NEVER``, or a selection that requests nothing)."""
    NOT_WAITING = "not_waiting"
    """The checkpoint no longer waited to be sealed (a retried run, a quick worker):
    collecting now would seal a new checkpoint that no run lands."""
    LEFT_TO_WORKER = "left_to_worker"
    """A collector worker holds the lease: it seals the checkpoint at its next barrier."""
    IN_PROCESS = "in_process"
    """Collected and sealed in this process (the plan result's ``report`` says what)."""


@dataclass(frozen=True)
class PlanResult:
    """What carrying out a plan found and did."""

    plan: RunPlan
    checkpoint_ids: tuple[int, ...]
    """The checkpoints the run lands, oldest first (maybe none)."""
    checkpoint: CheckpointInfo | None = None
    """The run's own checkpoint (``REQUESTED`` and ``NAMED`` selections) as it was when it
    was requested or named, before any collecting."""
    collection: Collection = Collection.NOT_PLANNED
    report: CollectReport | None = None
    """What collecting in-process read and sealed (``IN_PROCESS`` only)."""

    @property
    def lands(self) -> int | list[int]:
        """What the run lands as its request step returns it: the id of its own checkpoint
        when that is all it lands, else the list of ids (maybe empty)."""
        own = self.checkpoint
        if own is not None and self.checkpoint_ids == (own.checkpoint_id,):
            return own.checkpoint_id
        return list(self.checkpoint_ids)


def execute_plan(plan: RunPlan, operations: RunOperations) -> PlanResult:
    """Carry out ``plan``: find (or request) its checkpoints and collect if it says so.

    Calls on ``operations``, in order: ``checkpoints_in_interval`` (``INTERVAL``),
    ``pending_landings`` (``PENDING``), ``landable`` (``NAMED``); for ``REQUESTED``,
    ``request_checkpoint``, then, only while the checkpoint is still requested,
    ``worker_is_live`` (policy ``IF_IDLE``) and ``collect_once``, then ``pending_landings``
    when the plan lands earlier sealed checkpoints too.

    :raises RunPlanError: the checkpoint a ``NAMED`` plan names cannot be landed.
    """
    if plan.selection is Selection.INTERVAL:
        return _interval(plan, operations)
    if plan.selection is Selection.PENDING:
        pending = tuple(info.checkpoint_id for info in operations.pending_landings())
        log.info("Landing the sealed checkpoints not committed yet: %s", list(pending))
        return PlanResult(plan, pending)
    if plan.selection is Selection.NAMED:
        return _named(plan, operations)
    return _requested(plan, operations)


def _interval(plan: RunPlan, operations: RunOperations) -> PlanResult:
    if plan.mode is not RunMode.NORMAL:
        log.info("A backfill run re-lands its interval; mode %s is ignored", plan.mode)
    if plan.data_interval is None:  # RunPlan refuses this; narrows the type
        raise ValueError("a plan landing an interval needs its data_interval")
    start, end = plan.data_interval
    ids = tuple(info.checkpoint_id for info in operations.checkpoints_in_interval(start, end))
    if ids:
        log.info("Backfill of %s - %s re-lands checkpoints %s", start, end, list(ids))
    else:
        log.info("Backfill of %s - %s: no checkpoint was sealed then", start, end)
    return PlanResult(plan, ids)


def _named(plan: RunPlan, operations: RunOperations) -> PlanResult:
    if plan.checkpoint_id is None:  # RunPlan refuses this; narrows the type
        raise ValueError("a plan landing a named checkpoint needs its checkpoint_id")
    try:
        info = operations.landable(plan.checkpoint_id)
    except CheckpointError as exc:
        raise RunPlanError(f"cannot reprocess: {exc}") from exc
    _log_checkpoint(info)
    return PlanResult(plan, (info.checkpoint_id,), info)


def _requested(plan: RunPlan, operations: RunOperations) -> PlanResult:
    info = operations.request_checkpoint(run_id=plan.run_id, data_interval=plan.data_interval)
    _log_checkpoint(info)
    collection, report = _collect(plan.collect, info, operations)
    ids: tuple[int, ...] = (info.checkpoint_id,)
    if plan.land_earlier_sealed:
        older = tuple(
            pending.checkpoint_id
            for pending in operations.pending_landings()
            if pending.checkpoint_id < info.checkpoint_id
        )
        if older:
            log.info("Also landing earlier sealed checkpoints %s", list(older))
            ids = (*older, info.checkpoint_id)
    return PlanResult(plan, ids, info, collection, report)


def _collect(
    policy: CollectPolicy, info: CheckpointInfo, operations: RunOperations
) -> tuple[Collection, CollectReport | None]:
    if policy is CollectPolicy.NEVER:
        return Collection.NOT_PLANNED, None
    if info.state != CheckpointState.REQUESTED:
        return Collection.NOT_WAITING, None
    if policy is CollectPolicy.IF_IDLE and operations.worker_is_live():
        log.info("A collector worker holds the lease; it seals the checkpoint")
        return Collection.LEFT_TO_WORKER, None
    try:
        report = operations.collect_once()
    except CollectorBusyError:
        log.info("A collector worker holds the lease; it seals the checkpoint")
        return Collection.LEFT_TO_WORKER, None
    log.info(
        "Collected %d lines (%d bytes) from %d files in %.2f s; sealed checkpoints %s",
        report.lines,
        report.bytes,
        report.files,
        report.seconds,
        [sealed.checkpoint_id for sealed in report.sealed],
    )
    return Collection.IN_PROCESS, report


def _log_checkpoint(info: CheckpointInfo) -> None:
    log.info(
        "Checkpoint %d of pipeline %s is %s (staging dir %s)",
        info.checkpoint_id,
        info.pipeline,
        info.state.value,
        info.staging,
    )
