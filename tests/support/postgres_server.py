"""A PostgreSQL server of a test's own, to stop and start under a running collector.

The suite's PostgreSQL pass shares one server between its tests; a test that restarts the
server (``pg_ctl stop -m fast``, then start) gets its own instead: a throwaway cluster made
by ``scripts/postgres.sh`` in a temporary folder, on a free port, removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.outages import Stoppable
from tests.support.processes import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


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


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started :class:`PrivatePostgres`, stopped and deleted when the block ends. Its folder
    is under ``/tmp``: a Unix socket's path must stay short."""
    folder = Path(tempfile.mkdtemp(prefix="sluice-pg-", dir="/tmp"))
    folder.chmod(0o755)  # run as root, the server's user must reach the cluster
    server = PrivatePostgres(folder)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
