"""CheckpointRepository: checkpoints and the hosts each one waits for."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core.errors import CheckpointError
from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._lifecycle import CheckpointState
from pipeline_core.metastore._records import CheckpointRecord
from pipeline_core.metastore._values import as_utc, maybe_utc

_LANDABLE = [state.value for state in CheckpointState if state.landable]

REQUESTS_CHANNEL = "sluice_checkpoint_requests"
"""The PostgreSQL ``NOTIFY`` channel of checkpoint requests (the payload is the pipeline)."""


class CheckpointRepository:
    """The rows of ``sluice_checkpoints`` and ``sluice_checkpoint_hosts``, read and written on
    one connection (the caller's transaction).

    Every change of a checkpoint's state goes through :meth:`move`, which checks it against
    the lifecycle (:data:`~pipeline_core.metastore._lifecycle.TRANSITIONS`).
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    # -- reading -------------------------------------------------------------------------------

    def get(self, checkpoint_id: int) -> CheckpointRecord | None:
        return self._first(sa.select(t.checkpoints).where(t.checkpoints.c.id == checkpoint_id))

    def of_run(self, pipeline: str, run_id: str) -> CheckpointRecord | None:
        c = t.checkpoints.c
        return self._first(
            sa.select(t.checkpoints).where(c.pipeline == pipeline, c.run_id == run_id)
        )

    def newest(
        self, pipeline: str, states: Iterable[CheckpointState] | None = None, limit: int = 1000
    ) -> list[CheckpointRecord]:
        """The newest ``limit`` checkpoints of ``pipeline`` (in ``states``), oldest first."""
        c = t.checkpoints.c
        query = sa.select(t.checkpoints).where(c.pipeline == pipeline)
        if states is not None:
            query = query.where(c.state.in_([state.value for state in states]))
        rows = self._connection.execute(query.order_by(c.id.desc()).limit(limit)).all()
        return [_record(row) for row in reversed(rows)]

    def landable_in_interval(
        self, pipeline: str, start: datetime, end: datetime
    ) -> list[CheckpointRecord]:
        """The landable checkpoints of ``[start, end)``, oldest first: those whose recorded data
        interval starts in it, and those recorded without one that were sealed in it. A
        zero-width interval holds the checkpoints recorded for exactly that instant."""
        c = t.checkpoints.c
        start, end = as_utc(start), as_utc(end)
        if start == end:
            recorded = c.data_interval_start == start
        else:
            recorded = (c.data_interval_start >= start) & (c.data_interval_start < end)
        unrecorded = c.data_interval_start.is_(None) & (c.sealed_at >= start) & (c.sealed_at < end)
        query = (
            sa.select(t.checkpoints)
            .where(c.pipeline == pipeline, c.state.in_(_LANDABLE), recorded | unrecorded)
            .order_by(c.id)
        )
        return [_record(row) for row in self._connection.execute(query)]

    def unsealed_for_host(self, pipeline: str, host: str) -> list[int]:
        """Ids of REQUESTED checkpoints ``host`` should seal a batch for, oldest first: those
        waiting for this host, and those waiting for no host in particular."""
        return self.unsealed_for_hosts([(pipeline, host)])[(pipeline, host)]

    def unsealed_for_hosts(
        self, pipelines: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], list[int]]:
        """:meth:`unsealed_for_host` of every ``(pipeline, host)``, in one query per host (a
        collector serving a hundred pipelines asks every second)."""
        by_host: dict[str, list[str]] = {}
        for pipeline, host in pipelines:
            by_host.setdefault(host, []).append(pipeline)
        found: dict[tuple[str, str], list[int]] = {
            (pipeline, host): [] for host, names in by_host.items() for pipeline in names
        }
        c, hosts = t.checkpoints.c, t.checkpoint_hosts.c
        for host, names in by_host.items():
            sealed_here = sa.select(t.batches.c.checkpoint_id).where(t.batches.c.host == host)
            expects_someone = sa.select(hosts.checkpoint_id)
            expects_this_host = sa.select(hosts.checkpoint_id).where(hosts.host == host)
            query = (
                sa.select(c.pipeline, c.id)
                .where(
                    c.pipeline.in_(names),
                    c.state == CheckpointState.REQUESTED.value,
                    c.id.not_in(sealed_here),
                    sa.or_(c.id.not_in(expects_someone), c.id.in_(expects_this_host)),
                )
                .order_by(c.id)
            )
            for pipeline, checkpoint_id in self._connection.execute(query):
                found[(pipeline, host)].append(int(checkpoint_id))
        return found

    def requested_above(self, floor: int) -> tuple[int | None, list[int]]:
        """The newest checkpoint id (None: none above ``floor``), and the ids above ``floor``
        of the REQUESTED checkpoints, in one query over a range of the primary key (what
        ``QueryingRequestProbe`` reads twice a second)."""
        return newest_and_requested(self._connection.execute(requested_above_query(floor)).all())

    def state(self, checkpoint_id: int, *, lock: bool = False) -> CheckpointState | None:
        """The checkpoint's state; None when there is no such checkpoint.

        ``lock``: hold the checkpoint's row until the transaction ends (``SELECT ... FOR
        UPDATE``; SQLite serializes writers anyway), so that transactions deciding from its
        hosts whether it is complete run one after the other and each sees the others' hosts.
        """
        query = sa.select(t.checkpoints.c.state).where(t.checkpoints.c.id == checkpoint_id)
        if lock:
            query = query.with_for_update()
        value = self._connection.execute(query).scalar_one_or_none()
        return None if value is None else CheckpointState(value)

    def hosts_owing(self, checkpoint_id: int) -> int:
        """How many of the hosts the checkpoint waits for have not sealed their batch yet."""
        hosts = t.checkpoint_hosts.c
        return int(
            self._connection.execute(
                sa.select(sa.func.count())
                .select_from(t.checkpoint_hosts)
                .where(hosts.checkpoint_id == checkpoint_id, hosts.sealed == 0)
            ).scalar_one()
        )

    def hosts_lapsed(self, checkpoint_id: int, live_hosts: Sequence[str]) -> list[str]:
        """The hosts the checkpoint still waits for that are not in ``live_hosts``."""
        hosts = t.checkpoint_hosts.c
        query = sa.select(hosts.host).where(
            hosts.checkpoint_id == checkpoint_id, hosts.sealed == 0, hosts.host.not_in(live_hosts)
        )
        return list(self._connection.execute(query).scalars())

    # -- writing -------------------------------------------------------------------------------

    def insert(
        self,
        pipeline: str,
        run_id: str | None,
        data_interval: tuple[datetime, datetime] | None,
        hosts: Iterable[str],
        now: datetime,
    ) -> int:
        """Insert a REQUESTED checkpoint waiting for ``hosts``; returns its id. On PostgreSQL,
        collectors listening for requests hear of it when the transaction commits."""
        start, end = data_interval if data_interval else (None, None)
        inserted = self._connection.execute(
            t.checkpoints.insert().values(
                pipeline=pipeline,
                state=CheckpointState.REQUESTED.value,
                run_id=run_id,
                data_interval_start=start,
                data_interval_end=end,
                requested_at=now,
            )
        ).inserted_primary_key
        assert inserted is not None
        checkpoint_id = int(inserted[0])
        rows = [{"checkpoint_id": checkpoint_id, "host": host, "sealed": 0} for host in hosts]
        if rows:
            self._connection.execute(t.checkpoint_hosts.insert(), rows)
        if self._connection.dialect.name == "postgresql":  # delivered at commit
            self._connection.execute(sa.select(sa.func.pg_notify(REQUESTS_CHANNEL, pipeline)))
        return checkpoint_id

    def move(self, checkpoint_id: int, target: CheckpointState, **values: Any) -> None:
        """Move the checkpoint to ``target``, setting ``values`` (other columns) with it.

        Raises:
            CheckpointError: there is no such checkpoint.
            IllegalTransitionError: the lifecycle does not allow the move from its state.
        """
        state = self.state(checkpoint_id)
        if state is None:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
        state.check_transition(checkpoint_id, target)
        c = t.checkpoints.c
        moved = self._connection.execute(
            t.checkpoints.update()
            .where(c.id == checkpoint_id, c.state == state.value)
            .values(state=target.value, **values)
        ).rowcount
        if not moved:  # moved by someone else meanwhile: check again from its new state
            self.move(checkpoint_id, target, **values)

    def host_sealed(self, checkpoint_id: int, host: str) -> None:
        """Record that ``host`` sealed its batch of the checkpoint (if it was waited for)."""
        hosts = t.checkpoint_hosts.c
        self._connection.execute(
            t.checkpoint_hosts.update()
            .where(hosts.checkpoint_id == checkpoint_id, hosts.host == host)
            .values(sealed=1)
        )

    def excuse_hosts(self, checkpoint_id: int, excused: Sequence[str]) -> None:
        """Stop waiting for ``excused`` hosts."""
        hosts = t.checkpoint_hosts.c
        self._connection.execute(
            t.checkpoint_hosts.delete().where(
                hosts.checkpoint_id == checkpoint_id, hosts.host.in_(excused)
            )
        )

    # -- retention -----------------------------------------------------------------------------

    def committed_before(self, pipeline: str, before: datetime, limit: int) -> list[int]:
        """Ids of up to ``limit`` of ``pipeline``'s checkpoints committed before ``before``,
        oldest first."""
        c = t.checkpoints.c
        query = (
            sa.select(c.id)
            .where(
                c.pipeline == pipeline,
                c.state == CheckpointState.COMMITTED.value,
                c.committed_at < before,
            )
            .order_by(c.id)
            .limit(limit)
        )
        return [int(row.id) for row in self._connection.execute(query)]

    def delete(self, checkpoint_ids: Sequence[int]) -> None:
        """Delete the checkpoints and their host rows (their batches first: BatchRepository)."""
        hosts = t.checkpoint_hosts.c
        self._connection.execute(
            t.checkpoint_hosts.delete().where(hosts.checkpoint_id.in_(checkpoint_ids))
        )
        self._connection.execute(
            t.checkpoints.delete().where(t.checkpoints.c.id.in_(checkpoint_ids))
        )

    def _first(self, query: sa.Select[Any]) -> CheckpointRecord | None:
        row = self._connection.execute(query).first()
        return None if row is None else _record(row)


