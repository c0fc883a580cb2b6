"""The acker in the collector: every chunk's tree completes, committed offsets, replays after
a sink outage longer than the acker timeout, and in-flight trees carried over a restart."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.acker import TreeOutcome, TreeSource
from pipeline_core.collector import Collector
from pipeline_core.collector._delivery_tracking import DeliveryTracker
from pipeline_core.config import MultilineConfig, MultilinePreset, PipelineConfig
from pipeline_core.metastore import AckerTreeRecord, Metastore
from pipeline_core.source import LONG_LINE_PREFIX_BYTES, FileWatcher, LongLine, TimeSlicedReader
from pipeline_core.testing import (
    Received,
    RecordingSink,
    SwitchableSink,
    append,
    lines,
    source_of,
    staged_payloads,
)
from tests.pipeline_core.collector.support import delivered, with_stub_group
from tests.support.python_logs import ServiceLog


@pytest.mark.timeout(60)
def with_stub(folder: Path, metastore_url: str, **collector: Any) -> PipelineConfig:
    return with_stub_group(folder, metastore_url, collector={"read_chunk_bytes": 4096, **collector})


def test_should_complete_every_tree_and_commit_every_byte_of_a_clean_run(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, *lines("a", 3000))

    result = Collector(config, metastore, sinks={"stub": RecordingSink("stub")}).run_once()

    assert result.acker is not None
    assert result.acker.pending == 0
    assert result.acker.acked > 1
    assert (result.acker.replayed, result.acker.lost) == (0, 0)
    assert list(result.acker.committed_offsets.values()) == [log.stat().st_size]
    assert metastore.acker_trees(config.name, config.collector.host) == []


@pytest.mark.timeout(60)
def test_should_hold_reading_at_the_limit_of_trees_in_flight_and_lose_nothing(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub(tmp_path, metastore_url, max_pending_trees=2)
    append(tmp_path / "logs" / "access.log", *lines("a", 5000))
    sink = RecordingSink("stub")

    result = Collector(config, metastore, sinks={"stub": sink}).run_once()

    assert result.acker is not None and result.acker.pending == 0
    assert delivered(sink) == lines("a", 5000)
    assert sorted(staged_payloads(config)) == lines("a", 5000)


@pytest.mark.timeout(90)
def test_should_replay_to_a_sink_down_longer_than_the_acker_timeout(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub(tmp_path, metastore_url, acker_timeout_s=0.3)
    append(tmp_path / "logs" / "access.log", *lines("a", 3000))
    sink = SwitchableSink("stub", up=False)
    collector = Collector(config, metastore, sinks={"stub": sink})

    def bring_back_up() -> None:
        time.sleep(1.5)  # five acker timeouts
        sink.up = True

    threading.Thread(target=bring_back_up, daemon=True).start()
    result = collector.run_once()

    assert result.acker is not None
    assert result.acker.timed_out > 0 and result.acker.replayed > 0
    assert set(delivered(sink)) == set(lines("a", 3000))  # at least once
    assert sorted(staged_payloads(config)) == lines("a", 3000)  # the lake: exactly once


@pytest.mark.timeout(60)
def test_should_redeliver_sealed_ranges_saved_in_flight_to_the_other_sinks_after_a_restart(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, *lines("a", 100))
    Collector(config, metastore, sinks={"stub": RecordingSink("stub")}).run_once()
    (tracked,) = metastore.files(config.name, config.collector.host)
    first_ten = b"".join(line + b"\n" for line in lines("a", 10))
    metastore.save_acker_trees(
        config.name,
        config.collector.host,
        [AckerTreeRecord(7, 99, "access", tracked.fingerprint, 0, len(first_ten), 10)],
    )
    append(log, *lines("b", 50))
    sink = RecordingSink("stub")

    Collector(config, metastore, sinks={"stub": sink}).run_once()

    assert sorted(delivered(sink)) == sorted(lines("a", 10) + lines("b", 50))
    replays = [c for batch in sink.delivered for c in batch.chunks if c.replay]
    assert [(c.start, c.end) for c in replays] == [(0, len(first_ten))]
    assert sorted(staged_payloads(config)) == sorted(lines("a", 100) + lines("b", 50))


@pytest.mark.timeout(60)
def test_should_redeliver_a_saved_over_long_line_as_its_prefix_after_a_restart(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub(tmp_path, metastore_url, max_line_bytes=1024)
    log = tmp_path / "logs" / "access.log"
    append(log, b"first", b"L" * 50_000, b"last")
    Collector(config, metastore, sinks={"stub": RecordingSink("stub")}).run_once()
    (tracked,) = metastore.files(config.name, config.collector.host)
    metastore.save_acker_trees(
        config.name,
        config.collector.host,
        [AckerTreeRecord(7, 99, "access", tracked.fingerprint, 6, 6 + 50_001, 1)],
    )
    sink = RecordingSink("stub")

    Collector(config, metastore, sinks={"stub": sink}).run_once()

    (replay,) = [c for batch in sink.delivered for c in batch.chunks if c.replay]
    assert (replay.start, replay.end, replay.lines) == (6, 50_007, 1)
    assert replay.data == b"L" * LONG_LINE_PREFIX_BYTES
    assert replay.long_line == LongLine(50_000, True)


def test_should_read_a_multiline_sources_range_again_as_its_events(tmp_path: Path) -> None:
    service = ServiceLog(tmp_path)
    try:
        for number in range(20):
            service.info(f"step {number}")
            service.failure(f"step {number}")
    finally:
        service.close()
    service.quiet_for(10)
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON)
    watcher = FileWatcher([source_of(tmp_path, "app.log*", multiline=multiline)], "host", 1024)
    watcher.scan()
    reader = TimeSlicedReader(watcher, chunk_bytes=4096, max_line_bytes=4096, slice_seconds=10)
    received = Received()
    while not reader.read_slice(received.publish).caught_up:
        pass
    tracker = DeliveryTracker(
        watcher,
        timeout=1.0,
        max_pending=100,
        replays_wanted=True,
        max_line_bytes=4096,
        framing=reader.framing,
    )
    for chunk in received:
        source = TreeSource(chunk.source, chunk.fingerprint, chunk.start, chunk.end, chunk.lines)
        tracker.on_tree_failed(1, source, TreeOutcome.TIMED_OUT)

    assert [chunk.events for chunk in tracker.replays] == [chunk.events for chunk in received]
    assert Received(tracker.replays).events() == service.written.events
