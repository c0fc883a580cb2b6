"""Noticing new checkpoint requests quickly without querying for them many times a second.

A collector looks for checkpoint requests (``Metastore.unsealed_for_host``) once a second, and
in between asks a :class:`RequestProbe` every few tens of milliseconds whether the metastore
may have changed. The probe costs next to nothing when nothing happened:

* SQLite: :class:`DataVersionRequestProbe` looks at the database file and its write-ahead log
  (their inode, size and modification time: two ``stat`` calls), and only when one changed reads
  ``PRAGMA data_version`` on a connection of its own, which changes whenever another
  connection commits. (The query alone, 50 times a second, was most of an idle collector's
  CPU: it takes SQLite's file locks.) A commit that left both files' size and time as they were
  (within the file system's timestamp granularity, after the log was reset) is found by the
  once-a-second query instead.
* PostgreSQL: :class:`ListeningRequestProbe` ``LISTEN``s on :data:`REQUESTS_CHANNEL`;
  ``Metastore.request_checkpoint`` notifies it in the request's transaction.
* Anything else: :class:`PollingRequestProbe` never signals; the once-a-second query finds
  requests.

A probe that fails (the database is briefly unreachable) answers "maybe" and reconnects on
its next call, so the caller's query reports the real error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from abc import ABC, abstractmethod
from typing import Any

from sqlalchemy import Engine

log = logging.getLogger(__name__)

REQUESTS_CHANNEL = "sluice_checkpoint_requests"
"""The PostgreSQL ``NOTIFY`` channel of checkpoint requests (the payload is the pipeline)."""


class RequestProbe(ABC):
    """Whether checkpoint requests may have changed since the last call.

    Threading model: used by one thread (the collector's control thread); it opens its
    connection on first use, on that thread.
    """

    @abstractmethod
    def changed(self) -> bool:
        """True when a request may have arrived since the last call (or on the first call)."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the probe's connection."""


class PollingRequestProbe(RequestProbe):
    """No cheap signal: requests are left to the once-a-second query."""

    def changed(self) -> bool:
        return False


class DataVersionRequestProbe(RequestProbe):
    """SQLite: ``PRAGMA data_version`` of a dedicated connection to the metastore file."""

    def __init__(self, database: str) -> None:
        self._database = database
        self._connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._stamp: tuple[tuple[int, int, int] | None, ...] | None = None

    def changed(self) -> bool:
        stamp = _file_stamp(self._database), _file_stamp(self._database + "-wal")
        if stamp == self._stamp and self._version is not None:
            return False  # no commit touched the files: no query (it takes SQLite's locks)
        self._stamp = stamp  # taken before the query: a commit after it changes the next one
        try:
            if self._connection is None:
                self._connection = sqlite3.connect(self._database, isolation_level=None)
            version = int(self._connection.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as exc:
            log.debug("request probe on %s: %s", self._database, exc)
            self.close()
            return True
        seen, self._version = self._version, version
        return seen != version

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
            self._version = None
            self._stamp = None


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    """What changes when a commit writes the file: its inode, size and modification time."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


class ListeningRequestProbe(RequestProbe):
    """PostgreSQL: ``LISTEN`` on a connection of its own, taken out of the engine's pool."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._connection: Any = None  # a psycopg connection in autocommit mode

    def changed(self) -> bool:
        if self._connection is None:
            try:
                self._connection = self._listen()
            except Exception as exc:  # any driver error: fall back to the query
                log.debug("request probe cannot listen: %s", exc)
                return True
            return True  # requests made before the LISTEN are found by the query
        try:
            return any(True for _ in self._connection.notifies(timeout=0))
        except Exception as exc:
            log.debug("request probe lost its connection: %s", exc)
            self.close()
            return True

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None

    def _listen(self) -> Any:
        pooled = self._engine.raw_connection()
        connection: Any = pooled.driver_connection
        pooled.detach()  # a connection of its own: never handed back to the pool
        connection.rollback()
        connection.autocommit = True
        connection.execute(f"LISTEN {REQUESTS_CHANNEL}")
        return connection


def open_request_probe(engine: Engine) -> RequestProbe:
    """The cheapest probe the engine's database offers."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        database = engine.url.database
        if database and database != ":memory:" and not database.startswith("file:"):
            return DataVersionRequestProbe(database)
    if dialect == "postgresql" and engine.dialect.driver == "psycopg":
        return ListeningRequestProbe(engine)
    return PollingRequestProbe()
