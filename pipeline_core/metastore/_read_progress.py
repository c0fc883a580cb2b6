"""ReadProgressRepository: samples of what each collector read, and of what it had not read."""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._records import ReadProgressRecord
from pipeline_core.metastore._values import as_utc, record_of_row, row_of_record

READ_PROGRESS_RETENTION = timedelta(days=7)
"""How long samples are kept: each new sample of a host removes that host's older ones."""


class ReadProgressRepository:
    """The rows of ``sluice_read_progress`` on one connection (the caller's transaction): a
    collector adds one per pipeline every ``collector.progress_sample_s`` and at each seal."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def add(self, pipeline: str, sample: ReadProgressRecord) -> None:
        self._connection.execute(
            t.read_progress.insert().values(**row_of_record(sample, pipeline=pipeline))
        )

    def prune(self, pipeline: str, host: str, before: datetime) -> int:
        """Remove the samples of (pipeline, host) taken before ``before``; how many."""
        c = t.read_progress.c
        removed = self._connection.execute(
            t.read_progress.delete().where(
                c.pipeline == pipeline, c.host == host, c.sampled_at < before
            )
        )
        return int(removed.rowcount or 0)

    def since(self, pipeline: str, since: datetime) -> list[ReadProgressRecord] | None:
        """The samples of ``pipeline`` taken at or after ``since``, every host's, oldest first;
        None on a database whose schema predates the table (no collector has migrated it)."""
        if not sa.inspect(self._connection).has_table(t.read_progress.name):
            return None
        c = t.read_progress.c
        query = (
            sa.select(c.host, c.sampled_at, c.elapsed_s, c.bytes_read, c.lines_read, c.unread_bytes)
            .where(c.pipeline == pipeline, c.sampled_at >= since)
            .order_by(c.sampled_at, c.host, c.id)
        )
        return [
            record_of_row(ReadProgressRecord, row, sampled_at=as_utc(row.sampled_at))
            for row in self._connection.execute(query)
        ]
