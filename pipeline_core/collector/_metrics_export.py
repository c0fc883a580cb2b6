"""Publishing a running collector's metrics: files for ``sluice status``, Prometheus text."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pipeline_core.collector._metrics import PipelineMetrics, prometheus_text

log = logging.getLogger(__name__)

METRICS_FOLDER = "collector"
"""Under a pipeline's data directory: ``<pipeline>.json`` and ``metrics.prom``."""


def metrics_file(data_dir: Path, pipeline: str) -> Path:
    """Where a running collector writes a pipeline's metrics (read by ``sluice status``)."""
    return data_dir / METRICS_FOLDER / f"{pipeline}.json"


class MetricsExporter:
    """Every ``interval`` seconds, writes each pipeline's metrics as JSON to
    ``<data_dir>/collector/<pipeline>.json`` and all of them as Prometheus text to
    ``<data_dir>/collector/metrics.prom`` (atomically: write, then rename; a node exporter's
    textfile collector can read it); with ``port``, also serves ``GET /metrics`` on
    127.0.0.1 (or ``host``).

    Threading model: its own daemon thread (and the HTTP server's); it only calls
    ``snapshot()``, which must be safe from any thread.
    """

    def __init__(
        self,
        snapshot: Callable[[], list[PipelineMetrics]],
        data_dir_of: Callable[[str], Path],
        *,
        interval: float = 5.0,
        port: int | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self._snapshot = snapshot
        self._data_dir_of = data_dir_of
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sluice-metrics", daemon=True)
        self._server: ThreadingHTTPServer | None = None
        if port is not None:
            self._server = ThreadingHTTPServer((host, port), _handler(snapshot))

    @property
    def port(self) -> int | None:
        return self._server.server_address[1] if self._server is not None else None

    def start(self) -> MetricsExporter:
        self._thread.start()
        if self._server is not None:
            threading.Thread(
                target=self._server.serve_forever, name="sluice-metrics-http", daemon=True
            ).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.write()

    def write(self) -> None:
        try:
            metrics = self._snapshot()
        except Exception as exc:  # a pipeline added or removed meanwhile: next time
            log.debug("metrics snapshot failed: %s", exc)
            return
        folders: dict[Path, list[PipelineMetrics]] = {}
        for item in metrics:
            folder = self._data_dir_of(item.pipeline) / METRICS_FOLDER
            folders.setdefault(folder, []).append(item)
            _write_atomically(folder / f"{item.pipeline}.json", json.dumps(item.to_dict()))
        for folder, items in folders.items():
            _write_atomically(folder / "metrics.prom", prometheus_text(items))

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.write()


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


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(path.suffix + ".tmp")
        temporary.write_text(text)
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("cannot write %s: %s", path, exc)


def _handler(snapshot: Callable[[], list[PipelineMetrics]]) -> type[BaseHTTPRequestHandler]:
    class MetricsHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = prometheus_text(snapshot()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    return MetricsHandler
