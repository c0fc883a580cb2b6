"""A tailing collector with a multiline source: a traceback reaches the sinks as one event, and
the last event of a file that goes quiet is handed on after ``flush_after_s`` without any other
write to wake the collector."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline_core.collector import Collector
from pipeline_core.metastore import Metastore
from pipeline_core.testing import RecordingSink, wait_until
from tests.pipeline_core.collector.support import Tailing, with_stub_group
from tests.support.python_logs import ServiceLog

EVENTS_ONLY = {"discovery_interval_s": 30.0, "file_events_fallback_s": 30.0}
FLUSH_AFTER_S = 0.5


def events(sink: RecordingSink) -> list[bytes]:
    return [event.line for batch in sink.delivered for event in batch.events()]


@pytest.mark.timeout(60)
def test_should_deliver_a_quiet_files_last_traceback_whole_after_flush_after(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub_group(
        tmp_path,
        metastore_url,
        pattern="logs/app.log*",
        fmt="raw",
        source={"multiline": {"preset": "python", "flush_after_s": FLUSH_AFTER_S}},
        collector=EVENTS_ONLY,
    )
    (tmp_path / "logs").mkdir()
    service = ServiceLog(tmp_path / "logs")
    sink = RecordingSink("stub")
    collector = Collector(config, metastore, sinks={"stub": sink})
    tailing = Tailing(collector.run, collector.stop)
    try:
        service.info("started")
        wait_until(lambda: events(sink) == service.written.events, 10)
        service.info("loading")
        written = time.monotonic()
        service.failure("loading the model")
        wait_until(lambda: len(events(sink)) == 2, 10)  # "loading": proven whole by the next
        assert time.monotonic() - written < FLUSH_AFTER_S
        wait_until(lambda: events(sink) == service.written.events, 10)
        flushed = time.monotonic() - written
    finally:
        tailing.stop()
        service.close()

    assert FLUSH_AFTER_S <= flushed < FLUSH_AFTER_S + 2.0
    assert events(sink)[-1].count(b"\n") == service.written.events[-1].count(b"\n") > 3