def _record(row: Any) -> CheckpointRecord:
    start, end = maybe_utc(row.data_interval_start), maybe_utc(row.data_interval_end)
    return CheckpointRecord(
        checkpoint_id=row.id,
        pipeline=row.pipeline,
        state=CheckpointState(row.state),
        run_id=row.run_id,
        requested_at=as_utc(row.requested_at),
        sealed_at=maybe_utc(row.sealed_at),
        committed_at=maybe_utc(row.committed_at),
        landing=json.loads(row.landing) if row.landing else {},
        error=row.error,
        data_interval=(start, end) if start is not None and end is not None else None,
    )


def requested_above_query(floor: int) -> sa.Select[tuple[int, str]]:
    """:meth:`CheckpointRepository.requested_above`'s query (``id``, ``state``), also run by
    the SQLite request probe on a ``sqlite3`` connection of its own."""
    c = t.checkpoints.c
    newest = sa.select(sa.func.max(c.id)).scalar_subquery()
    return sa.select(c.id, c.state).where(
        c.id > floor, sa.or_(c.state == CheckpointState.REQUESTED.value, c.id == newest)
    )


def newest_and_requested(rows: Iterable[Sequence[Any]]) -> tuple[int | None, list[int]]:
    """From :func:`requested_above_query`'s rows: the newest id (None: no row) and the
    REQUESTED ids."""
    rows = list(rows)
    requested = [int(row[0]) for row in rows if row[1] == CheckpointState.REQUESTED.value]
    return max((int(row[0]) for row in rows), default=None), requested
