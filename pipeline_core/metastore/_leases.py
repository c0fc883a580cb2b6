"""LeaseRepository: which collector process reads a pipeline's files on a host, until when."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._lease_holder import holder_liveness
from pipeline_core.metastore._records import LeaseRecord
from pipeline_core.metastore._values import as_utc, database_now

log = logging.getLogger(__name__)


class LeaseRepository:
    """The rows of ``sluice_leases`` on one connection (the caller's transaction).

    Leases are measured by the database's clock (:func:`database_now`), read once per
    repository (one transaction), never by the clock of the host asking: hosts whose clocks
    disagree, or one whose clock is stepped back, agree on which leases are live.
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._now: datetime | None = None

    def now(self) -> datetime:
        """The database's clock, as this transaction's lease decisions take it."""
        if self._now is None:
            self._now = database_now(self._connection)
        return self._now

    def renew(self, pipelines: Sequence[str], host: str, holder: str, ttl: float) -> int:
        """Extend by ``ttl`` seconds from now, in one statement, the leases on ``pipelines``
        of ``host`` that ``holder`` holds; returns how many it held (the others: see
        :meth:`acquire`)."""
        now = self.now()
        c = t.leases.c
        renewed = self._connection.execute(
            t.leases.update()
            .where(c.host == host, c.holder == holder, c.pipeline.in_(pipelines))
            .values(expires_at=now + timedelta(seconds=ttl))
        ).rowcount
        return int(renewed)

    def acquire(self, pipeline: str, host: str, holder: str, ttl: float) -> bool:
        """Take or renew the lease on (pipeline, host) for ``ttl`` seconds from now; see
        :meth:`pipeline_core.metastore.Metastore.acquire_lease` for when it is granted."""
        now = self.now()
        expires = now + timedelta(seconds=ttl)
        c = t.leases.c
        key = (c.pipeline == pipeline) & (c.host == host)
        taken = self._connection.execute(
            t.leases.update()
            .where(key, (c.holder == holder) | (c.expires_at < now))
            .values(
                holder=holder,
                expires_at=expires,
                acquired_at=sa.case((c.holder == holder, c.acquired_at), else_=now),
            )
        ).rowcount
        if taken:
            return True
        current = self._connection.execute(sa.select(c.holder).where(key)).scalar()
        if current is not None:
            liveness = holder_liveness(current)
            if not liveness.is_dead:
                return False
            taken = self._connection.execute(
                t.leases.update()
                .where(key, c.holder == current)
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
            with self._connection.begin_nested():
                self._connection.execute(
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

    def release(self, pipeline: str, host: str, holder: str) -> None:
        """Free the lease if ``holder`` holds it."""
        c = t.leases.c
        self._connection.execute(
            t.leases.delete().where(c.pipeline == pipeline, c.host == host, c.holder == holder)
        )

    def holder(self, pipeline: str, host: str) -> str | None:
        """The holder of the lease on (pipeline, host) if it has not expired."""
        c = t.leases.c
        row = self._connection.execute(
            sa.select(c.holder, c.expires_at).where(c.pipeline == pipeline, c.host == host)
        ).first()
        if row is None:
            return None
        return str(row.holder) if as_utc(row.expires_at) > self.now() else None

    def live_hosts(self, pipeline: str) -> list[str]:
        """The hosts whose lease on ``pipeline`` has not expired."""
        c = t.leases.c
        query = sa.select(c.host).where(c.pipeline == pipeline, c.expires_at >= self.now())
        return list(self._connection.execute(query).scalars())

    def of_pipeline(self, pipeline: str) -> list[LeaseRecord]:
        """Every lease on ``pipeline``, expired or not, by host."""
        c = t.leases.c
        query = sa.select(t.leases).where(c.pipeline == pipeline).order_by(c.host)
        now = self.now()
        return [
            LeaseRecord(
                host=row.host,
                holder=row.holder,
                acquired_at=as_utc(row.acquired_at),
                expires_at=as_utc(row.expires_at),
                live=as_utc(row.expires_at) > now,
            )
            for row in self._connection.execute(query)
        ]
