"""The processes the cluster tests start, and how each is stopped again by its PID.

* :class:`SparkStandalone` drives ``scripts/spark-standalone.sh`` (a master and a worker on
  127.0.0.1) in a run folder of the test's own, so it never touches a developer's cluster under
  ``data/``.
* :class:`CollectorProcess` is one ``sluice collect CONFIG`` (``python -m pipeline_core``), a
  collector tailing its host's files until it is stopped.

Both are meant for ``try``/``finally``: :meth:`SparkStandalone.stop` and
:meth:`CollectorProcess.stop` may be called whatever state the process is in (never started,
half started, already dead), and fall back to ``SIGKILL`` by PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pipeline_core.testing import holds_within
from tests.support.airflow_env import REPO_ROOT
from tests.support.faults import sluice_command

SPARK_SCRIPT = REPO_ROOT / "scripts" / "spark-standalone.sh"
SPARK_ROLES = ("worker", "master")
"""The daemons of the cluster, in the order they are stopped."""


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie child counts as gone once reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class SparkStandalone:
    """A Spark standalone master and worker started by ``scripts/spark-standalone.sh``.

    :param run_dir: the script's run folder (``SLUICE_SPARK_RUN_DIR``): PID files, logs and the
        worker's scratch space, where each executor leaves its ``stderr``.
    :param cores: cores the worker offers.
    """

    run_dir: Path
    cores: int = 2
    url: str | None = None
    started_seconds: float | None = None

    def _env(self) -> dict[str, str]:
        return os.environ | {
            "SLUICE_SPARK_RUN_DIR": str(self.run_dir),
            "SLUICE_PYTHON": sys.executable,
            "SLUICE_SPARK_WORKER_CORES": str(self.cores),
        }

    def _script(self, command: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SPARK_SCRIPT), command],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, timeout: float = 300.0) -> str:
        """Start the master and the worker; return the master URL ``spark://127.0.0.1:PORT``.

        Raises:
            AssertionError: the script failed (its output and the daemons' logs are quoted).
        """
        started = time.monotonic()
        completed = self._script("start", timeout)
        if completed.returncode != 0:
            raise AssertionError(
                f"spark-standalone.sh start failed ({completed.returncode}):\n"
                f"{completed.stderr[-4000:]}\n{self.logs()}"
            )
        self.url = completed.stdout.strip().splitlines()[-1]
        self.started_seconds = time.monotonic() - started
        return self.url

    def pids(self) -> dict[str, int]:
        """The PIDs the script recorded, by role (``master``, ``worker``)."""
        found: dict[str, int] = {}
        for role in SPARK_ROLES:
            path = self.run_dir / f"{role}.pid"
            text = path.read_text().strip() if path.exists() else ""
            if text.isdigit():
                found[role] = int(text)
        return found

    def stop(self, timeout: float = 120.0) -> None:
        """Stop the worker and the master: the script's ``stop`` (SIGTERM by PID, SIGKILL after
        30 s), then SIGKILL for any recorded PID still alive.

        Raises:
            AssertionError: a daemon is still alive after all that.
        """
        pids = self.pids()
        try:
            self._script("stop", timeout)
        finally:
            for pid in pids.values():
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
        holds_within(lambda: not any(pid_alive(pid) for pid in pids.values()), 30, 0.1)
        alive = {role: pid for role, pid in pids.items() if pid_alive(pid)}
        assert not alive, f"Spark daemons still running after stop: {alive}"

    def executor_logs(self) -> list[Path]:
        """The ``stderr`` file of every executor the worker launched (``work/<app>/<id>/``)."""
        return sorted((self.run_dir / "work").glob("app-*/*/stderr"))

    def logs(self) -> str:
        """The tail of the master's and the worker's logs, for failure messages."""
        parts = []
        for role in reversed(SPARK_ROLES):
            path = self.run_dir / "logs" / f"{role}.log"
            if path.exists():
                tail = "\n".join(path.read_text(errors="replace").splitlines()[-20:])
                parts.append(f"--- {role} log ({path}):\n{tail}")
        return "\n".join(parts)


@dataclass
class CollectorProcess:
    """``sluice collect CONFIG`` in a child process, its output in ``log_path``."""

    config_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        assert self.process is not None, "the collector was not started"
        return self.process.pid

    def start(self) -> CollectorProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            sluice_command("collect", str(self.config_path)),
            cwd=REPO_ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the collector dies without sealing or releasing its lease."""
        os.kill(self.pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=30)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (the collector seals what it read and releases its lease), SIGKILL after
        ``timeout`` seconds; returns the exit code (``None`` if it was never started)."""
        if self.process is None:
            return None
        try:
            if self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.process.pid, signal.SIGTERM)
                try:
                    self.process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.process.pid, signal.SIGKILL)
                    self.process.wait(timeout=30)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None
        return self.process.returncode

    def output(self) -> str:
        """What the collector printed so far (for failure messages)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
