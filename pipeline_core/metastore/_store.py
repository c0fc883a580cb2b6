"""The metastore repository: every read and write Sluice makes to its SQL database."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from pipeline_core.errors import CheckpointError, MetastoreError
from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._lease_holder import holder_liveness
from pipeline_core.metastore._migrations import upgrade_to_head
from pipeline_core.metastore._records import (
    AckerTreeRecord,
    BatchRecord,
    CheckpointRecord,
    CheckpointState,
    FileRecord,
    FileState,
    SinkStateRecord,
)
from pipeline_core.metastore._request_probe import (
    REQUESTS_CHANNEL,
    RequestProbe,
    open_request_probe,
)

log = logging.getLogger(__name__)

_migrate_lock = threading.Lock()


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


class Metastore:
    """Sluice's state in one SQL database (SQLite by default, PostgreSQL for deployments).

    Opening it migrates the schema to the newest version. Writes are grouped: a checkpoint's
    batch, byte ranges, file offsets and state change commit in one transaction.

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
            raise MetastoreError(f"cannot open the metastore {_safe(url)}: {exc}") from exc
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
        if run_id is not None:
            existing = self._checkpoint_by_run(pipeline, run_id)
            if existing is not None:
                return existing
        start, end = data_interval if data_interval else (None, None)
        values = {
            "pipeline": pipeline,
            "state": CheckpointState.REQUESTED.value,
            "run_id": run_id,
            "data_interval_start": start,
            "data_interval_end": end,
            "requested_at": utcnow(),
        }
        try:
            with self.transaction() as connection:
                new_id = connection.execute(
                    t.checkpoints.insert().values(values)
                ).inserted_primary_key
                assert new_id is not None
                live_hosts = connection.execute(
                    sa.select(t.leases.c.host).where(
                        t.leases.c.pipeline == pipeline,
                        t.leases.c.expires_at >= values["requested_at"],
                    )
                ).scalars()
                rows = [
                    {"checkpoint_id": new_id[0], "host": host, "sealed": 0} for host in live_hosts
                ]
                if rows:
                    connection.execute(t.checkpoint_hosts.insert(), rows)
                if connection.dialect.name == "postgresql":  # delivered at commit
                    connection.execute(sa.select(sa.func.pg_notify(REQUESTS_CHANNEL, pipeline)))
        except MetastoreError as exc:
            if run_id is not None and isinstance(exc.__cause__, IntegrityError):
                found = self._checkpoint_by_run(pipeline, run_id)
                if found is not None:
                    return found
            raise
        assert new_id is not None
        return self.checkpoint(int(new_id[0]))

    def _checkpoint_by_run(self, pipeline: str, run_id: str) -> CheckpointRecord | None:
        query = sa.select(t.checkpoints).where(
            t.checkpoints.c.pipeline == pipeline, t.checkpoints.c.run_id == run_id
        )
        with self.transaction() as connection:
            row = connection.execute(query).first()
        return _checkpoint(row) if row else None

    def checkpoint(self, checkpoint_id: int) -> CheckpointRecord:
        """Raises CheckpointError when there is no such checkpoint."""
        with self.transaction() as connection:
            row = connection.execute(
                sa.select(t.checkpoints).where(t.checkpoints.c.id == checkpoint_id)
            ).first()
        if row is None:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
        return _checkpoint(row)

    def checkpoints(
        self, pipeline: str, states: Iterable[CheckpointState] | None = None, limit: int = 1000
    ) -> list[CheckpointRecord]:
        """A pipeline's checkpoints, oldest first (the newest ``limit``)."""
        query = sa.select(t.checkpoints).where(t.checkpoints.c.pipeline == pipeline)
        if states is not None:
            query = query.where(t.checkpoints.c.state.in_([s.value for s in states]))
        query = query.order_by(t.checkpoints.c.id.desc()).limit(limit)
        with self.transaction() as connection:
            rows = connection.execute(query).all()
        return [_checkpoint(row) for row in reversed(rows)]

    def unsealed_for_host(self, pipeline: str, host: str) -> list[int]:
        """Ids of REQUESTED checkpoints this host should seal a batch for, oldest first: those
        waiting for this host, and those waiting for no host in particular."""
        sealed_here = sa.select(t.batches.c.checkpoint_id).where(t.batches.c.host == host)
        hosts = t.checkpoint_hosts.c
        expects_someone = sa.select(hosts.checkpoint_id)
        expects_this_host = sa.select(hosts.checkpoint_id).where(hosts.host == host)
        query = (
            sa.select(t.checkpoints.c.id)
            .where(
                t.checkpoints.c.pipeline == pipeline,
                t.checkpoints.c.state == CheckpointState.REQUESTED.value,
                t.checkpoints.c.id.not_in(sealed_here),
                sa.or_(
                    t.checkpoints.c.id.not_in(expects_someone),
                    t.checkpoints.c.id.in_(expects_this_host),
                ),
            )
            .order_by(t.checkpoints.c.id)
        )
        with self.transaction() as connection:
            return [int(row[0]) for row in connection.execute(query)]

    def batches(self, checkpoint_id: int) -> list[BatchRecord]:
        with self.transaction() as connection:
            rows = connection.execute(
                sa.select(t.batches)
                .where(t.batches.c.checkpoint_id == checkpoint_id)
                .order_by(t.batches.c.host)
            ).all()
        return [
            BatchRecord(
                checkpoint_id=row.checkpoint_id,
                host=row.host,
                staging_path=row.staging_path,
                line_count=row.line_count,
                byte_count=row.byte_count,
                part_count=row.part_count,
                checksum=row.checksum,
                manifest=json.loads(row.manifest),
                ranges=(),
                batch_id=row.id,
            )
            for row in rows
        ]

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
            CheckpointError: the checkpoint is not REQUESTED any more (sealed elsewhere).
        """
        now = utcnow()
        with self.transaction() as connection:
            state = connection.execute(
                sa.select(t.checkpoints.c.state).where(t.checkpoints.c.id == batch.checkpoint_id)
            ).scalar_one_or_none()
            recorded = connection.execute(
                sa.select(t.batches.c.id).where(
                    t.batches.c.checkpoint_id == batch.checkpoint_id,
                    t.batches.c.host == host,
                    t.batches.c.checksum == batch.checksum,
                )
            ).scalar_one_or_none()
            if recorded is not None and state != CheckpointState.COMMITTED.value:
                return int(recorded)  # a retry of a seal whose commit succeeded: idempotent
            if state != CheckpointState.REQUESTED.value:
                raise CheckpointError(
                    f"checkpoint {batch.checkpoint_id} is {state}, not requested: not sealing"
                )
            batch_id = connection.execute(
                t.batches.insert().values(
                    checkpoint_id=batch.checkpoint_id,
                    pipeline=pipeline,
                    host=host,
                    staging_path=batch.staging_path,
                    line_count=batch.line_count,
                    byte_count=batch.byte_count,
                    part_count=batch.part_count,
                    checksum=batch.checksum,
                    manifest=json.dumps(batch.manifest, sort_keys=True),
                    created_at=now,
                )
            ).inserted_primary_key
            assert batch_id is not None
            if batch.ranges:
                connection.execute(
                    t.batch_ranges.insert(),
                    [
                        {
                            "batch_id": batch_id[0],
                            "fingerprint": r.fingerprint,
                            "start_offset": r.start,
                            "end_offset": r.end,
                            "line_count": r.lines,
                        }
                        for r in batch.ranges
                    ],
                )
            self._save_files(connection, pipeline, host, files, now)
            if acker_trees is not None:
                self._replace_acker_trees(connection, pipeline, host, acker_trees, now)
            hosts = t.checkpoint_hosts.c
            mine = (hosts.checkpoint_id == batch.checkpoint_id) & (hosts.host == host)
            connection.execute(t.checkpoint_hosts.update().where(mine).values(sealed=1))
            self._seal_when_complete(connection, batch.checkpoint_id, now)
        return int(batch_id[0])

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> list[str]:
        """Stop waiting, for checkpoint ``checkpoint_id``, for hosts whose collector lease has
        lapsed (the host is down: its lines go into a later checkpoint when it is back), and
        seal the checkpoint if every remaining host has. Returns the hosts excused."""
        now = utcnow()
        hosts = t.checkpoint_hosts.c
        with self.transaction() as connection:
            pipeline = connection.execute(
                sa.select(t.checkpoints.c.pipeline).where(t.checkpoints.c.id == checkpoint_id)
            ).scalar_one_or_none()
            if pipeline is None:
                raise CheckpointError(f"checkpoint {checkpoint_id} does not exist")
            live = sa.select(t.leases.c.host).where(
                t.leases.c.pipeline == pipeline, t.leases.c.expires_at >= now
            )
            lapsed = (
                connection.execute(
                    sa.select(hosts.host).where(
                        hosts.checkpoint_id == checkpoint_id,
                        hosts.sealed == 0,
                        hosts.host.not_in(live),
                    )
                )
                .scalars()
                .all()
            )
            if lapsed:
                connection.execute(
                    t.checkpoint_hosts.delete().where(
                        hosts.checkpoint_id == checkpoint_id, hosts.host.in_(lapsed)
                    )
                )
                self._seal_when_complete(connection, checkpoint_id, now)
        return list(lapsed)

    @staticmethod
    def _seal_when_complete(connection: Connection, checkpoint_id: int, now: datetime) -> None:
        """Move a REQUESTED checkpoint with at least one batch and no host still owing one to
        SEALED."""
        hosts = t.checkpoint_hosts.c
        owing = connection.execute(
            sa.select(sa.func.count())
            .select_from(t.checkpoint_hosts)
            .where(hosts.checkpoint_id == checkpoint_id, hosts.sealed == 0)
        ).scalar_one()
        batches = connection.execute(
            sa.select(sa.func.count())
            .select_from(t.batches)
            .where(t.batches.c.checkpoint_id == checkpoint_id)
        ).scalar_one()
        if owing == 0 and batches > 0:
            connection.execute(
                t.checkpoints.update()
                .where(
                    t.checkpoints.c.id == checkpoint_id,
                    t.checkpoints.c.state == CheckpointState.REQUESTED.value,
                )
                .values(state=CheckpointState.SEALED.value, sealed_at=now)
            )

    def commit_checkpoint(self, checkpoint_id: int, landing: dict[str, Any]) -> CheckpointRecord:
        """Mark a SEALED checkpoint COMMITTED with the landing job's counts (idempotent)."""
        with self.transaction() as connection:
            state = connection.execute(
                sa.select(t.checkpoints.c.state).where(t.checkpoints.c.id == checkpoint_id)
            ).scalar_one_or_none()
            if state is None:
                raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
            if state not in (CheckpointState.SEALED.value, CheckpointState.COMMITTED.value):
                raise CheckpointError(
                    f"checkpoint {checkpoint_id} is {state}; only sealed "
                    "checkpoints can be committed"
                )
            connection.execute(
                t.checkpoints.update()
                .where(t.checkpoints.c.id == checkpoint_id)
                .values(
                    state=CheckpointState.COMMITTED.value,
                    committed_at=utcnow(),
                    landing=json.dumps(landing, sort_keys=True),
                )
            )
        return self.checkpoint(checkpoint_id)

    # -- files -------------------------------------------------------------------------------

    def files(self, pipeline: str, host: str) -> list[FileRecord]:
        query = (
            sa.select(t.files)
            .where(t.files.c.pipeline == pipeline, t.files.c.host == host)
            .order_by(t.files.c.id)
        )
        with self.transaction() as connection:
            rows = connection.execute(query).all()
        return [
            FileRecord(
                source=row.source,
                fingerprint=row.fingerprint,
                path=row.path,
                dev=row.dev,
                ino=row.ino,
                sig_size=row.sig_size,
                sig_crc=row.sig_crc,
                sealed_offset=row.sealed_offset,
                state=FileState(row.state),
                tail_digest=row.tail_digest,
            )
            for row in rows
        ]

    def _save_files(
        self,
        connection: Connection,
        pipeline: str,
        host: str,
        files: Iterable[FileRecord],
        now: datetime,
    ) -> None:
        known = {
            row.fingerprint: row.id
            for row in connection.execute(
                sa.select(t.files.c.id, t.files.c.fingerprint).where(
                    t.files.c.pipeline == pipeline, t.files.c.host == host
                )
            )
        }
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for record in files:
            values = {
                "source": record.source,
                "path": record.path,
                "dev": record.dev,
                "ino": record.ino,
                "sig_size": record.sig_size,
                "sig_crc": record.sig_crc,
                "sealed_offset": record.sealed_offset,
                "state": record.state.value,
                "tail_digest": record.tail_digest,
                "updated_at": now,
            }
            if record.fingerprint in known:
                updates.append({"row_id": known[record.fingerprint], **values})
            else:
                inserts.append(
                    {
                        "pipeline": pipeline,
                        "host": host,
                        "fingerprint": record.fingerprint,
                        "first_seen_at": now,
                        **values,
                    }
                )
        if inserts:
            connection.execute(t.files.insert(), inserts)
        if updates:
            connection.execute(
                t.files.update().where(t.files.c.id == sa.bindparam("row_id")), updates
            )

    # -- sink penalty/backoff state ------------------------------------------------------------

    def sink_states(self, pipeline: str, host: str) -> list[SinkStateRecord]:
        """The stored state of every sink of the pipeline's sink groups on ``host``."""
        c = t.sink_states.c
        with self.transaction() as connection:
            rows = connection.execute(
                sa.select(
                    c.sink_group,
                    c.sink,
                    c.consecutive_failures,
                    c.excluded_until,
                    c.last_failure_at,
                    c.last_error,
                ).where(c.pipeline == pipeline, c.host == host)
            ).all()
        return [SinkStateRecord(*row) for row in rows]

    def save_sink_states(self, pipeline: str, host: str, states: Iterable[SinkStateRecord]) -> None:
        """Upsert the given sink states in one transaction."""
        c = t.sink_states.c
        now = utcnow()
        with self.transaction() as connection:
            for state in states:
                key = (
                    (c.pipeline == pipeline)
                    & (c.host == host)
                    & (c.sink_group == state.sink_group)
                    & (c.sink == state.sink)
                )
                values = {
                    "consecutive_failures": state.consecutive_failures,
                    "excluded_until": state.excluded_until,
                    "last_failure_at": state.last_failure_at,
                    "last_error": state.last_error,
                    "updated_at": now,
                }
                updated = connection.execute(t.sink_states.update().where(key).values(**values))
                if not updated.rowcount:
                    connection.execute(
                        t.sink_states.insert().values(
                            pipeline=pipeline,
                            host=host,
                            sink_group=state.sink_group,
                            sink=state.sink,
                            **values,
                        )
                    )

    # -- acker trees ---------------------------------------------------------------------------

    def acker_trees(self, pipeline: str, host: str) -> list[AckerTreeRecord]:
        """The in-flight trees saved last for (pipeline, host)."""
        c = t.acker_trees.c
        with self.transaction() as connection:
            rows = connection.execute(
                sa.select(
                    c.tree_id,
                    c.value,
                    c.source,
                    c.fingerprint,
                    c.start_offset,
                    c.end_offset,
                    c.line_count,
                )
                .where(c.pipeline == pipeline, c.host == host)
                .order_by(c.fingerprint, c.start_offset)
            ).all()
        return [
            AckerTreeRecord(int(r[0], 16), int(r[1], 16), r[2], r[3], r[4], r[5], r[6])
            for r in rows
        ]

    def save_acker_trees(self, pipeline: str, host: str, trees: Iterable[AckerTreeRecord]) -> None:
        """Replace the saved in-flight trees of (pipeline, host) by ``trees``, in one
        transaction."""
        with self.transaction() as connection:
            self._replace_acker_trees(connection, pipeline, host, trees, utcnow())

    @staticmethod
    def _replace_acker_trees(
        connection: Connection,
        pipeline: str,
        host: str,
        trees: Iterable[AckerTreeRecord],
        now: datetime,
    ) -> None:
        c = t.acker_trees.c
        connection.execute(t.acker_trees.delete().where(c.pipeline == pipeline, c.host == host))
        rows = [
            {
                "pipeline": pipeline,
                "host": host,
                "tree_id": f"{tree.tree_id:016x}",
                "value": f"{tree.value:016x}",
                "source": tree.source,
                "fingerprint": tree.fingerprint,
                "start_offset": tree.start,
                "end_offset": tree.end,
                "line_count": tree.lines,
                "saved_at": now,
            }
            for tree in trees
        ]
        if rows:
            connection.execute(t.acker_trees.insert(), rows)

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
        now = utcnow()
        expires = now + timedelta(seconds=ttl)
        key = (t.leases.c.pipeline == pipeline) & (t.leases.c.host == host)
        with self.transaction() as connection:
            taken = connection.execute(
                t.leases.update()
                .where(key, (t.leases.c.holder == holder) | (t.leases.c.expires_at < now))
                .values(
                    holder=holder,
                    expires_at=expires,
                    acquired_at=sa.case(
                        (t.leases.c.holder == holder, t.leases.c.acquired_at), else_=now
                    ),
                )
            ).rowcount
            if taken:
                return True
            current = connection.execute(sa.select(t.leases.c.holder).where(key)).scalar()
            if current is not None:
                liveness = holder_liveness(current)
                if not liveness.is_dead:
                    return False
                taken = connection.execute(
                    t.leases.update()
                    .where(key, t.leases.c.holder == current)
                    .values(holder=holder, expires_at=expires, acquired_at=now)
                ).rowcount
                if taken:
                    log.warning(
                        "lease of pipeline %s on %s taken over from %s: %s",
                        pipeline,
                        host,
                        current,
                        liveness.value,
                    )
                return bool(taken)
            try:
                with connection.begin_nested():
                    connection.execute(
                        t.leases.insert().values(
                            pipeline=pipeline,
                            host=host,
                            holder=holder,
                            acquired_at=now,
                            expires_at=expires,
                        )
                    )
            except IntegrityError:
                return False
        return True

    def release_lease(self, pipeline: str, host: str, holder: str) -> None:
        with self.transaction() as connection:
            connection.execute(
                t.leases.delete().where(
                    t.leases.c.pipeline == pipeline,
                    t.leases.c.host == host,
                    t.leases.c.holder == holder,
                )
            )

    def lease_holder(self, pipeline: str, host: str) -> str | None:
        """The holder of an unexpired lease on (pipeline, host), if any. It may be a collector
        killed since, whose lease the next one takes over (see :meth:`acquire_lease`)."""
        with self.transaction() as connection:
            row = connection.execute(
                sa.select(t.leases.c.holder, t.leases.c.expires_at).where(
                    t.leases.c.pipeline == pipeline, t.leases.c.host == host
                )
            ).first()
        if row is None:
            return None
        expires = _aware(row.expires_at)
        return str(row.holder) if expires and expires > utcnow() else None


def _checkpoint(row: Any) -> CheckpointRecord:
    return CheckpointRecord(
        checkpoint_id=row.id,
        pipeline=row.pipeline,
        state=CheckpointState(row.state),
        run_id=row.run_id,
        requested_at=_aware(row.requested_at) or utcnow(),
        sealed_at=_aware(row.sealed_at),
        committed_at=_aware(row.committed_at),
        landing=json.loads(row.landing) if row.landing else {},
        error=row.error,
    )


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()


def _safe(url: str) -> str:
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"
