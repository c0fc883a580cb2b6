"""A real Airflow on loopback for the system tests, with a user who can sign in.

:func:`airflow_site` prepares a throw-away Airflow home (the variables of
``scripts/airflow-env.sh``, the project's DAGs and plugins folders, a pipelines folder of its
own), migrates its database, starts ``airflow api-server`` on a free loopback port with the
simple auth manager and one admin user, and stops the server (its whole process group, by the
PID it started) when the test ends. :func:`running_airflow_site` does the same as a context
manager, with extra Airflow settings and, if asked, the other components (``airflow
scheduler``, ``dag-processor``, ``triggerer``), each in its own process group, stopped the
same way.

:func:`airflow_postgres_database` gives a site a PostgreSQL metadata database instead of
SQLite, for sites where several components write at once. :class:`RestClient` calls a site's
REST API as its admin user. :func:`leftover_processes` finds any process still running with a
site's ``AIRFLOW_HOME`` (every process the site started, and their children, inherit it), so a
test can assert that none is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from tests.support.airflow import migrated_database, run_airflow
from tests.support.airflow_env import REPO_ROOT, airflow_env
from tests.support.postgres import postgres_url
from tests.support.processes import free_port, stop_groups

STARTUP_SECONDS = 180.0
STOP_SECONDS = 30.0
COMPONENTS = ("scheduler", "dag-processor", "triggerer")
"""The Airflow components besides the api-server that scheduled runs need."""
POSTGRES_SCRIPT = REPO_ROOT / "scripts" / "postgres.sh"


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
        return run_airflow(self.env, *args, timeout=timeout)


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
    with running_airflow_site(tmp_path) as site:
        yield site


@contextlib.contextmanager
def running_airflow_site(
    tmp_path: Path,
    settings: Mapping[str, str] | None = None,
    components: tuple[str, ...] = (),
) -> Iterator[AirflowSite]:
    """A migrated Airflow home under ``tmp_path``, its api-server and ``components``.

    The api-server and each of ``components`` (``airflow <name>``, e.g. :data:`COMPONENTS`)
    start together once the database is migrated, each in its own process group, logging to
    ``<name>.log`` in ``tmp_path``; the site is yielded once the api-server answers and its
    health endpoint reports every component healthy (each has written a heartbeat). On exit
    every group is stopped by the PID it was started with (SIGTERM, then SIGKILL for what is
    left after :data:`STOP_SECONDS`): the components together, then the api-server.

    :param settings: environment variables laid over the site's (``AIRFLOW__...``,
        ``AIRFLOW_CONN_...``); they reach every command and component the site runs.
    :param components: Airflow components to run besides the api-server.
    """
    home = site_home(tmp_path)
    pipelines = site_pipelines(tmp_path)
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
    env |= dict(settings or {})
    site = AirflowSite(url, home, pipelines, env, "admin", password, tmp_path / "api-server.log")
    if "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" in env:
        site.airflow("db", "migrate")
    else:
        migrated_database(home)  # SQLite, Airflow's default: a copy of one migrated
    started: dict[str, subprocess.Popen[bytes]] = {}
    try:
        started["api-server"] = _start(
            site, "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"
        )
        for name in components:
            started[name] = _start(site, name)
        _wait_until_healthy(site, started["api-server"])
        _wait_until_components_healthy(site, {name: started[name] for name in components})
        yield site
    finally:
        # The components first: a task they stop still reports its end to the api-server.
        _stop_all([process for name, process in started.items() if name != "api-server"])
        _stop_all([process for name, process in started.items() if name == "api-server"])


@contextlib.contextmanager
def airflow_postgres_database() -> Iterator[dict[str, str]]:
    """Settings for :func:`running_airflow_site` that put Airflow's metadata in PostgreSQL.

    A database of its own (dropped on exit) on the suite's PostgreSQL server: the one of
    ``SLUICE_TEST_POSTGRES_URL`` when set, else the one ``scripts/postgres.sh`` runs, started
    if it is not running (and then stopped on exit). SQLite serves one writer at a time: with
    a scheduler, an api-server, a DAG processor, a triggerer and CLI commands writing at once,
    a command can fail with "database is locked". Skips the test when no server can be
    started (``scripts/postgres.sh install`` installs one).
    """
    server = postgres_url()
    started = False
    if server is None:
        if _postgres("status").returncode == 0:
            server = _postgres("url").stdout.strip()
        else:
            start = _postgres("start")
            if start.returncode != 0:
                pytest.skip(f"no PostgreSQL server for Airflow: {start.stderr.strip()[-300:]}")
            started = True
            server = start.stdout.strip()
    name = f"airflow_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = sa.make_url(server).set(database=name).render_as_string(hide_password=False)
        # psycopg (3) serves both engines; Airflow would pick asyncpg for the async one.
        yield {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": url,
        }
    finally:
        try:
            with admin.connect() as connection:
                connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
        finally:
            if started:
                _postgres("stop")


def _postgres(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(POSTGRES_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )


def component_log(site: AirflowSite, name: str) -> Path:
    """Where :func:`running_airflow_site` writes the output of ``airflow <name>``."""
    return site.log.with_name(f"{name}.log")


def _start(site: AirflowSite, name: str, *args: str) -> subprocess.Popen[bytes]:
    """``airflow <name> <args>`` in a process group of its own (its PID is the group id)."""
    with open(component_log(site, name), "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "airflow", name, *args],
            env=site.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_until_components_healthy(
    site: AirflowSite, started: Mapping[str, subprocess.Popen[bytes]]
) -> None:
    keys = [name.replace("-", "_") for name in started]
    deadline = time.monotonic() + STARTUP_SECONDS
    health: dict[str, Any] = {}
    while started and time.monotonic() < deadline:
        for name, process in started.items():
            if process.poll() is not None:
                log = component_log(site, name)
                pytest.fail(f"airflow {name} exited ({process.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{site.url}/api/v2/monitor/health", timeout=10) as r:
                health = json.load(r)
        except OSError:
            health = {}
        if all((health.get(key) or {}).get("status") == "healthy" for key in keys):
            return
        time.sleep(1)
    if started:
        pytest.fail(f"not every component was healthy within {STARTUP_SECONDS:.0f} s: {health}")


@dataclass
class RestClient:
    """The site's REST API (``/api/v2``) as its admin user, with a token from ``/auth/token``."""

    site: AirflowSite
    _token: str | None = field(default=None, repr=False)

    def get(self, path: str, **query: str | int) -> Any:
        """``GET /api/v2/<path>?<query>``: the JSON answer; fails the test on an error."""
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return self.request("GET", f"{path}{suffix}")

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        url = f"{self.site.url}/api/v2/{path.lstrip('/')}"
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token()}", "Content-Type": "application/json"}
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{method} {url}: {exc.code} {exc.read().decode(errors='replace')}")

    def token(self) -> str:
        if self._token is None:
            body = json.dumps({"username": self.site.username, "password": self.site.password})
            request = urllib.request.Request(
                f"{self.site.url}/auth/token",
                data=body.encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                self._token = str(json.load(response)["access_token"])
        return self._token


def leftover_processes(home: Path) -> dict[int, str]:
    """Running processes whose environment has ``AIRFLOW_HOME=<home>``: pid -> command line.

    Every process a site starts (the api-server, the components, their workers, the task
    processes and what those start, such as spark-submit's JVM) inherits the site's
    ``AIRFLOW_HOME``, even one that left its parent's process group; other processes cannot
    have it, the home being a fresh temporary folder.
    """
    marker = f"AIRFLOW_HOME={home.resolve()}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if status and status[0] == "Z":  # a zombie: dead, waiting for its parent to reap it
            continue
        found[int(entry.name)] = command.strip()
    return found


def kill_leftovers(home: Path) -> dict[int, str]:
    """Kill (by PID) every process :func:`leftover_processes` finds; return what it found."""
    found = leftover_processes(home)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def site_home(tmp_path: Path) -> Path:
    """The Airflow home :func:`running_airflow_site` makes under ``tmp_path``."""
    return tmp_path / "airflow"


def site_pipelines(tmp_path: Path) -> Path:
    """The site's ``SLUICE_PIPELINES_DIR``: configs written there before the site starts are
    in the DAG processor's first parse."""
    return tmp_path / "pipelines"


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
    _stop_all([server])


def _stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    """Stop the process groups of ``processes`` (each group's id is the PID started): SIGTERM
    to every group at once (task processes and the Spark JVMs they start shut down cleanly),
    SIGKILL to what is left of any after one shared deadline."""
    stop_groups(processes, signal.SIGTERM, STOP_SECONDS)


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {log})"


T = TypeVar("T")


def poll_for(
    probe: Callable[[], T | None], what: str, seconds: float, every: float, logs: Callable[[], str]
) -> T:
    """Poll ``probe`` every ``every`` seconds until it returns something truthy, and return
    it; after ``seconds``, fail naming ``what`` with ``logs()`` (the components' last lines)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    pytest.fail(f"waited {seconds:.0f} s for: {what}\n{logs()}")


def wait_for_site(
    site: AirflowSite,
    what: str,
    probe: Callable[[], T | None],
    *,
    seconds: float,
    every: float,
    logs: Mapping[str, Path] | None = None,
) -> T:
    """:func:`poll_for` on a site: fail with the last lines of ``logs`` (by name; the
    scheduler's by default)."""
    named = logs or {"scheduler": component_log(site, "scheduler")}
    return poll_for(
        probe,
        what,
        seconds,
        every,
        lambda: "\n".join(f"--- {name}:\n{_tail(path)}" for name, path in named.items()),
    )
