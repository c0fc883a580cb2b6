"""A long-running ``sluice collect`` in a subprocess.

:class:`TailingCollector` runs ``sluice --info collect CONFIG --metrics-port PORT`` in a process
group of its own, its output in files (for the rotation messages it logs), and tells when it has
read everything (its live metrics). :class:`pipeline_core.testing.CheckpointRequests` requests
the checkpoints it seals while it runs.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from pipeline_core.collector import read_metrics
from pipeline_core.config import load_pipeline_config
from tests.support.faults import REPO, sluice_command
from tests.support.processes import free_port, stop_group

START_SECONDS = 60.0
STOP_SECONDS = 120.0
_LOG_LEVEL = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")


class TailingCollector:
    """``sluice --info collect CONFIG`` until :meth:`stop` (SIGTERM: it seals what it read).

    ``with`` starts it and waits until it collects; leaving the block ends its process group
    whatever happened (SIGTERM, then SIGKILL after ``STOP_SECONDS``).
    """

    def __init__(self, config_path: Path, folder: Path) -> None:
        self.config_path = config_path
        self.stdout_path = folder / "collector.out"
        self.stderr_path = folder / "collector.log"
        self.metrics_port = free_port()
        self.returncode: int | None = None
        self._folder = folder
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TailingCollector:
        self._folder.mkdir(parents=True, exist_ok=True)
        command = sluice_command(
            "--info",
            "collect",
            str(self.config_path),
            "--metrics-port",
            str(self.metrics_port),
            "--metrics-file-labels",  # tracks() looks for a file's series
        )
        with open(self.stdout_path, "wb") as stdout, open(self.stderr_path, "wb") as stderr:
            self._process = subprocess.Popen(
                command, cwd=REPO, stdout=stdout, stderr=stderr, start_new_session=True
            )
        try:
            self._wait_started()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._process is not None and self.returncode is None:
            self.returncode = stop_group(self._process, signal.SIGTERM, STOP_SECONDS)

    def _wait_started(self) -> None:
        """Until it says it is collecting and serves its metrics (the server starts just
        after it says so: a first look at its metrics could find nobody listening)."""
        assert self._process is not None
        deadline = time.monotonic() + START_SECONDS
        while b"collecting" not in self.stdout_path.read_bytes() or not self._serving():
            if self._process.poll() is not None:
                raise AssertionError(
                    f"sluice collect exited with {self._process.returncode} at its start:\n"
                    f"{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"sluice collect did not start within {START_SECONDS:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.05)

    def _serving(self) -> bool:
        """Whether its metrics port takes a connection."""
        try:
            socket.create_connection(("127.0.0.1", self.metrics_port), timeout=1).close()
        except OSError:
            return False
        return True

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def metrics(self) -> dict[str, float]:
        """Its live Prometheus samples, by name with labels (``sluice_unread_bytes{...}``)."""
        if not self.alive:
            raise AssertionError(f"sluice collect exited:\n{self.log_tail()}")
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def unread_bytes(self) -> float:
        """Bytes of the files it tracks that it has not read yet."""
        return sum(
            value
            for name, value in self.metrics().items()
            if name.startswith("sluice_unread_bytes{")
        )

    def tracks(self, path: Path) -> bool:
        """Whether it tracks the file at ``path`` (under that name)."""
        label = f'path="{path}"'
        return any(
            name.startswith("sluice_file_unread_bytes{") and label in name
            for name in self.metrics()
        )

    def wait_caught_up(self, settle: float, timeout: float) -> bool:
        """Wait until it has read every byte of its files and kept so for ``settle`` seconds
        (longer than a discovery interval: files it has not found yet are not in its metrics).
        Returns False if it was still behind after ``timeout`` seconds (:meth:`files` tells
        where).

        Raises:
            AssertionError: it exited.
        """
        deadline = time.monotonic() + timeout
        since: float | None = None
        while True:
            if not self.alive:
                raise AssertionError(f"sluice collect exited:\n{self.log_tail()}")
            now = time.monotonic()
            if self.unread_bytes() > 0:
                since = None
            elif since is None:
                since = now
            elif now - since >= settle:
                return True
            if now > deadline:
                return False
            time.sleep(0.1)

    def files(self) -> list[str]:
        """The files it tracks, as its last metrics file shows them (state, offsets, size)."""
        config = load_pipeline_config(self.config_path)
        document = read_metrics(config.data_dir, config.name) or {"files": []}
        return [
            f"{f['fingerprint']} {f['state']} {f['path']}: read {f['read_offset']} of "
            f"{f['size']}, sealed {f['sealed_offset']}"
            for f in document["files"]
        ]

    def stop(self) -> int:
        """SIGTERM: it seals what it has read and exits; its exit status."""
        assert self._process is not None
        self.returncode = stop_group(self._process, signal.SIGTERM, STOP_SECONDS)
        assert self.returncode is not None
        return self.returncode

    def log_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def warnings(self) -> list[str]:
        """Its log lines at WARNING or above."""
        return [line for line in self.log_text().splitlines() if _LOG_LEVEL.match(line)]
