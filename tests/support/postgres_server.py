"""A PostgreSQL server of a test's own, to stop and start under a running collector.

The suite's PostgreSQL pass shares one server between its tests; a test that restarts the
server (``pg_ctl stop -m fast``, then start) gets its own instead: a throwaway cluster made
by ``scripts/postgres.sh`` in a temporary folder, on a free port, removed at the end. A
benchmark that needs other server settings (a preloaded library, more connections) passes
them to :func:`private_postgres`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from tests.support.outages import Stoppable
from tests.support.processes import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"
SETTING_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")
"""A server setting's name (``max_connections``, ``pg_stat_statements.track``)."""


class PrivatePostgres(Stoppable):
    """One throwaway PostgreSQL server (``scripts/postgres.sh`` with its own data folder and
    port). ``url`` is its ``sluice`` database's SQLAlchemy URL once started."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self._env = {
            **os.environ,
            "SLUICE_PG_DIR": str(folder / "cluster"),
            "SLUICE_PG_PORT": str(free_port()),
        }
        self.url = ""

    def _script(self, command: str) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPT), command],
            env=self._env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"postgres.sh {command} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def start(self) -> str:
        """Start the server (creating the cluster the first time); its URL."""
        self.url = self._script("start")
        return self.url

    def stop(self) -> None:
        """Stop the server as ``pg_ctl stop -m fast`` does: sessions are ended, open
        transactions rolled back, new connections refused until :meth:`start`."""
        self._script("stop")

    def configure(self, settings: Mapping[str, str]) -> None:
        """Set server settings (``ALTER SYSTEM``: kept in the cluster's
        ``postgresql.auto.conf`` across restarts), then restart the server so that those read
        only at start (``shared_preload_libraries``, ``max_connections``) apply."""
        engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                for name, value in settings.items():
                    if not SETTING_NAME.fullmatch(name):
                        raise ValueError(f"not a server setting's name: {name!r}")
                    quoted = "'" + value.replace("'", "''") + "'"
                    connection.exec_driver_sql(f"ALTER SYSTEM SET {name} = {quoted}")
        finally:
            engine.dispose()
        self.stop()
        self.start()

    def reset_database(self) -> None:
        """Drop and create the ``sluice`` database again (``postgres.sh reset-db``), its
        sessions ended."""
        self._script("reset-db")


@contextmanager
def private_postgres(settings: Mapping[str, str] | None = None) -> Iterator[PrivatePostgres]:
    """A started :class:`PrivatePostgres`, stopped and deleted when the block ends. Its folder
    is under ``/tmp``: a Unix socket's path must stay short. ``settings``: server settings to
    apply before the block (:meth:`PrivatePostgres.configure`)."""
    folder = Path(tempfile.mkdtemp(prefix="sluice-pg-", dir="/tmp"))
    folder.chmod(0o755)  # run as root, the server's user must reach the cluster
    server = PrivatePostgres(folder)
    try:
        server.start()
        if settings:
            server.configure(settings)
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
