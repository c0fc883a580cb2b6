"""What a PostgreSQL metastore server does for its clients, measured from outside them: the
statements they run (``pg_stat_statements``), the connections each client process holds
(``pg_stat_activity`` joined to the process's sockets in ``/proc``), and the server's CPU time
(its processes' utime + stime in ``/proc``). With a connection pooler between the clients and
the server (:class:`Pooler`), a client's connections are its sockets to the pooler, and the
server's are the pooler's backends.

The measuring side connects as a role of its own (:data:`OBSERVER_ROLE`), so that its reads of
the statistics, and whatever else it asks the metastore, are told apart from the clients'
statements: ``pg_stat_statements`` counts per role.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

OBSERVER_ROLE = "bench_observer"
SERVER_SETTINGS = {"shared_preload_libraries": "pg_stat_statements"}
"""What the server needs for :class:`MetastoreLoad` (read at start). Utility statements
(``BEGIN``, ``COMMIT``, ``LISTEN``) are counted too: ``pg_stat_statements.track_utility`` is on
by default."""
TCP_ESTABLISHED = "01"


@dataclass(frozen=True)
class Statement:
    """One normalised statement of the clients' role since the last reset."""

    query: str
    calls: int
    total_ms: float

    @property
    def transaction_control(self) -> bool:
        """``BEGIN``, ``COMMIT`` or ``ROLLBACK``."""
        return self.query.strip().upper() in {"BEGIN", "COMMIT", "ROLLBACK"}

    @property
    def ends_transaction(self) -> bool:
        return self.query.strip().upper() in {"COMMIT", "ROLLBACK"}

    @property
    def short(self) -> str:
        """The statement on one line, at most 90 characters."""
        text = re.sub(r"\s+", " ", self.query).strip()
        return text if len(text) <= 90 else text[:87] + "..."


@dataclass(frozen=True)
class Pooler:
    """A connection pooler the clients reach the server through: its process, which holds
    the server connections, and the port the clients connect to."""

    pid: int
    port: int


@dataclass(frozen=True)
class Connections:
    """One look at the clients' connections."""

    by_process: dict[int, int]
    """Connections of the client role, by the process that holds them (every process asked
    about is there, with 0 if it holds none); through a pooler, each process's connections
    to the pooler."""
    others: int
    """Connections of the client role on the server that none of those processes holds
    (through a pooler: that the pooler does not hold)."""
    server: int
    """Connections of the client role on the server: through a pooler, its backends (and
    :attr:`others`)."""


class MetastoreLoad:
    """The statistics of one PostgreSQL server and its database, read as :data:`OBSERVER_ROLE`.

    ``url``: the database's SQLAlchemy URL as the clients use it (their role is its user, a
    superuser: ``scripts/postgres.sh`` makes one). :meth:`prepare` makes the observer role and
    the extension (again after the database is made anew)."""

    def __init__(self, url: str) -> None:
        self._url = sa.make_url(url)
        self.client_role = self._url.username or ""
        self.port = self._url.port or 5432
        self._engine: sa.Engine | None = None

    def prepare(self) -> None:
        """Create the observer role (a superuser: it reads every client's statistics and
        the metastore's rows) and the ``pg_stat_statements`` extension in the database."""
        engine = sa.create_engine(self._url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                exists = connection.execute(
                    sa.text("SELECT 1 FROM pg_roles WHERE rolname = :name"),
                    {"name": OBSERVER_ROLE},
                ).first()
                if exists is None:
                    connection.exec_driver_sql(f"CREATE ROLE {OBSERVER_ROLE} LOGIN SUPERUSER")
                connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        finally:
            engine.dispose()

    @property
    def observer_url(self) -> str:
        """The database's URL as the observer role."""
        return self._url.set(username=OBSERVER_ROLE).render_as_string(hide_password=False)

    def _connection(self) -> sa.Connection:
        if self._engine is None:
            self._engine = sa.create_engine(self.observer_url, isolation_level="AUTOCOMMIT")
        return self._engine.connect()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def reset_statements(self) -> None:
        with self._connection() as connection:
            connection.execute(sa.text("SELECT pg_stat_statements_reset()"))

    def statements(self) -> list[Statement]:
        """The client role's statements since the last reset, most called first."""
        query = sa.text(
            "SELECT query, calls, total_exec_time FROM pg_stat_statements "
            "WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = :role) "
            "ORDER BY calls DESC"
        )
        with self._connection() as connection:
            rows = connection.execute(query, {"role": self.client_role}).all()
        return [Statement(row[0], int(row[1]), float(row[2])) for row in rows]

    def connections(self, pids: Iterable[int], through: Pooler | None = None) -> Connections:
        """The client role's connections now, by the process (of ``pids``) whose socket is
        their other end; ``through``: the processes connect to that pooler, and the server's
        connections are counted apart."""
        query = sa.text(
            "SELECT client_port FROM pg_stat_activity "
            "WHERE usename = :role AND client_port IS NOT NULL"
        )
        with self._connection() as connection:
            ports = {int(row[0]) for row in connection.execute(query, {"role": self.client_role})}
        local_ports = _local_ports_to(self.port)
        if through is not None:
            to_pooler = _local_ports_to(through.port)
            by_process = {
                pid: sum(1 for inode in _socket_inodes(pid) if inode in to_pooler) for pid in pids
            }
            pooled = {local_ports[i] for i in _socket_inodes(through.pid) if i in local_ports}
            return Connections(by_process, len(ports - pooled), len(ports))
        by_process = {}
        matched: set[int] = set()
        for pid in pids:
            held = {local_ports[inode] for inode in _socket_inodes(pid) if inode in local_ports}
            by_process[pid] = len(held & ports)
            matched |= held
        return Connections(by_process, len(ports - matched), len(ports))

    def server_pid(self) -> int:
        """The postmaster's process id (the parent of the observer's backend)."""
        with self._connection() as connection:
            backend = int(connection.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())
        return int(_stat_fields(backend)[1])


def server_cpu_seconds(postmaster: int) -> float:
    """User + system CPU time of the server so far: the postmaster's own, that of the children
    it has reaped (backends that ended: its cutime + cstime), and its live children's."""
    fields = _stat_fields(postmaster)
    total = sum(int(fields[index]) for index in (11, 12, 13, 14))
    for pid in _children(postmaster):
        try:
            child = _stat_fields(pid)
        except OSError:
            continue  # ended meanwhile: its time is in the postmaster's cutime from now on
        total += int(child[11]) + int(child[12])
    return total / os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` after the command name: state, ppid, ... (utime is index 11)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _children(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if int(_stat_fields(int(entry))[1]) == parent:
                children.append(int(entry))
        except OSError:
            continue
    return children


def _local_ports_to(port: int) -> dict[str, int]:
    """The established IPv4 TCP connections to ``port`` on this machine: socket inode ->
    local port."""
    found = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
        if state == TCP_ESTABLISHED and int(remote.rsplit(":", 1)[1], 16) == port:
            found[inode] = int(local.rsplit(":", 1)[1], 16)
    return found


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of the process's open sockets."""
    inodes: set[str] = set()
    try:
        entries = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return inodes
    for entry in entries:
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes
