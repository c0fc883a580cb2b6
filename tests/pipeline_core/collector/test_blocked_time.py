"""Time blocked counts while a block lasts, and the counter never goes backwards."""

from __future__ import annotations

import itertools
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pipeline_core.collector import Collector, MetricsExporter
from pipeline_core.collector._blocked_time import BlockedClock, BlockedTime
from pipeline_core.metastore import Metastore
from pipeline_core.sinks import Status
from pipeline_core.testing import StubSink, append, lines, wait_until
from tests.pipeline_core.collector.support import Tailing, delivered
from tests.support.pipelines import load


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class HangingSink(StubSink):
    """Hangs in every call until :attr:`released` is set (at most ``limit_s`` per call, so a
    failing test never hangs), then delivers."""

    def __init__(self, name: str = "hanging", *, limit_s: float = 60.0) -> None:
        super().__init__(name)
        self.released = threading.Event()
        self.limit_s = limit_s

    def respond(self) -> Status:
        self.released.wait(self.limit_s)
        return self.deliver_from_channel()


def test_should_count_the_current_block_up_to_now() -> None:
    assert BlockedTime().seconds(5.0) == 0.0
    assert BlockedTime(2.0, since=10.0).seconds(13.5) == 5.5
    assert BlockedTime(2.0, since=10.0).seconds(9.0) == 2.0  # never less than the total
    assert BlockedTime(2.0).began(10.0).ended(14.0) == BlockedTime(6.0, None)
    assert BlockedTime(2.0, 10.0).began(12.0) == BlockedTime(2.0, 10.0)  # still the same block


def test_should_grow_while_blocked_and_keep_the_total_after() -> None:
    clock = ManualClock()
    blocked = BlockedClock(clock)

    blocked.mark(True)
    clock.now += 3.0
    during = blocked.seconds()
    clock.now += 2.0
    later = blocked.seconds()
    blocked.mark(True)  # another blocked turn: the same block
    blocked.mark(False)
    clock.now += 10.0
    after = blocked.seconds()

    assert (during, later, after) == (3.0, 5.0, 5.0)
    assert blocked.value == BlockedTime(5.0, None)


@pytest.mark.timeout(30)
def test_should_never_go_backwards_for_a_reader_on_another_thread() -> None:
    blocked = BlockedClock()
    stop = threading.Event()
    readings: list[float] = []

    def read() -> None:
        while not stop.is_set():
            readings.append(blocked.seconds())

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 1.0
    flips = 0
    while time.monotonic() < deadline:
        blocked.mark(flips % 2 == 0)
        flips += 1
    stop.set()
    reader.join()

    assert flips > 1000 and len(readings) > 1000
    assert all(a <= b for a, b in itertools.pairwise(readings))


def _blocked_seconds(url: str, missing: float | None = None) -> float:
    """The exported blocked seconds; ``missing`` if there is no such series yet (None: an
    AssertionError)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "sluice_blocked_seconds_total":
                return sample.value
    if missing is not None:
        return missing
    raise AssertionError(f"no sluice_blocked_seconds_total in:\n{text}")


@pytest.mark.timeout(90)
def test_should_export_blocked_seconds_growing_during_a_block(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "stub": {"type": "null"}},
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {"name": "stub", "sinks": ["stub"], "backoff_sleep_increment_s": 0.01},
        ],
        collector={
            "read_chunk_bytes": 4096,
            "ring_size": 4,
            "process_queue_size": 3,
            "send_queue_size": 3,
        },
    )
    hanging = HangingSink("stub")
    append(tmp_path / "logs" / "access.log", *lines("a", 20000))
    collector = Collector(config, metastore, sinks={"stub": hanging})
    exporter = MetricsExporter(
        collector.metrics, lambda _: tmp_path / "data", address="127.0.0.1:0", interval=60
    ).start()
    url = f"http://127.0.0.1:{exporter.port}/metrics"
    tailing = Tailing(collector.run, collector.stop)
    try:
        # Until the pipeline is served (a slower metastore: later), it has no series yet.
        wait_until(lambda: _blocked_seconds(url, missing=-1.0) > 0.0)
        readings = [_blocked_seconds(url)]
        for _ in range(8):  # the block lasts: the sink still hangs
            time.sleep(0.25)
            readings.append(_blocked_seconds(url))
        assert hanging.calls >= 1 and not hanging.released.is_set()
        hanging.released.set()
        wait_until(lambda: len(delivered(hanging)) == 20000)
        readings.append(_blocked_seconds(url))
        time.sleep(0.3)
        readings.append(_blocked_seconds(url))
    finally:
        hanging.released.set()
        tailing.stop()
        exporter.stop()

    during = readings[:9]
    assert all(b > a for a, b in itertools.pairwise(during)), readings
    assert during[-1] - during[0] >= 1.5, readings  # two seconds of blocking, counted as such
    assert all(b >= a for a, b in itertools.pairwise(readings)), readings
