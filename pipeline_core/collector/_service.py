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

log = logging.getLogger(__name__)

RELOAD_POLL_SECONDS = 2.0


class CollectorService:
    """Serves every pipeline config of ``path`` (a YAML file or a folder of them) with one
    :class:`CollectorSession`.

    In continuous mode (:meth:`run`) the configs are looked at again every
    ``RELOAD_POLL_SECONDS`` and at once on :meth:`reload` (``sluice collect`` calls it on
    SIGHUP): an added pipeline starts, a removed one seals what it read and stops, a changed
    one seals, stops and starts again on its new config from its sealed offsets. Nothing read
    is lost across a reload. Metrics are written while it runs, and served with ``/health`` and
    ``/ready`` on ``metrics_address`` (``HOST:PORT``); with ``metrics_file_labels``, with a
    series per file, labelled with its path (see :class:`MetricsExporter`).

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
        while not self._stop.is_set():
            self._reload.wait(RELOAD_POLL_SECONDS)
            self._reload.clear()
            if self._stop.is_set():
                return
            try:
                self._apply_changes()
            except Exception as exc:  # a bad reload never stops collection
                log.error("config reload failed: %s", exc)
            self._publish_problems()

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
