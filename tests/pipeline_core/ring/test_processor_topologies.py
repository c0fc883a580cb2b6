"""Several BatchEventProcessors on one ring: fan-out, pipeline, diamond, back-pressure."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from pipeline_core.ring import EventHandler, RingBuffer, Sequence
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import (
    JOIN_TIMEOUT,
    RecordingHandler,
    StubEvent,
    make_processor,
    publish_values,
    running,
)


@dataclass
class FollowingHandler(EventHandler[StubEvent]):
    """Records values and checks that it never passes ``upstream`` (nor falls ``lag`` behind)."""

    upstream: list[Sequence]
    lead: Sequence | None = None
    max_lead: int = 0
    values: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
        for upstream in self.upstream:
            if upstream.get() < sequence:
                self.violations.append(f"saw {sequence} before upstream {upstream.get()}")
        if self.lead is not None and sequence - self.lead.get() > self.max_lead:
            self.violations.append(f"{sequence} ran {sequence - self.lead.get()} ahead")
        self.values.append(event.value)


@pytest.mark.timeout(60)
def test_should_deliver_every_event_to_each_fan_out_consumer() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 16)
    first, second = RecordingHandler(), RecordingHandler()
    processors = [make_processor(ring, first), make_processor(ring, second)]
    with running(*processors):
        publish_values(ring, range(500))
        wait_until(lambda: all(p.sequence.get() == 499 for p in processors))
    assert first.values == list(range(500))
    assert second.values == list(range(500))


@pytest.mark.timeout(60)
def test_should_let_pipeline_stage_see_an_event_only_after_its_upstream() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 16)
    upstream_handler = RecordingHandler(delay=0.0005)
    upstream = make_processor(ring, upstream_handler, gate=False)
    downstream_handler = FollowingHandler([upstream.sequence])
    downstream = make_processor(ring, downstream_handler, upstream.sequence)
    with running(upstream, downstream):
        publish_values(ring, range(300))
        wait_until(lambda: downstream.sequence.get() == 299)
    assert downstream_handler.violations == []
    assert upstream_handler.values == downstream_handler.values == list(range(300))


@pytest.mark.timeout(60)
def test_should_join_a_diamond_after_both_branches() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 32)
    left = make_processor(ring, RecordingHandler(), gate=False)
    right = make_processor(ring, RecordingHandler(delay=0.0002), gate=False)
    join_handler = FollowingHandler([left.sequence, right.sequence])
    join = make_processor(ring, join_handler, left.sequence, right.sequence)
    with running(left, right, join):
        publish_values(ring, range(400))
        wait_until(lambda: join.sequence.get() == 399)
    assert join_handler.violations == []
    assert join_handler.values == list(range(400))


@pytest.mark.timeout(60)
def test_slow_consumer_should_back_pressure_the_producer_without_being_overrun() -> None:
    size, events, delay = 8, 60, 0.002
    ring = RingBuffer.create_single_producer(StubEvent, size)
    slow_handler = RecordingHandler(delay=delay)
    slow = make_processor(ring, slow_handler)
    fast_handler = FollowingHandler([], lead=slow.sequence, max_lead=size)
    fast = make_processor(ring, fast_handler)
    lags: list[int] = []
    with running(slow, fast):
        started = time.monotonic()
        for value in range(events):
            sequence = ring.next()
            lags.append(sequence - slow.sequence.get())
            ring.get(sequence).value = value
            ring.publish(sequence)
        produced_in = time.monotonic() - started
        wait_until(lambda: slow.sequence.get() == events - 1)
    assert max(lags) <= size, "the producer claimed a slot the slow consumer still needed"
    assert produced_in >= (events - size) * delay * 0.9, "the producer was not held back"
    assert slow_handler.values == list(range(events)), "a slot was overwritten before reading"
    assert fast_handler.violations == []
    assert fast_handler.values == list(range(events))


@pytest.mark.timeout(60)
def test_halting_a_stage_should_leave_its_sequence_where_it_stopped() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 8)
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    with running(processor):
        publish_values(ring, range(5))
        wait_until(lambda: processor.sequence.get() == 4)
    blocked = threading.Thread(target=lambda: publish_values(ring, range(5, 20)))
    blocked.start()
    blocked.join(0.1)
    assert blocked.is_alive(), "a halted consumer must still gate the producer"
    with running(processor):
        blocked.join(JOIN_TIMEOUT)
        assert not blocked.is_alive()
        wait_until(lambda: processor.sequence.get() == 19)
    assert handler.values == list(range(20))
