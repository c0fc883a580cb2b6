"""``CollectorService``: a collector over a file or folder of pipeline configs, reloading it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from pipeline_core.collector._collector import Collector
from pipeline_core.collector._config_problems import (
    CONFIG_PROBLEMS_REFRESH_S,
    ConfigProblem,
    remove_config_problems,
    write_config_problems,
)
from pipeline_core.collector._config_watch import ConfigChange, ConfigSource
from pipeline_core.collector._metrics_export import MetricsExporter
from pipeline_core.collector._results import CollectorResult
from pipeline_core.collector._session import CollectorSession
from pipeline_core.source import WatchTarget, open_file_events

log = logging.getLogger(__name__)

RELOAD_POLL_SECONDS = 2.0
"""How often the configs are looked at where no file event can announce their changes."""

RELOAD_FALLBACK_SECONDS = 30.0
"""How often the configs are looked at anyway where file events announce their changes (a
change inotify cannot see: a config folder on NFS written from another host). Looking at 100
configs every 2 s was a quarter of an idle collector's cost (0.13 % of a core)."""

CONFIG_EVENTS_SETTLE_SECONDS = 0.2
"""Once a config folder's event woke the watch, later ones are gathered this long (an editor's
or ``kubectl``'s writes, a ConfigMap's symlink swap, are one look)."""


class CollectorService:
    """Serves every pipeline config of ``path`` (a YAML file or a folder of them) with one
    :class:`CollectorSession`.

    In continuous mode (:meth:`run`) the configs are looked at again as soon as a file event
    says their folder changed (inotify on the config folder, or on the config file's folder: any
    entry, so a Kubernetes ConfigMap's swap of its ``..data`` symlink counts), every
    ``RELOAD_FALLBACK_SECONDS`` anyway (every ``RELOAD_POLL_SECONDS`` without file events), and
    at once on :meth:`reload` (``sluice collect`` calls it on SIGHUP): an added pipeline starts,
    a removed one seals what it read and stops, a changed one seals, stops and starts again on
    its new config from its sealed offsets. Nothing read is lost across a reload. Metrics are
    written while it runs, and served with ``/health`` and ``/ready`` on ``metrics_address``
    (``HOST:PORT``); with ``metrics_file_labels``, with a series per file, labelled with its
    path (see :class:`MetricsExporter`).

    In a folder, a config file that does not validate is logged, skipped and listed in
    :attr:`config_problems` (written for ``sluice status`` to
    ``<data_dir>/collector/config_problems.json`` while it runs): the other pipelines are
    served, and the file's pipeline starts at the first reload after it is fixed.

    Threading model: :meth:`run`/:meth:`run_once` on the thread that becomes the collector's
    mailbox thread; :meth:`reload` and :meth:`stop` from any thread.
    """

    def __init__(
        self,
        path: Path,
        *,
        metrics_address: str | None = None,
        metrics_port: int | None = None,
        metrics_file_labels: bool = False,
    ) -> None:
        self._path = path
        self._source = ConfigSource(path)
        if metrics_address is None and metrics_port is not None:
            metrics_address = f"127.0.0.1:{metrics_port}"
        self._metrics_address = metrics_address
        self._metrics_file_labels = metrics_file_labels
        self._data_dirs: dict[str, Path] = {}
        self._reload = threading.Event()
        self._stop = threading.Event()
        self._problems_written: tuple[tuple[ConfigProblem, ...], frozenset[Path], float] | None
        self._problems_written = None
        configs = self._source.load()
        self._session = CollectorSession(configs)
        self._data_dirs.update((config.name, config.data_dir) for config in configs)
        self.exporter: MetricsExporter | None = None

    @property
    def collector(self) -> Collector:
        return self._session.collector

    @property
    def config_problems(self) -> tuple[ConfigProblem, ...]:
        """The config files not served as written now (any thread)."""
        return self._source.problems

    def run_once(self) -> CollectorResult:
        return self._session.run(once=True)

    def run(self) -> CollectorResult:
        self.exporter = MetricsExporter(
            self.collector.metrics,
            self._data_dir_of,
            address=self._metrics_address,
            probes=self.collector,
            file_labels=self._metrics_file_labels,
        ).start()
        self._publish_problems()
        watcher = threading.Thread(target=self._watch, name="sluice-config-watch", daemon=True)
        watcher.start()
        try:
            return self._session.run()
        finally:
            self._stop.set()
            self._reload.set()
            watcher.join(timeout=10)
            self.exporter.stop()
            remove_config_problems(self._data_dirs.values())

    def reload(self) -> None:
        """Look at the configs again now (any thread, also a signal handler)."""
        self._reload.set()

    def stop(self) -> None:
        self._stop.set()
        self._session.stop()

    def close(self) -> None:
        """Close the metastores of a service that will not run."""
        self._session.close()

    def _watch(self) -> None:
        events = open_file_events(self._reload.set, settle=CONFIG_EVENTS_SETTLE_SECONDS)
        try:
            covered = events.watch("configs", self._config_targets())
            while not self._stop.is_set():
                self._reload.wait(RELOAD_FALLBACK_SECONDS if covered else RELOAD_POLL_SECONDS)
                self._reload.clear()
                events.take()
                if self._stop.is_set():
                    return
                try:
                    self._apply_changes()
                except Exception as exc:  # a bad reload never stops collection
                    log.error("config reload failed: %s", exc)
                self._publish_problems()
        finally:
            events.close()

    def _config_targets(self) -> list[WatchTarget]:
        """The folder whose entries the configs are: every entry and subfolder concerns them
        (a ConfigMap's files are symlinks through ``..data``, swapped by a rename)."""
        folder = self._path if self._path.is_dir() else self._path.parent
        return [WatchTarget(str(folder), ("*",), subfolders=True)]

    def _publish_problems(self) -> None:
        """Write :attr:`config_problems` for ``sluice status`` when they changed, when a
        pipeline's data directory joined, or when the file is about to go stale."""
        problems = self.config_problems
        data_dirs = frozenset(self._data_dirs.values())
        now = time.monotonic()
        written = self._problems_written
        if (
            written is not None
            and written[:2] == (problems, data_dirs)
            and now - written[2] < CONFIG_PROBLEMS_REFRESH_S
        ):
            return
        write_config_problems(data_dirs, self._path, problems)
        self._problems_written = (problems, data_dirs, now)

    def _apply_changes(self) -> None:
        for event in self._source.changes():
            log.info("pipeline %s %s", event.name, event.change.value)
            if event.change is ConfigChange.REMOVED:
                self._session.remove(event.name)
                continue
            assert event.config is not None
            self._data_dirs[event.name] = event.config.data_dir
            if event.change is ConfigChange.ADDED:
                self._session.add(event.config)
            else:
                self._session.replace(event.config)

    def _data_dir_of(self, pipeline: str) -> Path:
        return self._data_dirs.get(pipeline, Path("data"))
