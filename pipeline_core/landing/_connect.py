"""Running the landing job on a warm Spark Connect server instead of through spark-submit.

A spark-submit starts a JVM, a SparkSession and Python workers for every landing; a Spark
Connect server (``scripts/spark-connect.sh``) keeps them warm between landings. The job's
driver, ``spark_jobs/land.py``, then runs here as a child process of the caller (the Airflow
task, ``sluice land``) with ``--spark-connect``: it opens a session of its own on the server,
adds the spec's ``--py-files`` archive to it as Python artifacts (a new session per landing, so
the server's Python workers import the archive of this landing whatever ran before), lands and
prints the summary, exactly as under spark-submit. A child process, not this one, because
pyspark chooses between classic and Spark Connect once per process, and a kill must stop the
driver and leave nothing committed.

The child gets the spec's environment (``SLUICE_METASTORE_URL``) and the server's URL in
``SLUICE_SPARK_CONNECT_URL``, never on its command line (a token in the URL stays out of
process lists).
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping
from typing import IO, Any, Protocol

from pipeline_core.errors import LandingError
from pipeline_core.landing._spec import SparkJobSpec

SPARK_CONNECT_URL_ENV = "SLUICE_SPARK_CONNECT_URL"
"""The landing job's driver reads the Spark Connect server's URL (``sc://host:port``) from here,
and ``sluice land`` lands through that server when it is set."""
SPARK_CONNECT_CONN_TYPE = "spark_connect"
"""The Airflow connection type (the Spark provider's ``SparkConnectHook``) that makes the
landing task use Spark Connect instead of spark-submit."""
KILL_GRACE_S = 10.0
"""After SIGTERM, seconds a killed landing driver gets before SIGKILL."""
_OUTPUT_TAIL_LINES = 40

log = logging.getLogger(__name__)


class JobSubmitter(Protocol):
    """Runs one landing job.

    ``submit(application)`` runs the job to its end and raises if it failed (the lake tables
    then hold nothing committed of it); ``on_kill()``, from another thread, stops a running job;
    ``command_line(application)`` is what ``submit`` runs, fit for a log (secrets masked).
    """

    def submit(self, application: str = "") -> object: ...

    def on_kill(self) -> None: ...

    def command_line(self, application: str = "") -> str: ...


class JobLog(Protocol):
    """Where a :class:`SparkConnectSubmitter` writes the job's output (a ``logging.Logger``,
    a task's ``self.log``)."""

    def info(self, msg: Any, /, *args: Any) -> Any: ...


class SparkConnectSubmitter:
    """A :class:`JobSubmitter` that runs the job of ``spec`` on the Spark Connect server at
    ``url``, its driver a child process of this one (see the module doc).

    ``env_vars`` are laid over the spec's; the job's output goes to ``logger`` line by line.
    One instance runs one job at a time; :meth:`on_kill` may be called from any thread.
    """

    def __init__(
        self,
        spec: SparkJobSpec,
        url: str,
        *,
        env_vars: Mapping[str, str] | None = None,
        logger: JobLog | None = None,
    ) -> None:
        if not url.startswith("sc://"):
            raise ValueError(f"a Spark Connect URL starts with sc://, not {url.split(':')[0]}:")
        self.spec = spec
        self._url = url
        self._env_vars = {**spec.env_vars, **(env_vars or {})}
        self._log: JobLog = logger or log
        self._process: subprocess.Popen[str] | None = None
        self._killed = threading.Event()

    def command(self) -> list[str]:
        """The driver's command line (no secret: the URLs go in its environment)."""
        return spark_connect_command(self.spec)

    def command_line(self, application: str = "") -> str:
        """The driver's command line (``application`` is the spec's)."""
        return shlex.join(self.command())

    def submit(self, application: str = "") -> None:
        """Run the job and wait for it.

        Raises:
            LandingError: the driver failed (its last lines are in the message) or was killed.
        """
        env = {**os.environ, **self._env_vars, SPARK_CONNECT_URL_ENV: self._url}
        self._killed.clear()
        tail: deque[str] = deque(maxlen=_OUTPUT_TAIL_LINES)
        try:
            process = subprocess.Popen(
                self.command(),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,  # a kill reaches the driver, not the caller's group
            )
        except OSError as exc:
            raise LandingError(f"cannot start the landing job's driver: {exc}") from exc
        self._process = process
        try:
            self._follow(process.stdout, tail)
            status = process.wait()
        except BaseException:  # an interrupt here: the driver stops with us
            self._stop(process)
            raise
        finally:
            self._process = None
        if status != 0:
            what = "was killed" if self._killed.is_set() else f"exited with status {status}"
            last = "\n".join(tail)
            raise LandingError(
                f"the landing job on Spark Connect ({self.spec.name}) {what}:\n{last}"
            )

    def on_kill(self) -> None:
        """Stop the running driver: SIGTERM (it releases its session, which stops the session's
        work on the server), SIGKILL after ``KILL_GRACE_S``. Nothing of the landing is
        committed."""
        process = self._process
        if process is not None:
            self._stop(process)

    def _stop(self, process: subprocess.Popen[str]) -> None:
        if process.poll() is not None:
            return
        self._killed.set()
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _follow(self, stream: IO[str] | None, tail: deque[str]) -> None:
        if stream is None:
            return
        with stream:
            for raw in stream:
                line = raw.rstrip("\n")
                tail.append(line)
                self._log.info("%s", line)


def spark_connect_command(spec: SparkJobSpec) -> list[str]:
    """How the landing job of ``spec`` runs as a Spark Connect client: this Python runs its
    application with its arguments, ``--spark-connect``, its ``--py-files`` and its ``--jars``."""
    command = [sys.executable, spec.application, *spec.application_args, "--spark-connect"]
    if spec.py_files:
        command += ["--py-files", spec.py_files]
    if spec.jars:
        command += ["--jars", spec.jars]
    return command
