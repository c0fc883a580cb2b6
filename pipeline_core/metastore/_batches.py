"""BatchRepository: each host's sealed batch of a checkpoint, with the byte ranges it holds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import Connection

from pipeline_core.metastore import _schema as t
from pipeline_core.metastore._records import BatchRecord
from pipeline_core.metastore._values import record_of_row, row_of_record


class BatchRepository:
    """The rows of ``sluice_batches`` and ``sluice_batch_ranges`` on one connection (the
    caller's transaction). A batch is written once, in the seal transaction, and never
    changed; it is deleted with its checkpoint (``CheckpointTransitions.forget_checkpoints``)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def of_checkpoints(self, checkpoint_ids: Sequence[int]) -> list[BatchRecord]:
        """The batches of the checkpoints, by checkpoint then host (without their ranges)."""
        c = t.batches.c
        query = (
            sa.select(t.batches)
            .where(c.checkpoint_id.in_(checkpoint_ids))
            .order_by(c.checkpoint_id, c.host)
        )
        return [
            record_of_row(BatchRecord, row, ranges=(), batch_id=row.id)
            for row in self._connection.execute(query)
        ]

    def recorded(self, checkpoint_id: int, host: str, checksum: str) -> int | None:
        """The id of ``host``'s batch of the checkpoint with that checksum, if recorded."""
        c = t.batches.c
        found = self._connection.execute(
            sa.select(c.id).where(
                c.checkpoint_id == checkpoint_id, c.host == host, c.checksum == checksum
            )
        ).scalar_one_or_none()
        return None if found is None else int(found)

    def count(self, checkpoint_id: int) -> int:
        return int(
            self._connection.execute(
                sa.select(sa.func.count())
                .select_from(t.batches)
                .where(t.batches.c.checkpoint_id == checkpoint_id)
            ).scalar_one()
        )

    def insert(self, pipeline: str, host: str, batch: BatchRecord, now: datetime) -> int:
        """Record ``host``'s batch and its byte ranges; returns the batch id."""
        values = row_of_record(
            batch,
            without=["ranges", "batch_id"],
            pipeline=pipeline,
            host=host,
            created_at=now,
        )
        inserted = self._connection.execute(t.batches.insert().values(values)).inserted_primary_key
        assert inserted is not None
        batch_id = int(inserted[0])
        if batch.ranges:
            self._connection.execute(
                t.batch_ranges.insert(),
                [
                    {
                        "batch_id": batch_id,
                        "fingerprint": r.fingerprint,
                        "start_offset": r.start,
                        "end_offset": r.end,
                        "line_count": r.lines,
                    }
                    for r in batch.ranges
                ],
            )
        return batch_id

    def delete_of_checkpoints(self, checkpoint_ids: Sequence[int]) -> None:
        """Delete the batches of the checkpoints and their byte ranges."""
        of_checkpoints = sa.select(t.batches.c.id).where(
            t.batches.c.checkpoint_id.in_(checkpoint_ids)
        )
        self._connection.execute(
            t.batch_ranges.delete().where(t.batch_ranges.c.batch_id.in_(of_checkpoints))
        )
        self._connection.execute(
            t.batches.delete().where(t.batches.c.checkpoint_id.in_(checkpoint_ids))
        )
