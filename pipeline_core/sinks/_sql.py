"""``SqlSink``: insert lines into a SQL table, idempotently on their event id."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from pipeline_core.config._sinks import SQL_DIALECTS
from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks._batch import DeliveryBatch, skip_long_lines
from pipeline_core.sinks._retry import RetryPolicy, call_with_retry
from pipeline_core.sinks._sink import BatchSink

log = logging.getLogger(__name__)

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
"""PostgreSQL's serialization failure and deadlock: the transaction can simply run again."""


def events_table(name: str, metadata: sa.MetaData | None = None) -> sa.Table:
    """The table a :class:`SqlSink` writes: one row per line, keyed by its event id."""
    return sa.Table(
        name,
        metadata or sa.MetaData(),
        sa.Column("event_id", sa.String(128), primary_key=True),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("file_fingerprint", sa.String(64), nullable=False),
        sa.Column("byte_offset", sa.BigInteger, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )


class SqlSink(BatchSink):
    """Inserts each line of a batch as a row of ``table`` (created if missing) through
    SQLAlchemy Core, with ``INSERT ... ON CONFLICT (event_id) DO NOTHING``: delivering a batch
    again adds no row, so the table holds each line once although delivery is at least once.

    A batch is one transaction, inserted ``chunk_rows`` rows per ``executemany``. A transaction
    that fails with a lost or invalidated connection, an ``OperationalError`` (SQLite's
    "database is locked" among them), a deadlock or a serialization failure (SQLSTATE 40P01,
    40001) is run again through ``retry``; when the attempts are exhausted, or on any other
    database error, ``deliver`` raises ``EventDeliveryException`` chained to the cause.

    ``message`` is the line as text: invalid UTF-8 is replaced by U+FFFD, and so is every NUL
    character (PostgreSQL ``text`` cannot hold ``\\x00``; SQLite gets the same text so that both
    databases hold the same rows). ``received_at`` is the time the batch was inserted (UTC).

    A line longer than ``max_line_bytes`` is not inserted: the collector holds only its first
    bytes, and the table has no column to tell such a row from a whole line. It is counted in
    ``skipped_long_lines`` and logged; the lake keeps it as a ``line_too_long`` reject under
    the same event id.

    Only PostgreSQL and SQLite are supported: ``start()`` raises ``ValueError`` for any other
    dialect. The table is created on the first delivery, so a database that is down at start
    is a delivery failure like any other.
    """

    def __init__(
        self,
        name: str,
        url: str,
        *,
        table: str = "sluice_events",
        chunk_rows: int = 1000,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(name)
        if chunk_rows < 1:
            raise ValueError("chunk_rows must be positive")
        self.url = url
        self.table = events_table(table)
        self.chunk_rows = chunk_rows
        self.retry = retry or RetryPolicy()
        self._engine: Engine | None = None
        self._table_ready = False
        self.skipped_long_lines = 0
        """Over-long lines of delivered batches, not inserted."""

    def start(self) -> None:
        url = sa.make_url(self.url)
        backend = url.get_backend_name()
        if backend not in SQL_DIALECTS:
            raise ValueError(
                f"sql sink {self.name!r}: dialect {backend!r} is not supported "
                f"(supported: {', '.join(SQL_DIALECTS)})"
            )
        if backend == "sqlite" and url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        self._engine = sa.create_engine(url, pool_pre_ping=True)
        self._table_ready = False

    def stop(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def deliver(self, batch: DeliveryBatch) -> None:
        if self._engine is None:
            self.start()
        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            attempts += 1
            self._insert(batch)

        try:
            call_with_retry(
                attempt,
                is_retryable=is_retryable_db_error,
                policy=self.retry,
                what=f"sql sink {self.name!r}: insert into {self.table.name}",
            )
        except sa.exc.SQLAlchemyError as exc:
            tries = "attempt" if attempts == 1 else "attempts"
            raise EventDeliveryException(
                f"sql sink {self.name!r}: inserting {batch.lines} lines into "
                f"{self.table.name} failed after {attempts} {tries}: {exc}"
            ) from exc
        self.skipped_long_lines += skip_long_lines(
            batch, log, f"sql sink {self.name!r}", "inserted"
        )

    def _insert(self, batch: DeliveryBatch) -> None:
        engine = self._engine
        assert engine is not None
        if not self._table_ready:
            with engine.begin() as connection:
                connection.execute(sa.schema.CreateTable(self.table, if_not_exists=True))
            self._table_ready = True
        statement = _insert_ignoring_duplicates(engine.dialect.name, self.table)
        with engine.begin() as connection:
            for rows in self._row_chunks(batch, datetime.now(timezone.utc)):
                connection.execute(statement, rows)

    def _row_chunks(
        self, batch: DeliveryBatch, received_at: datetime
    ) -> Iterator[list[dict[str, Any]]]:
        rows: list[dict[str, Any]] = []
        for event in batch.events():
            if event.truncated:
                continue
            rows.append(
                {
                    "event_id": event.event_id,
                    "source": event.source,
                    "file_fingerprint": event.fingerprint,
                    "byte_offset": event.byte_offset,
                    "message": event.text().replace("\x00", "\ufffd"),
                    "received_at": received_at,
                }
            )
            if len(rows) >= self.chunk_rows:
                yield rows
                rows = []
        if rows:
            yield rows


def _insert_ignoring_duplicates(dialect: str, table: sa.Table) -> sa.Insert:
    if dialect == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=["event_id"])
    if dialect == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=["event_id"])
    raise ValueError(f"dialect {dialect!r} is not supported")


def is_retryable_db_error(exc: BaseException) -> bool:
    """Whether running the transaction again may succeed: a lost or invalidated connection,
    an ``OperationalError``, a deadlock or a serialization failure."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, sa.exc.OperationalError):
        return True
    original = exc.orig
    sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    return sqlstate in RETRYABLE_SQLSTATES
