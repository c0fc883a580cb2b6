"""The metastore unavailable for a while: its write lock held, or its database down."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa


@contextmanager
def metastore_write_lock(
    url: str, *, tables: tuple[str, ...] = ("sluice_checkpoints", "sluice_batches")
) -> Iterator[None]:
    """Hold the metastore's write lock until the block ends, as a long migration or a stuck
    admin session would: SQLite ``BEGIN EXCLUSIVE`` on the database file (readers go on in WAL
    mode), PostgreSQL ``LOCK TABLE ... IN EXCLUSIVE MODE`` on ``tables`` (the checkpoint and
    batch tables: reads go on, writes wait)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database, url
        locker = sqlite3.connect(parsed.database, isolation_level=None, timeout=30)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            yield
            locker.execute("ROLLBACK")
        finally:
            locker.close()
        return
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE"))
            yield
    finally:
        engine.dispose()


def take_database_down(server_url: str, database: str, seconds: float) -> threading.Event:
    """Take a PostgreSQL database down for ``seconds``: its sessions are terminated and new
    connections refused (``ALLOW_CONNECTIONS false``) until a timer lets them in again; the
    server and its other databases are not touched. Returns an event set when it is back."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    name = sa.text(f'"{database}"').text
    back = threading.Event()

    def allow(allowed: bool) -> None:
        with admin.connect() as connection:
            connection.execute(sa.text(f"ALTER DATABASE {name} ALLOW_CONNECTIONS {allowed}"))
            if not allowed:
                connection.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": database},
                )

    def end() -> None:
        try:
            allow(True)
        finally:
            admin.dispose()
            back.set()

    allow(False)
    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()
    return back
