"""A real Airflow api-server on loopback for the system tests, with a user who can sign in.

:func:`airflow_site` prepares a throw-away Airflow home (the variables of
``scripts/airflow-env.sh``, the project's DAGs and plugins folders, a pipelines folder of its
own), migrates its database, starts ``airflow api-server`` on a free loopback port with the
simple auth manager and one admin user, and stops the server (its whole process group, by the
PID it started) when the test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.airflow_env import airflow_env

STARTUP_SECONDS = 180.0
STOP_SECONDS = 30.0


@dataclass(frozen=True)
class AirflowSite:
    """A running api-server and how to reach it."""

    url: str
    """``http://127.0.0.1:<port>``, no trailing slash."""
    home: Path
    pipelines: Path
    env: dict[str, str]
    username: str
    password: str
    log: Path

    def airflow(self, *args: str, timeout: float = 240) -> str:
        """Run an ``airflow`` CLI command against this site; return its stdout."""
        completed = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if completed.returncode != 0:
            tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-30:])
            pytest.fail(f"airflow {' '.join(args)} failed ({completed.returncode}):\n{tail}")
        return completed.stdout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_status(url: str, headers: dict[str, str] | None = None) -> int:
    """The status of a GET, without following redirects."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def airflow_site(tmp_path: Path) -> Iterator[AirflowSite]:
    home = tmp_path / "airflow"
    pipelines = tmp_path / "pipelines"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    password = secrets.token_urlsafe(12)
    passwords = home / "passwords.json"
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "SLUICE_"))}
    env = inherited | airflow_env(home, pipelines)
    passwords.write_text(json.dumps({"admin": password}))
    env |= {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
    }
    site = AirflowSite(url, home, pipelines, env, "admin", password, tmp_path / "api-server.log")
    site.airflow("db", "migrate")
    command = [sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    with open(site.log, "wb") as log:
        server = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the workers stop with it
        )
    try:
        _wait_until_healthy(site, server)
        yield site
    finally:
        _stop(server)


def _wait_until_healthy(site: AirflowSite, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the api-server exited ({server.returncode}):\n{_tail(site.log)}")
        try:
            if http_status(f"{site.url}/api/v2/monitor/health") == 200:
                return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"the api-server did not answer within {STARTUP_SECONDS:.0f} s:\n{_tail(site.log)}")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group (the group id is the PID this fixture started)."""
    if server.poll() is None:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=STOP_SECONDS)
        except ProcessLookupError:
            pass
    with contextlib.suppress(ProcessLookupError):  # workers left behind by the main process
        os.killpg(server.pid, signal.SIGKILL)


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
