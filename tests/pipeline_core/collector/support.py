"""Helpers shared by the collector's tests: lines, stub-sink pipelines, waiting, tailing, a
request probe."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline_core.collector import CollectorResult
from pipeline_core.config import PipelineConfig
from pipeline_core.metastore import RequestProbe
from pipeline_core.testing import StubSink
from tests.support.pipelines import load

FAST_RUNNER = {"backoff_sleep_increment_s": 0.01, "max_backoff_sleep_s": 0.05}
"""Sink runner settings that keep retries quick in tests."""


def delivered(sink: StubSink) -> list[bytes]:
    """Every line a stub sink received, in order."""
    return b"".join(c.data for batch in sink.delivered for c in batch.chunks).splitlines()


def with_stub_group(
    folder: Path,
    metastore_url: str,
    *,
    group: dict[str, Any] | None = None,
    **extra: Any,
) -> PipelineConfig:
    """A pipeline with the lake and a default group ``stub`` whose ``null`` sink a test
    replaces by a stub made in code (``Collector(..., sinks={"stub": ...})``)."""
    return load(
        folder,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "stub": {"type": "null"}},
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {"name": "stub", "sinks": ["stub"], **FAST_RUNNER, **(group or {})},
        ],
        **extra,
    )


class Tailing:
    """``run()`` (a collector's or a service's) in a background thread until ``stop()``."""

    def __init__(self, run: Callable[[], CollectorResult], stop: Callable[[], None]) -> None:
        self.result: CollectorResult | None = None
        self.error: BaseException | None = None
        self._stop = stop
        self._thread = threading.Thread(target=self._run, args=(run,), daemon=True)
        self._thread.start()

    def _run(self, run: Callable[[], CollectorResult]) -> None:
        try:
            self.result = run()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> CollectorResult:
        self._stop()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the collector did not stop"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class PipeProbe(RequestProbe):
    """A request probe whose descriptor is a pipe's read end (readable once :attr:`write` is
    written to); it never says a request came."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()

    def changed(self) -> bool:
        return False

    def fileno(self) -> int | None:
        return self.read

    def close(self) -> None:
        os.close(self.read)
        os.close(self.write)
