"""MetastoreView: reading an existing metastore without changing it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from pipeline_core._metastore_pooling import MetastorePooling, apply_pooling
from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import (
    _schema as t,
)
from pipeline_core.metastore._records import (
    AckerTreeTotals,
    BatchRecord,
    CheckpointRecord,
    LeaseRecord,
    ReadProgressRecord,
    SinkStateRecord,
)
from pipeline_core.metastore._repositories import Repositories
from pipeline_core.metastore._values import redacted_url
from pipeline_core.source import FileRecord

if TYPE_CHECKING:
    from pipeline_core.metastore._store import Metastore

CONNECT_TIMEOUT_S = 5
"""How long opening a view waits for the database."""


class MetastoreView:
    """What a pipeline's rows hold, read through the repositories on one connection, with
    SELECTs only. Made by :func:`open_view` or :func:`view_of`, valid inside its ``with``
    block."""

    def __init__(self, repositories: Repositories) -> None:
        self._r = repositories

    def files(self, pipeline: str, host: str | None = None) -> dict[str, list[FileRecord]]:
        """The tracked files of every host (only ``host``'s when given), per host."""
        return self._r.files.by_host(pipeline, host)

    def newest_checkpoints(self, pipeline: str, limit: int) -> list[CheckpointRecord]:
        """The newest ``limit`` checkpoints, newest first."""
        return self._r.checkpoints.newest(pipeline, limit=limit)[::-1]

    def checkpoint_of_run(self, pipeline: str, run_id: str) -> CheckpointRecord | None:
        return self._r.checkpoints.of_run(pipeline, run_id)

    def batches(self, checkpoint_ids: Sequence[int]) -> list[BatchRecord]:
        """The batches of the checkpoints, by checkpoint then host."""
        return self._r.batches.of_checkpoints(checkpoint_ids)

    def sink_states(self, pipeline: str) -> dict[str, list[SinkStateRecord]]:
        """The stored sink states of every host, per host."""
        return self._r.sink_states.by_host(pipeline)

    def leases(self, pipeline: str) -> list[LeaseRecord]:
        return self._r.leases.of_pipeline(pipeline)

    def lease_holder(self, pipeline: str, host: str) -> str | None:
        """The holder of an unexpired lease on (pipeline, host), if any."""
        return self._r.leases.holder(pipeline, host)

    def acker_tree_totals(self, pipeline: str) -> list[AckerTreeTotals] | None:
        """Per host, what the saved acker trees hold; None on a schema without them."""
        return self._r.acker_trees.totals(pipeline)

    def read_progress(self, pipeline: str, since: datetime) -> list[ReadProgressRecord] | None:
        """Every host's read progress samples taken since ``since``, oldest first; None on a
        schema without them."""
        return self._r.read_progress.since(pipeline, since)


@contextmanager
def open_view(
    url: str, pooling: MetastorePooling = MetastorePooling.NONE
) -> Iterator[MetastoreView | None]:
    """A read-only view of the metastore at ``url``, or None when there is none yet.

    Nothing is ever created or migrated: a missing SQLite file, or a database without
    Sluice's tables, is "no metastore yet". The view holds one connection, outside any pool,
    closed when the block ends; on PostgreSQL it reads one consistent snapshot (one
    transaction, which a transaction-mode pooler keeps on one server connection: ``pooling``,
    ``metastore.pooling``).

    Raises:
        MetastoreError: the database cannot be reached or read (inside the block too).
    """
    engine_url = sa.make_url(url)
    sqlite = engine_url.get_backend_name() == "sqlite"
    database = engine_url.database
    if sqlite and database and database != ":memory:" and not Path(database).exists():
        yield None
        return
    timeout = {"timeout": CONNECT_TIMEOUT_S} if sqlite else {"connect_timeout": CONNECT_TIMEOUT_S}
    engine = apply_pooling(
        sa.create_engine(engine_url, poolclass=NullPool, connect_args=timeout), pooling
    )
    try:
        with engine.connect() as connection:
            if not sqlite:
                connection.execution_options(isolation_level="REPEATABLE READ")
            if not sa.inspect(connection).has_table(t.checkpoints.name):
                yield None
            else:
                yield MetastoreView(Repositories.on(connection))
    except SQLAlchemyError as exc:
        raise MetastoreError(f"cannot read the metastore {redacted_url(url)}: {exc}") from exc
    finally:
        engine.dispose()


@contextmanager
def view_of(metastore: Metastore) -> Iterator[MetastoreView]:
    """An open metastore read through a view, in one transaction for the block (what
    ``pipeline_core.state`` is given by a caller that holds the metastore already).

    Raises:
        MetastoreError: the database cannot be reached or read.
    """
    with metastore.transaction() as connection:
        yield MetastoreView(Repositories.on(connection))
