"""SinkStateRepository: the penalty/backoff state of each sink of a pipeline's sink groups."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._records import SinkStateRecord


class SinkStateRepository:
    """The rows of ``sluice_sink_states`` on one connection (the caller's transaction), one
    per (pipeline, host, sink group, sink). Times are epoch seconds."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def of_host(self, pipeline: str, host: str) -> list[SinkStateRecord]:
        """The stored state of every sink of the pipeline's sink groups on ``host``."""
        return self.by_host(pipeline, host).get(host, [])

    def by_host(self, pipeline: str, host: str | None = None) -> dict[str, list[SinkStateRecord]]:
        """The stored sink states of ``pipeline`` per host (only ``host``'s when given), by
        host, sink group and sink."""
        c = t.sink_states.c
        query = sa.select(
            c.host,
            c.sink_group,
            c.sink,
            c.consecutive_failures,
            c.excluded_until,
            c.last_failure_at,
            c.last_error,
        ).where(c.pipeline == pipeline)
        if host is not None:
            query = query.where(c.host == host)
        found: dict[str, list[SinkStateRecord]] = {}
        for row in self._connection.execute(query.order_by(c.host, c.sink_group, c.sink)):
            found.setdefault(row[0], []).append(SinkStateRecord(*row[1:]))
        return found

    def save(
        self, pipeline: str, host: str, states: Iterable[SinkStateRecord], now: datetime
    ) -> None:
        """Upsert the given sink states."""
        c = t.sink_states.c
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
            updated = self._connection.execute(t.sink_states.update().where(key).values(**values))
            if not updated.rowcount:
                self._connection.execute(
                    t.sink_states.insert().values(
                        pipeline=pipeline,
                        host=host,
                        sink_group=state.sink_group,
                        sink=state.sink,
                        **values,
                    )
                )
