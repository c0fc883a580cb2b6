"""Metastore: the facade over the repositories, one transaction per call."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import SQLAlchemyError

from pipeline_core._file_modes import make_private_dirs, open_private
from pipeline_core._metastore_pooling import MetastorePooling, apply_pooling
from pipeline_core.errors import CheckpointError, MetastoreError, MetastoreNotReadyError
from pipeline_core.metastore._checkpoint_transitions import CheckpointTransitions
from pipeline_core.metastore._lifecycle import CheckpointState
from pipeline_core.metastore._migrations import SchemaVersion, schema_version, upgrade_to_head
from pipeline_core.metastore._read_progress import READ_PROGRESS_RETENTION
from pipeline_core.metastore._records import (
    AckerTreeRecord,
    BatchRecord,
    CheckpointRecord,
    ReadProgressRecord,
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
    the repositories (:class:`Repositories`, one per record kind). The changes of a checkpoint
    (request, seal, excusing lapsed hosts, commit, fail, forget) are its ``transitions``
    (:class:`CheckpointTransitions`), each checked against the checkpoint's lifecycle
    (:class:`CheckpointState`); :meth:`request_checkpoint`, :meth:`seal` and
    :meth:`commit_checkpoint`, which many callers use, are here too.

    ``pooling``: what sits between it and a PostgreSQL server (:class:`MetastorePooling`);
    :meth:`open` and :meth:`connect` fit the engine to it, and :meth:`request_probe` follows
    it.

    Threading model: the engine's pool makes the object safe to share between threads; the
    collector still keeps all its writes on its mailbox thread.
    """

    def __init__(self, engine: Engine, pooling: MetastorePooling = MetastorePooling.NONE) -> None:
        self.engine = engine
        self.pooling = pooling
        self.transitions = CheckpointTransitions(self._repositories)
        """Every change of a checkpoint (:class:`CheckpointTransitions`)."""

    @classmethod
    def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        pooling: MetastorePooling = MetastorePooling.NONE,
    ) -> Metastore:
        """Connect to ``url`` and migrate the schema (creating a SQLite file and its folder:
        0600 in 0700, see ``pipeline_core._file_modes``).

        ``migrate``: False for readers that must change nothing (``sluice status``): the
        database is used as it is, and must exist at the newest migration. ``pooling``: what
        sits between Sluice and the server (``metastore.pooling``).

        Raises:
            MetastoreNotReadyError: ``migrate`` is False and the database does not exist or is
                not at the newest migration.
            MetastoreError: the database cannot be reached or migrated.
        """
        if not migrate:
            metastore = cls.connect(url, pooling=pooling)
            try:
                version = metastore.schema_version()
            except BaseException:
                metastore.close()
                raise
            if not version.up_to_date:
                metastore.close()
                raise MetastoreNotReadyError(
                    f"the metastore {redacted_url(url)} is at {version.describe()}: "
                    "run `sluice db upgrade CONFIG` to migrate it"
                )
            return metastore
        metastore = cls.connect(url, create=True, pooling=pooling)
        try:
            metastore.migrate()
        except BaseException:
            metastore.close()
            raise
        return metastore

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        create: bool = False,
        pooling: MetastorePooling = MetastorePooling.NONE,
    ) -> Metastore:
        """Connect to ``url`` without migrating anything (:meth:`schema_version`,
        :meth:`migrate`). ``create``: make a SQLite file's folder; otherwise a SQLite file that
        does not exist is refused rather than created. ``pooling``: as for :meth:`open`.

        Raises:
            MetastoreNotReadyError: a SQLite file that does not exist, without ``create``.
            MetastoreError: the URL names no usable database driver.
        """
        try:
            engine = apply_pooling(sa.create_engine(url, pool_pre_ping=True), pooling)
            if engine.dialect.name == "sqlite":
                database = engine.url.database
                if database and database != ":memory:" and not database.startswith("file:"):
                    if create:
                        _create_private(Path(database))
                    elif not Path(database).is_file():
                        raise MetastoreNotReadyError(
                            f"there is no metastore at {database}: run `sluice db upgrade "
                            "CONFIG` to create it (or correct metastore.url)"
                        )
                _tune_sqlite(engine)
        except (SQLAlchemyError, OSError, ImportError) as exc:
            raise MetastoreError(f"cannot open the metastore {redacted_url(url)}: {exc}") from exc
        return cls(engine, pooling)

    def schema_version(self) -> SchemaVersion:
        """The migration the database is at (nothing changed).

        Raises:
            MetastoreError: the database cannot be reached.
        """
        try:
            with self.engine.connect() as connection:
                return schema_version(connection)
        except SQLAlchemyError as exc:
            raise MetastoreError(f"cannot open the metastore {self._where}: {exc}") from exc

    def migrate(self) -> SchemaVersion:
        """Apply every migration not applied yet; returns the version the database was at.

        Raises:
            MetastoreError: the database cannot be reached or migrated.
        """
        try:
            with _migrate_lock, self.engine.begin() as connection:
                return upgrade_to_head(connection)
        except (SQLAlchemyError, OSError) as exc:
            raise MetastoreError(f"cannot open the metastore {self._where}: {exc}") from exc

    @property
    def _where(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    def request_probe(self) -> RequestProbe:
        """A cheap way to notice new checkpoint requests between queries (see
        :class:`RequestProbe`); the caller closes it."""
        return open_request_probe(self.engine, self.pooling)

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
        """:meth:`CheckpointTransitions.request_checkpoint`: a REQUESTED checkpoint, the same
        one for the same ``run_id``."""
        return self.transitions.request_checkpoint(pipeline, run_id, data_interval)

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

    def unsealed_for_hosts(
        self, pipelines: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], list[int]]:
        """:meth:`unsealed_for_host` of every ``(pipeline, host)``, in one transaction."""
        with self._repositories() as r:
            return r.checkpoints.unsealed_for_hosts(pipelines)

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
        forgotten: Collection[str] = (),
    ) -> int:
        """:meth:`CheckpointTransitions.seal`: record a host's sealed batch, in one transaction
        with everything that goes with it; the batch id."""
        return self.transitions.seal(pipeline, batch, files, host, acker_trees, forgotten)

    def commit_checkpoint(self, checkpoint_id: int, landing: dict[str, Any]) -> CheckpointRecord:
        """:meth:`CheckpointTransitions.commit_checkpoint`: mark a SEALED checkpoint COMMITTED
        with the landing job's counts."""
        return self.transitions.commit_checkpoint(checkpoint_id, landing)

    # -- files, sink states, acker trees, read progress --------------------------------------

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
        self.save_acker_trees_many([(pipeline, host, trees)])

    def save_acker_trees_many(
        self, saved: Sequence[tuple[str, str, Iterable[AckerTreeRecord]]]
    ) -> None:
        """:meth:`save_acker_trees` for several (pipeline, host), in one transaction."""
        with self._repositories() as r:
            now = utcnow()
            for pipeline, host, trees in saved:
                r.acker_trees.replace(pipeline, host, trees, now)

    def record_read_progress(
        self,
        pipeline: str,
        sample: ReadProgressRecord,
        retention: timedelta = READ_PROGRESS_RETENTION,
    ) -> None:
        """Add a sample of what the collector of ``sample.host`` read, and remove that host's
        samples older than ``retention`` (``collector.progress_retain_hours``), in one
        transaction."""
        self.record_read_progress_many([(pipeline, sample, retention)])

    def record_read_progress_many(
        self, samples: Sequence[tuple[str, ReadProgressRecord, timedelta]]
    ) -> None:
        """:meth:`record_read_progress` for several pipelines' samples (each with its
        retention), in one transaction."""
        with self._repositories() as r:
            for pipeline, sample, retention in samples:
                r.read_progress.add(pipeline, sample)
                r.read_progress.prune(pipeline, sample.host, before=sample.sampled_at - retention)

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
            return r.leases.acquire(pipeline, host, holder, ttl)

    def acquire_leases(self, leases: Sequence[tuple[str, str, str, float]]) -> list[bool]:
        """:meth:`acquire_lease` of each ``(pipeline, host, holder, ttl)``, in one
        transaction (a collector serving many pipelines renews them together); whether each
        was granted. The leases a holder holds already are renewed in one statement per
        holder, host and ttl; only where that finds a lease not held is each acquired."""
        granted: dict[int, bool] = {}
        groups: dict[tuple[str, str, float], list[int]] = {}
        for index, (_, host, holder, ttl) in enumerate(leases):
            groups.setdefault((host, holder, ttl), []).append(index)
        with self._repositories() as r:
            for (host, holder, ttl), indexes in groups.items():
                names = [leases[i][0] for i in indexes]
                if len(set(names)) == len(names) and (
                    r.leases.renew(names, host, holder, ttl) == len(names)
                ):
                    granted.update(dict.fromkeys(indexes, True))
                    continue
                for index in indexes:
                    granted[index] = r.leases.acquire(leases[index][0], host, holder, ttl)
        return [granted[index] for index in range(len(leases))]

    def release_lease(self, pipeline: str, host: str, holder: str) -> None:
        with self._repositories() as r:
            r.leases.release(pipeline, host, holder)

    def lease_holder(self, pipeline: str, host: str) -> str | None:
        """The holder of an unexpired lease on (pipeline, host), if any. It may be a collector
        killed since, whose lease the next one takes over (see :meth:`acquire_lease`)."""
        with self._repositories() as r:
            return r.leases.holder(pipeline, host)


def _create_private(database: Path) -> None:
    """A new SQLite file, created empty 0600 in a folder created 0700 before SQLite opens it
    (SQLite gives its ``-wal`` and ``-shm`` files the database's mode); one that exists is
    left as it is."""
    make_private_dirs(database.parent)
    with contextlib.suppress(FileExistsError):
        os.close(open_private(database, os.O_WRONLY | os.O_EXCL))


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
