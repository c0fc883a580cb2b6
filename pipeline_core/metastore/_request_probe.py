"""Noticing new checkpoint requests quickly without querying for them many times a second.

A collector looks for checkpoint requests (``Metastore.unsealed_for_host``) now and then (once
a second, or every few seconds where the probe has a descriptor), and in between waits on a
:class:`RequestProbe`'s descriptor (``fileno``) until the metastore may have changed, then
asks the probe. The probe costs next to nothing when nothing happened:

* SQLite: :class:`DataVersionRequestProbe` is woken by inotify on the database's folder, then
  looks at the database file and its write-ahead log
  (their inode, size and modification time: two ``stat`` calls), and only when one changed reads
  ``PRAGMA data_version`` on a connection of its own, which changes whenever another
  connection commits. (The query alone, 50 times a second, was most of an idle collector's
  CPU: it takes SQLite's file locks.) A commit that left both files' size and time as they were
  (within the file system's timestamp granularity, after the log was reset) is found by the
  once-a-second query instead. A commit is a request only when it adds one: the probe then
  reads the ids of the newest REQUESTED checkpoints, as :class:`QueryingRequestProbe` does,
  and says yes only when one it has not seen shows. Every commit to the database changes the
  version, the collector's own included (lease renewals, read-progress samples, seals) and
  those of every other collector sharing it: each made its control thread ask for every
  pipeline's waiting requests (PostgreSQL's probe hears of requests alone).
* PostgreSQL: :class:`ListeningRequestProbe` ``LISTEN``s on :data:`REQUESTS_CHANNEL`;
  ``Metastore.request_checkpoint`` notifies it in the request's transaction.
* PostgreSQL behind a transaction-mode pooler (``metastore.pooling: transaction``), which
  carries no ``LISTEN``: :class:`QueryingRequestProbe` has no descriptor; asked every
  :data:`LOOK_SECONDS`, it reads the ids of the newest requested checkpoints (a range of the
  primary key) and says yes when one it has not seen appears.
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
from collections.abc import Iterable
from typing import Any

from inotify_simple import INotify
from inotify_simple import flags as inotify_flags
from sqlalchemy import Connection, Engine
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite as sqlite_dialect
from sqlalchemy.exc import SQLAlchemyError

from pipeline_core._metastore_pooling import MetastorePooling
from pipeline_core.metastore._checkpoints import (
    REQUESTS_CHANNEL,
    CheckpointRepository,
    newest_and_requested,
    requested_above_query,
)

log = logging.getLogger(__name__)

_COMMIT_EVENTS = inotify_flags.MODIFY | inotify_flags.CREATE | inotify_flags.MOVED_TO
"""What a commit does to the database's folder: writes the log (or the database), or makes a
new log."""

LOOK_SECONDS = 0.5
"""How often a :class:`QueryingRequestProbe` queries: a request waits half of it on average
before its collector hears of it. Each look is one small query (one round trip, a range of
the primary key: 0.13 ms on the server over 200,000 checkpoints, 0.5 ms with the collector's
side, measured on the 2-core development machine): a hundred collectors behind one pooler
send the server 200 a second."""

REORDER_WINDOW = 1000
"""How many checkpoint ids below the newest one seen a :class:`QueryingRequestProbe` reads
again at each look: a request that commits after this many later requests were committed is
left to the collector's safety-net query."""


class RequestProbe(ABC):
    """Whether checkpoint requests may have changed since the last call.

    Threading model: used by one thread (the collector's control thread); it opens its
    connection on first use, on that thread.
    """

    @abstractmethod
    def changed(self) -> bool:
        """True when a request may have arrived since the last call (or on the first call)."""

    def fileno(self) -> int | None:
        """A descriptor that becomes readable when a request may have arrived (then ask
        :meth:`changed`, which also drains it): the caller can wait on it instead of asking
        again and again. None: there is none (ask :meth:`changed` every so often, or not at
        all for a probe that never signals)."""
        return None

    @property
    def signals(self) -> bool:
        """Whether :meth:`changed` can ever say yes (a probe that cannot is never asked)."""
        return True

    @property
    def look_every(self) -> float | None:
        """For a probe that reads the database itself when asked (no descriptor, but it sees
        every request): how often to ask it, in seconds. Such a probe is as good as a
        descriptor, so the metastore need be queried for requests only as a safety net. None:
        ask it as often as the caller likes (a cheap look that may miss a request)."""
        return None

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the probe's connection."""


