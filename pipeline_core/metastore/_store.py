"""Metastore: the facade over the repositories, one transaction per call."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from pipeline_core.errors import CheckpointError, MetastoreError
from pipeline_core.metastore._lifecycle import CheckpointState
from pipeline_core.metastore._migrations import upgrade_to_head
from pipeline_core.metastore._records import (
    AckerTreeRecord,
    BatchRecord,
    CheckpointRecord,
    SinkStateRecord,
)
from pipeline_core.metastore._repositories import Repositories
from pipeline_core.metastore._request_probe import RequestProbe, open_request_probe
from pipeline_core.metastore._values import redacted_url, utcnow
from pipeline_core.source import FileRecord

_migrate_lock = threading.Lock()


class Metastore:
    """Sluice's state in one SQL database (SQLite by default, PostgreSQL for deployments).

    Opening it migrates the schema to the newest version. Each method is one transaction over
    the repositories (:class:`Repositories`, one per record kind); a checkpoint's batch, byte
    ranges, file offsets, acker trees and state change commit in one (:meth:`seal`). Every
    change of a checkpoint's state is checked against its lifecycle (:class:`CheckpointState`).

    Threading model: the engine's pool makes the object safe to share between threads; the
    collector still keeps all its writes on its mailbox thread.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str) -> Metastore:
        """Connect to ``url`` and migrate the schema.

        Raises:
            MetastoreError: the database cannot be reached or migrated.
        """
        try:
            engine = sa.create_engine(url, pool_pre_ping=True)
            if engine.dialect.name == "sqlite":
                database = engine.url.database
                if database and database != ":memory:":
                    Path(database).parent.mkdir(parents=True, exist_ok=True)
                _tune_sqlite(engine)
            with _migrate_lock, engine.begin() as connection:
                upgrade_to_head(connection)
        except (SQLAlchemyError, OSError) as exc:
            raise MetastoreError(f"cannot open the metastore {redacted_url(url)}: {exc}") from exc
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    def request_probe(self) -> RequestProbe:
        """A cheap way to notice new checkpoint requests between queries (see
        :class:`RequestProbe`); the caller closes it."""
        return open_request_probe(self.engine)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise MetastoreError(f"metastore transaction failed: {exc}") from exc

    @contextmanager
    def _repositories(self) -> Iterator[Repositories]:
        with self.transaction() as connection:
            yield Repositories.on(connection)

    # -- checkpoints -------------------------------------------------------------------------

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
                hosts = r.leases.live_hosts(pipeline, now)
                checkpoint_id = r.checkpoints.insert(pipeline, run_id, data_interval, hosts, now)
        except MetastoreError as exc:
            if run_id is not None and isinstance(exc.__cause__, IntegrityError):
                found = self._checkpoint_of_run(pipeline, run_id)
                if found is not None:
                    return found
            raise
        return self.checkpoint(checkpoint_id)

    def _checkpoint_of_run(self, pipeline: str, run_id: str) -> CheckpointRecord | None:
        with self._repositories() as r:
            return r.checkpoints.of_run(pipeline, run_id)

    def checkpoint(self, checkpoint_id: int) -> CheckpointRecord:
        """Raises CheckpointError when there is no such checkpoint."""
        with self._repositories() as r:
            record = r.checkpoints.get(checkpoint_id)
        if record is None:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
        return record

    def checkpoints(
        self, pipeline: str, states: Iterable[CheckpointState] | None = None, limit: int = 1000
    ) -> list[CheckpointRecord]:
        """A pipeline's checkpoints, oldest first (the newest ``limit``)."""
        with self._repositories() as r:
            return r.checkpoints.newest(pipeline, states, limit)

    def checkpoints_in_interval(
        self, pipeline: str, start: datetime, end: datetime
    ) -> list[CheckpointRecord]:
        """The landable checkpoints of ``[start, end)``, oldest first (see
        :meth:`CheckpointRepository.landable_in_interval`)."""
        with self._repositories() as r:
            return r.checkpoints.landable_in_interval(pipeline, start, end)

    def unsealed_for_host(self, pipeline: str, host: str) -> list[int]:
        """Ids of REQUESTED checkpoints this host should seal a batch for, oldest first: those
        waiting for this host, and those waiting for no host in particular."""
        with self._repositories() as r:
            return r.checkpoints.unsealed_for_host(pipeline, host)

    def batches(self, checkpoint_id: int) -> list[BatchRecord]:
        with self._repositories() as r:
            return r.batches.of_checkpoints([checkpoint_id])

    def seal(
        self,
        pipeline: str,
        batch: BatchRecord,
        files: Iterable[FileRecord],
        host: str,
        acker_trees: Iterable[AckerTreeRecord] | None = None,
    ) -> int:
        """Record a sealed batch in ONE transaction: the batch and its byte ranges, the files'
        offsets at the barrier, the acker's in-flight trees (when given) and, once every host
        the checkpoint waits for has sealed its batch, the checkpoint's move to SEALED.
        Returns the batch id.

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: the checkpoint cannot become SEALED any more (sealed
                elsewhere, committed, failed).
        """
        now = utcnow()
        checkpoint_id = batch.checkpoint_id
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
            r.files.save(pipeline, host, files, now)
            if acker_trees is not None:
                r.acker_trees.replace(pipeline, host, acker_trees, now)
            r.checkpoints.host_sealed(checkpoint_id, host)
            _seal_when_complete(r, checkpoint_id, now)
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
            live = r.leases.live_hosts(record.pipeline, now)
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
        return self.checkpoint(checkpoint_id)

    def fail_checkpoint(self, checkpoint_id: int, error: str) -> CheckpointRecord:
        """Mark a checkpoint that can no longer be sealed or landed FAILED, storing ``error``
        (what DAG runs waiting for it then fail with).

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: it is COMMITTED or FAILED already.
        """
        with self._repositories() as r:
            r.checkpoints.move(checkpoint_id, CheckpointState.FAILED, error=error)
        return self.checkpoint(checkpoint_id)

    # -- files, sink states, acker trees -------------------------------------------------------

    def files(self, pipeline: str, host: str) -> list[FileRecord]:
        with self._repositories() as r:
            return r.files.of_host(pipeline, host)

    def sink_states(self, pipeline: str, host: str) -> list[SinkStateRecord]:
        """The stored state of every sink of the pipeline's sink groups on ``host``."""
        with self._repositories() as r:
            return r.sink_states.of_host(pipeline, host)

    def save_sink_states(self, pipeline: str, host: str, states: Iterable[SinkStateRecord]) -> None:
        """Upsert the given sink states in one transaction."""
        with self._repositories() as r:
            r.sink_states.save(pipeline, host, states, utcnow())

    def acker_trees(self, pipeline: str, host: str) -> list[AckerTreeRecord]:
        """The in-flight trees saved last for (pipeline, host)."""
        with self._repositories() as r:
            return r.acker_trees.of_host(pipeline, host)

    def save_acker_trees(self, pipeline: str, host: str, trees: Iterable[AckerTreeRecord]) -> None:
        """Replace the saved in-flight trees of (pipeline, host) by ``trees``, in one
        transaction."""
        with self._repositories() as r:
            r.acker_trees.replace(pipeline, host, trees, utcnow())

    # -- leases ------------------------------------------------------------------------------

    def acquire_lease(self, pipeline: str, host: str, holder: str, ttl: float) -> bool:
        """Take or renew the lease on (pipeline, host) for ``ttl`` seconds.

        The lease is granted when it is free, expired, ``holder``'s already, or held by a
        holder this process proves dead (a collector killed on this machine, see
        :class:`LeaseHolder`): a collector restarted after a crash takes its predecessor's
        lease over at once, with a warning naming it. The takeover is conditional on the dead
        holder still holding the lease, so of two collectors taking it over at once one wins.

        Returns False when another holder's lease has not expired and that holder may be
        alive (it runs, or cannot be seen from here).
        """
        with self._repositories() as r:
            return r.leases.acquire(pipeline, host, holder, ttl, utcnow())

    def release_lease(self, pipeline: str, host: str, holder: str) -> None:
        with self._repositories() as r:
            r.leases.release(pipeline, host, holder)

    def lease_holder(self, pipeline: str, host: str) -> str | None:
        """The holder of an unexpired lease on (pipeline, host), if any. It may be a collector
        killed since, whose lease the next one takes over (see :meth:`acquire_lease`)."""
        with self._repositories() as r:
            return r.leases.holder(pipeline, host, utcnow())


def _seal_when_complete(r: Repositories, checkpoint_id: int, now: datetime) -> None:
    """Move a REQUESTED checkpoint with at least one batch and no host still owing one to
    SEALED."""
    if (
        r.checkpoints.state(checkpoint_id) is CheckpointState.REQUESTED
        and r.checkpoints.hosts_owing(checkpoint_id) == 0
        and r.batches.count(checkpoint_id) > 0
    ):
        r.checkpoints.move(checkpoint_id, CheckpointState.SEALED, sealed_at=now)


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
