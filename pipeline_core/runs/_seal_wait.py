"""Waiting for a run's checkpoint to be sealed: what one look at it decides.

A run's wait step (Airflow's sensor, or its trigger in the triggerer) looks at its checkpoint
again and again with :func:`look_sealed` until the answer is not :attr:`SealWait.WAITING`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pipeline_core._compat import StrEnum
from pipeline_core.metastore import CheckpointState

if TYPE_CHECKING:
    from pipeline_core.operations import CheckpointInfo


class SealWait(StrEnum):
    """What a run waiting for its checkpoint does after one look."""

    LANDABLE = "landable"
    """SEALED or COMMITTED: every batch it waits for is recorded; land it."""
    FAILED = "failed"
    """FAILED: it will never be sealed or landed (``CheckpointInfo.error`` says why)."""
    WAITING = "waiting"
    """REQUESTED: a live host still owes its batch; look again later."""


@dataclass(frozen=True)
class SealLook:
    """One look at a checkpoint a run waits for."""

    checkpoint: CheckpointInfo
    """The checkpoint after the look (sealed by it, when excusing hosts completed it)."""
    wait: SealWait
    excused: tuple[str, ...] = ()
    """The hosts this look stopped waiting for: their collector leases had lapsed."""


class SealOperations(Protocol):
    """What :func:`look_sealed` needs of a pipeline (``PipelineOperations`` has it)."""

    def checkpoint(self, checkpoint_id: int) -> CheckpointInfo:
        """The checkpoint now; raises ``CheckpointError`` for an unknown one."""
        ...

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> tuple[str, ...]:
        """Stop waiting for the hosts whose lease lapsed, sealing the checkpoint if that
        completes it; returns them."""
        ...


def look_sealed(operations: SealOperations, checkpoint_id: int) -> SealLook:
    """Look once at the checkpoint a run waits for, and decide.

    A REQUESTED checkpoint first stops waiting for every host whose collector lease has lapsed
    (a host that died, or is cut off from the metastore, for longer than
    ``collector.lease_seconds``), so the run goes on with the live hosts' batches instead of
    waiting for its time-out. What an excused host read but did not seal is in no recorded
    batch: its collector, back, reads it again from its last sealed offsets into a later
    checkpoint. Should the host seal its batch of this checkpoint after all, the batch is
    recorded while another host still owes one, and refused once the checkpoint is sealed
    (nothing of it is recorded, and the landing reads only recorded batches): either way its
    lines land once.

    A poller keeps one metastore open by looking inside a ``with open_pipeline(...)`` block.

    Raises:
        CheckpointError: an unknown checkpoint, or one of another pipeline.
        MetastoreError: the metastore cannot be reached (look again later).
    """
    info = operations.checkpoint(checkpoint_id)
    excused: tuple[str, ...] = ()
    if info.state is CheckpointState.REQUESTED:
        excused = operations.excuse_lapsed_hosts(checkpoint_id)
        if excused:
            info = operations.checkpoint(checkpoint_id)
    if info.state.landable:
        wait = SealWait.LANDABLE
    elif info.state is CheckpointState.FAILED:
        wait = SealWait.FAILED
    else:
        wait = SealWait.WAITING
    return SealLook(info, wait, excused)
