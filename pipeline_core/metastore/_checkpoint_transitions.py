"""CheckpointTransitions: every change of a checkpoint, one transaction each."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError

from pipeline_core._fault_points import FaultPoint, reached
from pipeline_core.errors import CheckpointError, MetastoreError
from pipeline_core.metastore._lifecycle import CheckpointState
from pipeline_core.metastore._records import AckerTreeRecord, BatchRecord, CheckpointRecord
from pipeline_core.metastore._repositories import Repositories
from pipeline_core.metastore._values import utcnow
from pipeline_core.source import FileRecord

FORGET_CHUNK = 500
"""Checkpoints forgotten per transaction (:meth:`CheckpointTransitions.forget_checkpoints`)."""

RepositoriesInTransaction = Callable[[], AbstractContextManager[Repositories]]
"""Opens a transaction and gives its repositories (``Metastore``'s; a failure of the database
leaves the block as a :class:`~pipeline_core.errors.MetastoreError`)."""


class CheckpointTransitions:
    """Every change of a checkpoint, from its request to its removal: requesting it, recording
    a host's sealed batch, excusing hosts whose lease lapsed, committing, failing and forgetting
    it. Each method is one transaction over the repositories, and every move of a checkpoint's
    state is checked against its lifecycle (:class:`CheckpointState`); a checkpoint's batch,
    byte ranges, file offsets, acker trees and state change commit in one (:meth:`seal`).

    Made by :class:`~pipeline_core.metastore.Metastore` (its ``transitions``), which keeps
    :meth:`request_checkpoint`, :meth:`seal` and :meth:`commit_checkpoint` as its own methods
    too. Threading model: as the metastore's, safe to share between threads (each call takes
    its own connection from the engine's pool).
    """

    def __init__(self, repositories: RepositoriesInTransaction) -> None:
        self._repositories = repositories

    def request_checkpoint(
        self,
        pipeline: str,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointRecord:
        """Create a REQUESTED checkpoint; the same ``run_id`` always gets the same checkpoint.

        The checkpoint waits for a batch from every host whose collector holds the pipeline's
        lease now (several collectors, one per host); when none does (one host collecting
        once, tests), the first host to seal it completes it.
        """
        if run_id is not None and (existing := self._checkpoint_of_run(pipeline, run_id)):
            return existing
        now = utcnow()
        try:
            with self._repositories() as r:
                hosts = r.leases.live_hosts(pipeline)
                checkpoint_id = r.checkpoints.insert(pipeline, run_id, data_interval, hosts, now)
        except MetastoreError as exc:
            if run_id is not None and isinstance(exc.__cause__, IntegrityError):
                found = self._checkpoint_of_run(pipeline, run_id)
                if found is not None:
                    return found
            raise
        return self._checkpoint(checkpoint_id)

    def seal(
        self,
        pipeline: str,
        batch: BatchRecord,
        files: Iterable[FileRecord],
        host: str,
        acker_trees: Iterable[AckerTreeRecord] | None = None,
        forgotten: Collection[str] = (),
    ) -> int:
        """Record a sealed batch in ONE transaction: the batch and its byte ranges, the files'
        offsets at the barrier, the rows of the files the host forgot (``forgotten``:
        fingerprints), the acker's in-flight trees (when given) and, once every host the
        checkpoint waits for has sealed its batch, the checkpoint's move to SEALED.
        Returns the batch id.

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: the checkpoint cannot become SEALED any more (sealed
                elsewhere, committed, failed).
        """
        now = utcnow()
        checkpoint_id = batch.checkpoint_id
        reached(FaultPoint.SEAL_TRANSACTION_BEGINS)
        with self._repositories() as r:
            # Locked: hosts sealing their batches at once must not each miss the other's.
            state = r.checkpoints.state(checkpoint_id, lock=True)
            if state is None:
                raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
            recorded = r.batches.recorded(checkpoint_id, host, batch.checksum)
            if recorded is not None and state is not CheckpointState.COMMITTED:
                return recorded  # a retry of a seal whose commit succeeded: idempotent
            state.check_transition(checkpoint_id, CheckpointState.SEALED)
            batch_id = r.batches.insert(pipeline, host, batch, now)
            reached(FaultPoint.SEAL_TRANSACTION_OPEN)
            r.files.save(pipeline, host, files, now)
            r.files.forget(pipeline, host, forgotten)
            if acker_trees is not None:
                r.acker_trees.replace(pipeline, host, acker_trees, now)
            r.checkpoints.host_sealed(checkpoint_id, host)
            _seal_when_complete(r, checkpoint_id, now)
        reached(FaultPoint.SEAL_TRANSACTION_COMMITTED)
        return batch_id

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> list[str]:
        """Stop waiting, for checkpoint ``checkpoint_id``, for hosts whose collector lease has
        lapsed (the host is down: its lines go into a later checkpoint when it is back), and
        seal the checkpoint if every remaining host has. Returns the hosts excused."""
        now = utcnow()
        with self._repositories() as r:
            r.checkpoints.state(checkpoint_id, lock=True)  # as in seal()
            record = r.checkpoints.get(checkpoint_id)
            if record is None:
                raise CheckpointError(f"checkpoint {checkpoint_id} does not exist")
            live = r.leases.live_hosts(record.pipeline)
            lapsed = r.checkpoints.hosts_lapsed(checkpoint_id, live)
            if lapsed:
                r.checkpoints.excuse_hosts(checkpoint_id, lapsed)
                _seal_when_complete(r, checkpoint_id, now)
        return lapsed

    def commit_checkpoint(self, checkpoint_id: int, landing: dict[str, Any]) -> CheckpointRecord:
        """Mark a SEALED checkpoint COMMITTED with the landing job's counts (idempotent: a
        COMMITTED one is committed again with the new counts).

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: it is not SEALED or COMMITTED.
        """
        with self._repositories() as r:
            r.checkpoints.move(
                checkpoint_id,
                CheckpointState.COMMITTED,
                committed_at=utcnow(),
                landing=json.dumps(landing, sort_keys=True),
            )
        return self._checkpoint(checkpoint_id)

    def fail_checkpoint(self, checkpoint_id: int, error: str) -> CheckpointRecord:
        """Mark a checkpoint that can no longer be sealed or landed FAILED, storing ``error``
        (what DAG runs waiting for it then fail with).

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: it is COMMITTED or FAILED already.
        """
        with self._repositories() as r:
            r.checkpoints.move(checkpoint_id, CheckpointState.FAILED, error=error)
        return self._checkpoint(checkpoint_id)

    def forget_checkpoints(self, pipeline: str, before: datetime) -> list[int]:
        """Delete ``pipeline``'s checkpoints committed before ``before``, with their batches,
        byte ranges and host rows; returns their ids. For what maintenance keeps and why,
        see ``PipelineOperations.forget_old_checkpoints``."""
        forgotten: list[int] = []
        while True:
            with self._repositories() as r:
                ids = r.checkpoints.committed_before(pipeline, before, FORGET_CHUNK)
                if ids:
                    r.batches.delete_of_checkpoints(ids)
                    r.checkpoints.delete(ids)
            forgotten += ids
            if len(ids) < FORGET_CHUNK:
                return forgotten

    def _checkpoint_of_run(self, pipeline: str, run_id: str) -> CheckpointRecord | None:
        with self._repositories() as r:
            return r.checkpoints.of_run(pipeline, run_id)

    def _checkpoint(self, checkpoint_id: int) -> CheckpointRecord:
        """The checkpoint as the transition left it (as ``Metastore.checkpoint``)."""
        with self._repositories() as r:
            record = r.checkpoints.get(checkpoint_id)
        if record is None:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
        return record


def _seal_when_complete(r: Repositories, checkpoint_id: int, now: datetime) -> None:
    """Move a REQUESTED checkpoint with at least one batch and no host still owing one to
    SEALED."""
    if (
        r.checkpoints.state(checkpoint_id) is CheckpointState.REQUESTED
        and r.checkpoints.hosts_owing(checkpoint_id) == 0
        and r.batches.count(checkpoint_id) > 0
    ):
        r.checkpoints.move(checkpoint_id, CheckpointState.SEALED, sealed_at=now)
