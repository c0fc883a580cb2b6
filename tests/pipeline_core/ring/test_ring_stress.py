"""Stress: many events through one ring to several consumers: none lost, duplicated, reordered."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

import pytest

from pipeline_core.ring import (
    BatchEventProcessor,
    EventHandler,
    RingBuffer,
    Sequence,
    SleepingWaitStrategy,
    WaitStrategy,
    YieldingWaitStrategy,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import (
    JOIN_TIMEOUT,
    StubEvent,
    make_processor,
    running,
)

EVENTS = 200_000


def value_for(sequence: int) -> int:
    # Not the sequence itself: a slot read before it was rewritten would show the old value.
    return sequence * 7 + 3


@dataclass
class CheckingHandler(EventHandler[StubEvent]):
    """Expects ``value_for(0), value_for(1), ...`` exactly once each, in order."""

    upstream: Sequence | None = None
    next_expected: int = 0
    received: int = 0
    errors: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
        wrong = sequence != self.next_expected or event.value != value_for(sequence)
        if wrong and len(self.errors) < 10:
            self.errors.append(f"got {event.value} at {sequence}, want {self.next_expected}")
        if self.upstream is not None and self.upstream.get() < sequence:
            self.errors.append(f"passed upstream at {sequence}")
        self.next_expected = sequence + 1
        self.received += 1
        if sequence == EVENTS - 1:
            self.done.set()


def produce(ring: RingBuffer[StubEvent], seed: int) -> None:
    # Mixed claim sizes exercise both single and range publication.
    rng = random.Random(seed)
    produced = 0
    while produced < EVENTS:
        n = min(rng.choice((1, 1, 3, 17, 64)), EVENTS - produced)
        hi = ring.next(n)
        for sequence in range(hi - n + 1, hi + 1):
            ring.get(sequence).value = value_for(sequence)
        ring.publish(hi - n + 1, hi)
        produced += n


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "strategy",
    [None, YieldingWaitStrategy(), SleepingWaitStrategy()],
    ids=["blocking", "yielding", "sleeping"],
)
def test_should_deliver_every_event_once_in_order_to_every_consumer(
    strategy: WaitStrategy | None,
) -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 1024, strategy)
    fan_out_a, fan_out_b = CheckingHandler(), CheckingHandler()
    a = make_processor(ring, fan_out_a, gate=False)
    b = make_processor(ring, fan_out_b, max_batch_size=100)
    after_a = CheckingHandler(upstream=a.sequence)
    c = make_processor(ring, after_a, a.sequence)
    handlers = [fan_out_a, fan_out_b, after_a]
    processors: list[BatchEventProcessor[StubEvent]] = [a, b, c]

    with running(*processors):
        producer = threading.Thread(target=produce, args=(ring, 42))
        producer.start()
        producer.join(240)
        assert not producer.is_alive(), "producer stuck"
        for handler in handlers:
            assert handler.done.wait(60), "a consumer did not see the last event"
        wait_until(lambda: all(p.sequence.get() == EVENTS - 1 for p in processors))

    for handler in handlers:
        assert handler.errors == []
        assert handler.received == EVENTS
    assert ring.cursor == EVENTS - 1


@pytest.mark.timeout(300)
def test_should_deliver_every_event_of_concurrent_producers_once() -> None:
    producers, per_producer = 4, EVENTS // 4
    ring = RingBuffer.create_multi_producer(StubEvent, 256)
    seen: list[list[int]] = [[], []]

    class Collect(EventHandler[StubEvent]):
        def __init__(self, into: list[int]) -> None:
            self.into = into

        def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
            self.into.append(event.value)

    processors = [make_processor(ring, Collect(into)) for into in seen]

    def produce_own(producer: int) -> None:
        for index in range(per_producer):
            sequence = ring.next()
            ring.get(sequence).value = producer * per_producer + index
            ring.publish(sequence)

    with running(*processors):
        threads = [threading.Thread(target=produce_own, args=(p,)) for p in range(producers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT * 20)
            assert not thread.is_alive()
        wait_until(lambda: all(p.sequence.get() == EVENTS - 1 for p in processors))

    for values in seen:
        assert sorted(values) == list(range(EVENTS)), "lost or duplicated events"
        for producer in range(producers):
            own = [v for v in values if v // per_producer == producer]
            assert own == sorted(own), f"producer {producer}'s events were reordered"