class PollingRequestProbe(RequestProbe):
    """No cheap signal: requests are left to the once-a-second query."""

    def changed(self) -> bool:
        return False

    @property
    def signals(self) -> bool:
        return False


class DataVersionRequestProbe(RequestProbe):
    """SQLite: ``PRAGMA data_version`` of a dedicated connection to the metastore file, then,
    when another connection committed, the REQUESTED checkpoints' ids (a range of the primary
    key, see :class:`QueryingRequestProbe`): a commit that added no request is no news."""

    def __init__(self, database: str) -> None:
        self._database = database
        self._connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._requests = _NewRequests()
        self._stamp: tuple[tuple[int, int, int] | None, ...] | None = None
        self._events: INotify | None = None
        self._watching = False

    def fileno(self) -> int | None:
        """An inotify descriptor on the database's folder: a commit writes the database or
        its write-ahead log there (so do other files of the folder: :meth:`changed` tells)."""
        if not self._watching:
            self._watching = True
            folder = os.path.dirname(os.path.abspath(self._database))
            try:
                self._events = INotify(nonblocking=True)
                self._events.add_watch(folder, _COMMIT_EVENTS)
            except OSError as exc:  # no inotify here, or no watch left: asked every so often
                log.debug("request probe cannot watch %s: %s", folder, exc)
                if self._events is not None:
                    self._events.close()
                self._events = None
        return None if self._events is None else self._events.fileno()

    def changed(self) -> bool:
        stamp = _file_stamp(self._database), _file_stamp(self._database + "-wal")
        if self._events is not None:
            # Woken by a write (or looking again after one): the version tells. The files
            # can show a commit's log before the commit shows (inotify wakes on its first
            # write), so they do not decide here.
            with contextlib.suppress(OSError):
                self._events.read(timeout=0)  # drained: the descriptor waits for the next
        elif stamp == self._stamp and self._version is not None:
            return False  # no commit touched the files: no query (it takes SQLite's locks)
        try:
            if self._connection is None:
                self._connection = sqlite3.connect(self._database, isolation_level=None)
            connection = self._connection
            version = int(connection.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as exc:
            log.debug("request probe on %s: %s", self._database, exc)
            self.close()
            return True
        seen, self._version = self._version, version
        if seen == version:
            return False
        self._stamp = stamp  # taken before the query: a commit after it changes the next
        try:
            # On the connection whose version was read: a request committed after the
            # version changes it again, so the next call reads the ids again.
            return self._requests.appeared(connection)
        except sqlite3.Error as exc:
            log.debug("request probe on %s cannot read the requests: %s", self._database, exc)
            return True  # the caller's query tells

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
            self._version = None
            self._stamp = None
            self._requests = _NewRequests()
        if self._events is not None:
            self._events.close()
            self._events = None
            self._watching = False


class _SeenRequests:
    """The REQUESTED checkpoints' ids a probe saw last, and whether one appeared since. The
    ids above the newest one seen minus :data:`REORDER_WINDOW` are read again at each look
    (:attr:`floor`), as transactions may commit out of id order."""

    def __init__(self) -> None:
        self._requested: set[int] | None = None
        """The REQUESTED ids the last look read; None: not looked yet."""
        self._newest = 0

    @property
    def floor(self) -> int:
        """The id above which the next look reads."""
        return self._newest - REORDER_WINDOW

    def appeared(self, newest: int | None, requested: Iterable[int]) -> bool:
        """Note a look's newest id and REQUESTED ids; whether one of them was not seen at the
        last look (yes at the first)."""
        seen, self._requested = self._requested, set(requested)
        self._newest = max(self._newest, newest or 0)
        return seen is None or not self._requested <= seen

    def forget(self) -> None:
        """The next look counts as the first (after the connection was lost)."""
        self._requested = None


class _NewRequests:
    """Whether a request appeared, by :meth:`CheckpointRepository.requested_above`'s query on
    a SQLite probe's own ``sqlite3`` connection (a request is a new row of
    ``sluice_checkpoints``)."""

    def __init__(self) -> None:
        self._seen = _SeenRequests()

    def appeared(self, connection: sqlite3.Connection) -> bool:
        """Whether a REQUESTED id not seen at the last look shows now (yes at the first).

        Raises:
            sqlite3.Error: the query failed (no schema yet, the database went away...).
        """
        query = requested_above_query(self._seen.floor).compile(
            dialect=_SQLITE, compile_kwargs={"render_postcompile": True}
        )
        parameters = [query.params[name] for name in query.positiontup or ()]
        newest, ids = newest_and_requested(connection.execute(query.string, parameters))
        return self._seen.appeared(newest, ids)


_SQLITE = sqlite_dialect()


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
        self._fresh = False

    def fileno(self) -> int | None:
        """The listening connection's socket: a notification makes it readable."""
        if not self._connected():
            return None  # any driver error: asked every so often instead
        try:
            return int(self._connection.fileno())
        except Exception:
            return None

    def changed(self) -> bool:
        connected = self._connected()
        if self._fresh or not connected:
            self._fresh = False
            return True  # requests made before the LISTEN (or while it fails) need the query
        try:
            return any(True for _ in self._connection.notifies(timeout=0))
        except Exception as exc:
            log.debug("request probe lost its connection: %s", exc)
            self.close()
            return True

    def _connected(self) -> bool:
        """Listening now (connected now if it was not: then :attr:`_fresh`)."""
        if self._connection is None:
            try:
                self._connection = self._listen()
            except Exception as exc:  # any driver error
                log.debug("request probe cannot listen: %s", exc)
                return False
            self._fresh = True
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


class QueryingRequestProbe(RequestProbe):
    """PostgreSQL behind a transaction-mode pooler: a small query every :data:`LOOK_SECONDS`
    on a connection of its own (in autocommit: the pooler lends it a server connection for one
    statement).

    A request is a new row of ``sluice_checkpoints``. The probe keeps the ids of the REQUESTED
    checkpoints it saw last and says yes when one it has not seen shows. It reads only the ids
    above the newest one seen minus :data:`REORDER_WINDOW` (with the newest id, to move that
    floor): ids are taken when a request inserts its row, and transactions may commit in
    another order, so a request can show below the newest id already seen (two DAG runs
    requesting at the same second); it is found as long as fewer than
    :data:`REORDER_WINDOW` later requests committed before it.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._connection: Connection | None = None
        self._seen = _SeenRequests()

    @property
    def look_every(self) -> float | None:
        return LOOK_SECONDS

    def changed(self) -> bool:
        try:
            if self._connection is None:
                self._connection = self._engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT"
                )
            newest, requested = CheckpointRepository(self._connection).requested_above(
                self._seen.floor
            )
        except SQLAlchemyError as exc:
            log.debug("request probe cannot query: %s", exc)
            self.close()
            return True  # the caller's query reports the real error
        return self._seen.appeared(newest, requested)

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None
            self._seen.forget()


def open_request_probe(
    engine: Engine, pooling: MetastorePooling = MetastorePooling.NONE
) -> RequestProbe:
    """The cheapest probe the engine's database offers (behind a transaction-mode pooler,
    ``pooling``: one that needs nothing to outlive a transaction)."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        database = engine.url.database
        if database and database != ":memory:" and not database.startswith("file:"):
            return DataVersionRequestProbe(database)
    if dialect == "postgresql" and pooling is MetastorePooling.TRANSACTION:
        return QueryingRequestProbe(engine)
    if dialect == "postgresql" and engine.dialect.driver == "psycopg":
        return ListeningRequestProbe(engine)
    return PollingRequestProbe()
