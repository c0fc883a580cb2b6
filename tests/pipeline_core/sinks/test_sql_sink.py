"""SqlSink against the test database (SQLite, or PostgreSQL in the PostgreSQL pass)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import DeliveryBatch, SqlSink, Status, event_id
from pipeline_core.sinks._sql import is_retryable_db_error
from tests.pipeline_core.sinks.support import (
    FP_A,
    FP_B,
    SleepLog,
    chunk,
    fast_retry,
    line_batch,
    long_line_chunk,
    wire,
)

pytestmark = pytest.mark.timeout(30)


def rows(url: str, table: str = "sluice_events") -> list[dict[str, Any]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            result = connection.execute(
                sa.text(f"SELECT * FROM {table} ORDER BY file_fingerprint, byte_offset")
            )
            return [dict(row._mapping) for row in result]
    finally:
        engine.dispose()


@pytest.fixture
def sql_sink(metastore_url: str) -> Iterator[SqlSink]:
    sink = SqlSink("db", metastore_url, retry=fast_retry(3))
    sink.start()
    yield sink
    sink.stop()


def test_inserts_one_row_per_line(sql_sink: SqlSink, metastore_url: str) -> None:
    batch = DeliveryBatch(
        (chunk(b"GET /a\nGET /b\n", start=0), chunk(b"app line\n", 40, FP_B, "app")), 7
    )
    wire([sql_sink], batch)

    assert sql_sink.process() is Status.READY

    stored = rows(metastore_url)
    assert [
        (r["event_id"], r["source"], r["file_fingerprint"], r["byte_offset"], r["message"])
        for r in stored
    ] == [
        (event_id(FP_A, 0), "access", FP_A, 0, "GET /a"),
        (event_id(FP_A, 7), "access", FP_A, 7, "GET /b"),
        (event_id(FP_B, 40), "app", FP_B, 40, "app line"),
    ]
    assert all(r["received_at"] is not None for r in stored)


def test_delivering_the_same_batch_again_inserts_nothing_new(
    sql_sink: SqlSink, metastore_url: str
) -> None:
    batch = line_batch(b"one", b"two", b"three")
    channel = wire([sql_sink], batch)
    assert sql_sink.process() is Status.READY
    first = rows(metastore_url)

    channel.put(batch)
    channel.put(line_batch(b"two", b"three", b"four", start=4))  # overlaps the first batch
    assert sql_sink.process() is Status.READY
    assert sql_sink.process() is Status.READY

    stored = rows(metastore_url)
    assert stored[:3] == first  # the rows of the first delivery are untouched
    assert [r["message"] for r in stored] == ["one", "two", "three", "four"]


def test_nul_bytes_and_invalid_utf8_become_replacement_characters(
    sql_sink: SqlSink, metastore_url: str
) -> None:
    wire([sql_sink], line_batch(b"nul \x00 here", b"bad \xff\xfe utf8", b"ok \xc3\xa9"))

    assert sql_sink.process() is Status.READY

    assert [r["message"] for r in rows(metastore_url)] == [
        "nul \ufffd here",
        "bad \ufffd\ufffd utf8",
        "ok é",
    ]


def test_skips_an_over_long_line_and_counts_it(sql_sink: SqlSink, metastore_url: str) -> None:
    long_line = long_line_chunk(start=3)
    wire([sql_sink], DeliveryBatch((chunk(b"ok\n"), long_line, chunk(b"next\n", long_line.end)), 0))

    assert sql_sink.process() is Status.READY

    assert [(r["byte_offset"], r["message"]) for r in rows(metastore_url)] == [
        (0, "ok"),
        (long_line.end, "next"),
    ]
    assert sql_sink.skipped_long_lines == 1


def test_inserts_large_batches_in_chunks_into_a_named_table(metastore_url: str) -> None:
    sink = SqlSink("db", metastore_url, table="web_events", chunk_rows=1000, retry=fast_retry())
    lines = [f"line {i}".encode() for i in range(2500)]
    wire([sink], line_batch(*lines))

    sink.start()
    try:
        assert sink.process() is Status.READY
    finally:
        sink.stop()

    assert len(rows(metastore_url, "web_events")) == 2500


def test_a_restarted_sink_reuses_the_existing_table(metastore_url: str) -> None:
    for sequence, line in enumerate([b"first", b"second"]):
        sink = SqlSink("db", metastore_url, retry=fast_retry())
        wire([sink], line_batch(line, start=sequence * 100))
        sink.start()
        try:
            assert sink.process() is Status.READY
        finally:
            sink.stop()

    assert [r["message"] for r in rows(metastore_url)] == ["first", "second"]


def test_an_unreachable_database_raises_event_delivery_after_the_attempts(
    tmp_path: Path,
) -> None:
    sleeps = SleepLog()
    sink = SqlSink("db", f"sqlite:///{tmp_path}", retry=fast_retry(3, sleeps))  # a folder
    channel = wire([sink], line_batch(b"x"))
    sink.start()

    with pytest.raises(EventDeliveryException, match="after 3 attempts") as raised:
        sink.process()
    sink.stop()

    assert isinstance(raised.value.__cause__, sa.exc.OperationalError)
    assert len(sleeps) == 2
    assert len(channel) == 1


def test_an_unsupported_dialect_fails_at_start() -> None:
    sink = SqlSink("db", "mysql+pymysql://user@localhost/logs")

    with pytest.raises(ValueError, match="dialect 'mysql' is not supported"):
        sink.start()


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"SQLSTATE {sqlstate}")
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (sa.exc.OperationalError("INSERT", {}, Exception("server closed")), True),
        (sa.exc.DBAPIError("INSERT", {}, Exception("reset"), connection_invalidated=True), True),
        (sa.exc.DBAPIError("INSERT", {}, _PgError("40P01")), True),
        (sa.exc.DBAPIError("INSERT", {}, _PgError("40001")), True),
        (sa.exc.IntegrityError("INSERT", {}, _PgError("23502")), False),
        (sa.exc.ProgrammingError("INSERT", {}, _PgError("42P01")), False),
        (ValueError("not a database error"), False),
    ],
)
def test_retries_lost_connections_deadlocks_and_serialization_failures(
    error: BaseException, retryable: bool
) -> None:
    assert is_retryable_db_error(error) is retryable


def test_survives_the_database_closing_its_connections(
    sql_sink: SqlSink, metastore_url: str
) -> None:
    if not metastore_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (the PostgreSQL pass)")
    channel = wire([sql_sink], line_batch(b"before"))
    assert sql_sink.process() is Status.READY
    admin = sa.create_engine(metastore_url)
    with admin.begin() as connection:
        connection.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    admin.dispose()

    channel.put(line_batch(b"after", start=7))
    assert sql_sink.process() is Status.READY

    assert [r["message"] for r in rows(metastore_url)] == ["before", "after"]
