"""AckerTreeRepository: the acker's in-flight trees of a pipeline on a host."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._records import AckerTreeRecord, AckerTreeTotals
from pipeline_core.metastore._values import as_utc


class AckerTreeRepository:
    """The rows of ``sluice_acker_trees`` on one connection (the caller's transaction). A
    host's trees are replaced as a whole (in the seal transaction and every time slice); ids
    and values, unsigned 64-bit integers, are stored as 16 hex digits."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def of_host(self, pipeline: str, host: str) -> list[AckerTreeRecord]:
        """The trees saved last for (pipeline, host), by file and offset."""
        c = t.acker_trees.c
        query = (
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
        )
        return [
            AckerTreeRecord(int(r[0], 16), int(r[1], 16), r[2], r[3], r[4], r[5], r[6])
            for r in self._connection.execute(query)
        ]

    def replace(
        self, pipeline: str, host: str, trees: Iterable[AckerTreeRecord], now: datetime
    ) -> None:
        """Replace the saved trees of (pipeline, host) by ``trees``."""
        c = t.acker_trees.c
        self._connection.execute(
            t.acker_trees.delete().where(c.pipeline == pipeline, c.host == host)
        )
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
            self._connection.execute(t.acker_trees.insert(), rows)

    def totals(self, pipeline: str) -> list[AckerTreeTotals] | None:
        """What the saved trees of ``pipeline`` hold, per host; None on a database whose
        schema predates the table (a metastore no collector has migrated yet)."""
        if not sa.inspect(self._connection).has_table(t.acker_trees.name):
            return None
        c = t.acker_trees.c
        query = (
            sa.select(
                c.host,
                sa.func.count().label("trees"),
                sa.func.sum(c.line_count).label("lines"),
                sa.func.sum(c.end_offset - c.start_offset).label("bytes"),
                sa.func.max(c.saved_at).label("saved_at"),
            )
            .where(c.pipeline == pipeline)
            .group_by(c.host)
            .order_by(c.host)
        )
        return [
            AckerTreeTotals(
                host=r.host,
                trees=int(r.trees),
                lines=int(r.lines or 0),
                bytes=int(r.bytes or 0),
                saved_at=as_utc(r.saved_at),
            )
            for r in self._connection.execute(query)
        ]
