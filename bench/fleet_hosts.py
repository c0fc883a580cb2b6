"""The hosts of case 20's fleet: one pipeline config per host, the logs a writer appends to,
and the ``sluice collect`` processes that serve them.

Every host runs the same pipeline (one name, one metastore URL and ``metastore.pooling``, one
local staging folder) under its own ``collector.host``, with a data folder of its own and
:data:`FILES_PER_HOST` logs. The writer is one thread of the suite: it appends a numbered nginx
"combined" line to one file at a time, each file once every :data:`WRITE_EVERY_S`, and counts
the lines it wrote per host (the first line of each file, which names it, included).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import yaml

from bench import common
from pipeline_core.config import MetastorePooling

PIPELINE = "fleet"
FILES_PER_HOST = 3
WRITE_EVERY_S = 2.0
"""How often each file gets a line: slowly, as a quiet service logs."""
STOP_TIMEOUT_S = 120.0


class Fleet:
    """``size`` hosts (``h000`` ...) under ``work``, their configs written (``pooling``: what
    sits between them and the metastore), their logs made with their first lines; no process
    started yet."""

    def __init__(
        self,
        work: Path,
        size: int,
        metastore_url: str,
        pooling: MetastorePooling = MetastorePooling.NONE,
    ) -> None:
        self.work = work
        self.hosts = [f"h{index:03d}" for index in range(size)]
        self.configs = {
            host: self.write_config(self.work / "hosts" / host, host, metastore_url, pooling)
            for host in self.hosts
        }
        self.writer = LineWriter(
            {
                host: [self.logs(host) / f"f{i}.log" for i in range(FILES_PER_HOST)]
                for host in self.hosts
            }
        )
        self.collectors: dict[str, subprocess.Popen[bytes]] = {}

    def logs(self, host: str) -> Path:
        return self.work / "hosts" / host / "logs"

    def write_config(
        self,
        folder: Path,
        host: str,
        metastore_url: str,
        pooling: MetastorePooling = MetastorePooling.NONE,
    ) -> Path:
        """``folder/pipeline.yaml``: the pipeline as ``host`` runs it, its metastore at
        ``metastore_url`` (what a reader that is no host opens has another role's URL: the
        config's URL wins over any the reader is given), ``metastore.pooling`` set when it is
        not ``none``."""
        metastore: dict[str, str] = {"url": metastore_url}
        if pooling is not MetastorePooling.NONE:
            metastore["pooling"] = pooling.value
        folder.mkdir(parents=True)
        document = {
            "name": PIPELINE,
            "sources": [
                {
                    "name": "app",
                    "paths": [str(self.logs(host) / "*.log")],
                    "format": "nginx_combined",
                }
            ],
            "data_dir": str(folder / "data"),
            "handoff": {"staging_dir": str(self.work / "staging")},
            "metastore": metastore,
            "collector": {"host": host},
            "schedule": None,
        }
        path = folder / "pipeline.yaml"
        path.write_text(yaml.safe_dump(document))
        return path

    def start(self, stagger_s: float) -> None:
        """Start every host's ``sluice collect CONFIG``, one every ``stagger_s``; each one's
        standard error goes to ``collector.log`` beside its config (a pipe nobody reads for
        minutes could fill and block it)."""
        for host in self.hosts:
            with open(self.configs[host].parent / "collector.log", "wb") as errors:
                self.collectors[host] = subprocess.Popen(
                    [common.PYTHON, "-m", "pipeline_core", "collect", str(self.configs[host])],
                    cwd=common.ROOT,
                    env=common.child_env(),
                    stdout=subprocess.DEVNULL,
                    stderr=errors,
                )
            time.sleep(stagger_s)

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.collectors.values()]

    def check_running(self) -> None:
        """Raise if a collector has stopped, with the end of what it said."""
        for host, process in self.collectors.items():
            if process.poll() is not None:
                raise RuntimeError(
                    f"the collector of {host} stopped ({process.returncode}): {self.said(host)}"
                )

    def said(self, host: str) -> str:
        """The end of a collector's standard error."""
        path = self.configs[host].parent / "collector.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else ""

    def stop(self) -> dict[str, int]:
        """SIGTERM to every collector at once, as a service manager stops them; their exit
        statuses once they ended (-9: killed after :data:`STOP_TIMEOUT_S`)."""
        for process in self.collectors.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        exits = {}
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for host, process in self.collectors.items():
            try:
                exits[host] = process.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                exits[host] = -signal.SIGKILL
        return exits


class LineWriter:
    """Appends numbered access lines to the files of every host, one file at a time."""

    def __init__(self, files: dict[str, list[Path]]) -> None:
        self._files = [(host, path) for host, paths in files.items() for path in paths]
        self.written: Counter[str] = Counter()
        """Lines written per host (read it once the writer stopped)."""
        for host, path in self._files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(common.first_line(f"{host}-{path.name}"))
            self.written[host] += 1

    @contextmanager
    def running(self) -> Iterator[None]:
        """Write from a thread for the block: a line every :data:`WRITE_EVERY_S` per file, the
        files in turn."""
        handles = [(host, open(path, "ab", buffering=0)) for host, path in self._files]  # noqa: SIM115
        sequence = 0

        def write_one() -> None:
            nonlocal sequence
            host, handle = handles[sequence % len(handles)]
            stamp = datetime.now(timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")
            handle.write(
                common.numbered_access_line(
                    "10.0.0.1", f"/fleet/{host}/", sequence, stamp, "fleet-bench/1.0"
                )
            )
            self.written[host] += 1
            sequence += 1

        try:
            with common.ticking(write_one, WRITE_EVERY_S / len(handles), "fleet-writer"):
                yield
        finally:
            for _, handle in handles:
                handle.close()
