"""The one Spark Connect server of a test run (``scripts/spark-connect.sh``, ``local[2]``).

``spark_connect_server`` (and its ``spark_connect_url``) is session-scoped and lazy: the server
starts when the first test that asks for it runs (on a free port, in a folder of the run) and
stops when the run ends, so a run that needs none starts none. Tests that use it are marked
``slow`` and ``spark``.

pyspark chooses between a classic session and Spark Connect once per process, and the suite's
process has the classic ``spark`` session: Spark Connect clients run in child processes
(``run_connect_client``, or the landing job's driver itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.object_store import S3Server
from tests.support.processes import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "spark-connect.sh"
START_TIMEOUT_S = 240


@dataclass(frozen=True)
class ConnectServer:
    """The run's Spark Connect server: its URL, and the environment ``scripts/spark-connect.sh``
    runs with to reach it (its run folder and port)."""

    url: str
    env: Mapping[str, str]

    def script(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``scripts/spark-connect.sh COMMAND`` for this server."""
        return subprocess.run(
            ["bash", str(SCRIPT), command],
            env=dict(self.env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="session")
def spark_connect_server(
    tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server
) -> Iterator[ConnectServer]:
    """The run's Spark Connect server (started on first use, stopped at the end), with the
    session's S3 server's variables in its environment, as a deployment starts it beside a
    store (its Python workers read staging from and write the lake into the store with them)."""
    env = {
        **os.environ,
        **s3_server.environment,
        "SLUICE_SPARK_CONNECT_DIR": str(tmp_path_factory.mktemp("spark-connect")),
        "SLUICE_SPARK_CONNECT_PORT": str(free_port()),
        "SLUICE_PYTHON": sys.executable,
    }
    started = subprocess.run(
        ["bash", str(SCRIPT), "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    server = ConnectServer(started.stdout.strip(), env)
    try:
        if started.returncode != 0:
            pytest.fail(f"the Spark Connect server did not start:\n{started.stderr[-3000:]}")
        yield server
    finally:
        server.script("stop")


@pytest.fixture(scope="session")
def spark_connect_url(spark_connect_server: ConnectServer) -> str:
    """The ``sc://127.0.0.1:PORT`` URL of the run's Spark Connect server."""
    return spark_connect_server.url


def run_connect_client(
    code: str, env: Mapping[str, str] | None = None, timeout: float = 240
) -> list[str]:
    """Run ``code`` (Python, using Spark Connect) in a fresh interpreter with the repository
    first on its import path; its standard output's lines.

    Raises:
        AssertionError: it failed (with its output).
    """
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout.strip().splitlines()
