"""Publishing a running collector's metrics: files for ``sluice status``, Prometheus text,
and the ops endpoints."""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from pipeline_core._file_modes import make_private_dirs, write_private_file
from pipeline_core.collector._metric_families import metrics_registry, process_registry
from pipeline_core.collector._metrics import PipelineMetrics
from pipeline_core.collector._ops_server import ListenAddress, OpsServer
from pipeline_core.collector._readiness import HealthProbes

log = logging.getLogger(__name__)

METRICS_FOLDER = "collector"
TEXTFILE_REFRESH_SECONDS = 60.0
"""A data directory's ``metrics.prom`` is made again at every interval where one of its
pipelines' metrics changed, and at least this often (for the process's own: CPU, memory);
in between it is only touched (its time tells a textfile collector it is live)."""
"""Under a pipeline's data directory: ``<pipeline>.json`` and ``metrics.prom``."""


def metrics_file(data_dir: Path, pipeline: str) -> Path:
    """Where a running collector writes a pipeline's metrics (read by ``sluice status``)."""
    return data_dir / METRICS_FOLDER / f"{pipeline}.json"


class MetricsExporter:
    """Every ``interval`` seconds, writes each pipeline's metrics as JSON to
    ``<data_dir>/collector/<pipeline>.json`` and, from its Prometheus registry (see
    :func:`metrics_registry`), the metrics of the pipelines of that data directory and the
    process's to ``<data_dir>/collector/metrics.prom`` (atomically: write, then rename; a node
    exporter's textfile collector running as the same user, or root, can read it: like
    everything under ``data_dir`` they are 0600 in a 0700 folder). A file whose content has
    not changed is only touched: a pipeline's JSON when its metrics are equal to those it
    holds (not even encoded again), the textfile when none of its pipelines changed, for up
    to ``TEXTFILE_REFRESH_SECONDS``. With
    ``address`` (``HOST:PORT``, see :meth:`ListenAddress.parse`), also serves the same
    registry on ``/metrics`` and ``probes`` on ``/health`` and ``/ready``
    (:class:`OpsServer`).

    ``port`` (and ``host``, default 127.0.0.1) is the older way to give the address.

    ``file_labels``: the per-file series, labelled with each file's path, in the registry
    (off: each source's files summed; see :func:`pipeline_families`).

    Threading model: its own daemon thread (and the HTTP server's); it only calls
    ``snapshot()`` and the probes, which must be safe from any thread.

    Raises (``__init__``):
        ListenAddressError: ``address`` is not ``HOST:PORT``.
        OSError: the address cannot be listened on (in use, say).
    """

    def __init__(
        self,
        snapshot: Callable[[], list[PipelineMetrics]],
        data_dir_of: Callable[[str], Path],
        *,
        interval: float = 5.0,
        address: str | ListenAddress | None = None,
        probes: HealthProbes | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        file_labels: bool = False,
    ) -> None:
        if address is not None and port is not None:
            raise ValueError("give the metrics address or its port, not both")
        if isinstance(address, str):
            address = ListenAddress.parse(address)
        elif address is None and port is not None:
            address = ListenAddress(host, port)
        self._snapshot = snapshot
        self._data_dir_of = data_dir_of
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sluice-metrics", daemon=True)
        self._written: dict[Path, PipelineMetrics] = {}
        """The metrics each pipeline's JSON file holds: a file whose metrics have not changed
        is only touched (its time is how readers tell a live collector's file)."""
        self._paths: dict[str, tuple[Path, Path, Path]] = {}
        """By pipeline: its data directory, metrics folder and JSON file (:meth:`_paths_of`)."""
        self._textfile_made: dict[Path, float] = {}
        """When (``time.monotonic()``) each ``metrics.prom`` was last made."""
        self._writing: list[PipelineMetrics] | None = None
        """The snapshot being written (the text file's families are made from it, not from
        a second snapshot of every pipeline)."""
        self.registry = metrics_registry(self._pipelines_now, file_labels=file_labels)
        self._families = metrics_registry(
            self._pipelines_now, process=False, file_labels=file_labels
        )
        """The registry's pipeline families alone (the textfile's, made again only when one
        of its pipelines changed) ..."""
        self._process = process_registry()
        """... and its process families (made at every refresh)."""
        self._families_text: dict[Path, tuple[tuple[PipelineMetrics, ...], bytes]] = {}
        """By ``metrics.prom``: the pipelines' metrics its pipeline families were made of,
        and their text."""
        self._server = OpsServer(address, self.registry, probes) if address is not None else None

    @property
    def port(self) -> int | None:
        return self._server.port if self._server is not None else None

    def start(self) -> MetricsExporter:
        self._thread.start()
        if self._server is not None:
            self._server.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._server is not None:
            self._server.stop()
        self.write()

    def _pipelines_now(self) -> list[PipelineMetrics]:
        writing = self._writing
        return writing if writing is not None else self._snapshot()

    def write(self) -> None:
        try:
            metrics = self._snapshot()
        except Exception as exc:  # a pipeline added or removed meanwhile: next time
            log.debug("metrics snapshot failed: %s", exc)
            return
        self._writing = metrics
        try:
            self._write(metrics)
        finally:
            self._writing = None

    def _write(self, metrics: list[PipelineMetrics]) -> None:
        folders: dict[Path, dict[str, PipelineMetrics]] = {}
        written: dict[Path, PipelineMetrics] = {}
        changed: set[Path] = set()
        for item in metrics:
            folder, path = self._paths_of(item.pipeline)
            pipelines = folders.get(folder)
            if pipelines is None:
                pipelines = folders[folder] = {}
                _make_folder(folder)
            pipelines[item.pipeline] = item
            same = self._written.get(path) == item
            if not same:
                changed.add(folder)
            if (same and _touch(path)) or _write_atomically(
                path, json.dumps(item.to_dict()).encode()
            ):
                written[path] = item
        self._written = written
        now = time.monotonic()
        for folder, pipelines in folders.items():
            textfile = folder / "metrics.prom"
            made = self._textfile_made.get(textfile)
            if (
                folder not in changed
                and made is not None
                and now - made < TEXTFILE_REFRESH_SECONDS
                and _touch(textfile)
            ):
                continue
            items = tuple(pipelines[name] for name in sorted(pipelines))
            try:
                known = self._families_text.get(textfile)
                if known is None or known[0] != items:
                    families = generate_latest(_Pipelines(self._families, set(pipelines)))
                    known = self._families_text[textfile] = (items, families)
                text = known[1] + generate_latest(self._process)
            except Exception as exc:  # written again at the next interval
                log.warning("cannot write %s: %s", textfile, exc)
                continue
            if _write_atomically(textfile, text):
                self._textfile_made[textfile] = now
        for textfile in [t for t in self._families_text if t.parent not in folders]:
            del self._families_text[textfile]

    def _paths_of(self, pipeline: str) -> tuple[Path, Path]:
        """The metrics folder of ``pipeline`` and its JSON file there (remembered while its
        data directory stays the same: making the paths of 100 pipelines every 5 s was a
        third of an idle collector's metrics thread)."""
        data_dir = self._data_dir_of(pipeline)
        known = self._paths.get(pipeline)
        if known is None or known[0] != data_dir:
            folder = data_dir / METRICS_FOLDER
            known = self._paths[pipeline] = (data_dir, folder, folder / f"{pipeline}.json")
        return known[1], known[2]

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.write()


