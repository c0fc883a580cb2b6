"""A real PgBouncer in transaction pooling mode in front of a test's own PostgreSQL server
(``scripts/pgbouncer.sh install``: Debian's package).

The pooler listens on a free loopback port and hands out a small pool of server connections
(:data:`SERVER_CONNECTIONS`) in turn (``server_round_robin``: otherwise the connection used
last goes to the next transaction, and a client alone keeps meeting its own): consecutive
transactions of one client land on different server connections, as they do in a busy fleet,
so whatever a client leaves on a server connection between its transactions (a prepared
statement, a ``LISTEN``) is seen by another client or by none. Clients are trusted by name
(``auth_type = trust``, the name listed in an ``auth_file``), as the private server trusts
them. Run as root, pgbouncer (which refuses root) runs as the server's ``postgres`` user.

The process runs in a group of its own and is stopped, group and all, when the ``with`` block
of :func:`pgbouncer_in_front` ends, whatever happened.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import sqlalchemy as sa

from tests.support.processes import find_programs, free_port, stop_group

INSTALL_HINT = "install it with: bash scripts/pgbouncer.sh install"
START_SECONDS = 15.0
SERVER_CONNECTIONS = 3
"""Server connections per database and user (the default): fewer than the clients a collector
and a test open, so that clients share them."""
CLIENT_CONNECTIONS = 200
"""Client connections the pooler accepts at most (the default)."""
SERVER_USER = "postgres"
"""Who runs pgbouncer when the tests run as root."""


class PrivatePgBouncer:
    """A running pgbouncer (transaction pooling) in front of the server at ``server_url``;
    ``url`` is the same database's SQLAlchemy URL through the pooler. ``server_connections``
    is its pool per database and user (``default_pool_size``), ``client_connections`` the
    clients it accepts at most (``max_client_conn``)."""

    def __init__(
        self,
        folder: Path,
        server_url: str,
        *,
        server_connections: int = SERVER_CONNECTIONS,
        client_connections: int = CLIENT_CONNECTIONS,
    ) -> None:
        self.folder = folder
        self.server = sa.make_url(server_url)
        self.server_connections = server_connections
        self.client_connections = client_connections
        self.port = free_port()
        self.url = self.server.set(host="127.0.0.1", port=self.port).render_as_string(
            hide_password=False
        )
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> str:
        """What pgbouncer wrote to its log file so far."""
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    @property
    def pid(self) -> int:
        """The running pgbouncer's process id (it holds every server connection)."""
        if self._process is None:
            raise RuntimeError("pgbouncer is not running")
        return self._process.pid

    def start(self) -> None:
        binary = find_programs(("pgbouncer",), INSTALL_HINT)["pgbouncer"]
        config = self._write_config()
        owner = pwd.getpwnam(SERVER_USER) if os.geteuid() == 0 else None
        if owner is not None:
            for path in (self.folder, *self.folder.iterdir()):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self._process = subprocess.Popen(
            [binary, str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            user=None if owner is None else owner.pw_uid,
            group=None if owner is None else owner.pw_gid,
            extra_groups=None if owner is None else [],
        )
        self._wait_ready()

    def stop(self) -> None:
        if self._process is not None:
            stop_group(self._process, signal.SIGTERM, timeout=10)
            self._process = None

    def _write_config(self) -> Path:
        user = self.server.username or "sluice"
        database = self.server.database or "sluice"
        (self.folder / "users.txt").write_text(f'"{user}" ""\n')
        config = self.folder / "pgbouncer.ini"
        config.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"{database} = host={self.server.host} port={self.server.port} "
                    f"dbname={database}",
                    "",
                    "[pgbouncer]",
                    "pool_mode = transaction",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {self.folder / 'users.txt'}",
                    f"default_pool_size = {self.server_connections}",
                    "server_round_robin = 1",
                    f"max_client_conn = {self.client_connections}",
                    f"logfile = {self.folder / 'pgbouncer.log'}",
                    f"pidfile = {self.folder / 'pgbouncer.pid'}",
                    "",
                ]
            )
        )
        return config

    def _wait_ready(self) -> None:
        """Until a query passes through the pooler; fails naming pgbouncer's log otherwise."""
        assert self._process is not None
        deadline = time.monotonic() + START_SECONDS
        dsn = f"host=127.0.0.1 port={self.port} dbname={self.server.database} "
        dsn += f"user={self.server.username} connect_timeout=2"
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"pgbouncer exited ({self._process.returncode}) at start: {self.log[-2000:]}"
                )
            try:
                with psycopg.connect(dsn, autocommit=True) as connection:
                    connection.execute("SELECT 1")
                return
            except psycopg.Error as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"pgbouncer answers no query after {START_SECONDS:.0f} s ({exc}): "
                        f"{self.log[-2000:]}"
                    ) from exc
                time.sleep(0.1)


@contextmanager
def pgbouncer_in_front(
    server_url: str,
    *,
    server_connections: int = SERVER_CONNECTIONS,
    client_connections: int = CLIENT_CONNECTIONS,
) -> Iterator[PrivatePgBouncer]:
    """A started :class:`PrivatePgBouncer` in front of ``server_url``, stopped and its folder
    deleted when the block ends. The test fails (it is not skipped) when pgbouncer is not
    installed."""
    folder = Path(tempfile.mkdtemp(prefix="sluice-pgbouncer-", dir="/tmp"))
    pooler = PrivatePgBouncer(
        folder,
        server_url,
        server_connections=server_connections,
        client_connections=client_connections,
    )
    try:
        pooler.start()
        yield pooler
    finally:
        try:
            pooler.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