class _Pipelines(Collector):
    """``registry``'s families with only the samples of ``pipelines`` (and those of no
    pipeline: the build's, the process's)."""

    def __init__(self, registry: CollectorRegistry, pipelines: set[str]) -> None:
        self._registry = registry
        self._pipelines = pipelines

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.collect():
            pipelines = self._pipelines
            samples = [
                s
                for s in family.samples
                if (pipeline := s.labels.get("pipeline")) is None or pipeline in pipelines
            ]
            if samples or not family.samples:
                kept = copy.copy(family)  # a collector may hand out the same family each time
                kept.samples = samples
                yield kept


def read_metrics(data_dir: Path, pipeline: str, max_age: float = 60.0) -> dict[str, Any] | None:
    """The metrics a running collector wrote for ``pipeline``, if written in the last
    ``max_age`` seconds."""
    path = metrics_file(data_dir, pipeline)
    try:
        if time.time() - path.stat().st_mtime > max_age:
            return None
        document: dict[str, Any] = json.loads(path.read_text())
        return document
    except (OSError, ValueError):
        return None


def _make_folder(folder: Path) -> None:
    try:
        make_private_dirs(folder)
    except OSError as exc:  # each file says so
        log.debug("cannot make %s: %s", folder, exc)


def _touch(path: Path) -> bool:
    """Set ``path``'s times to now; whether it could (a file deleted meanwhile cannot)."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True


def _write_atomically(path: Path, text: bytes) -> bool:
    """Write ``path`` whole or not at all; whether it was written (a failure is logged)."""
    try:
        temporary = path.with_suffix(path.suffix + ".tmp")
        write_private_file(temporary, text)
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("cannot write %s: %s", path, exc)
        return False
    return True
