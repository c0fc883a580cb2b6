"""RingBuffer shared by several producers (``RingBuffer.create_multi_producer``)."""

from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import InsufficientCapacityException, RingBuffer, Sequence
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import (
    RecordingHandler,
    StubEvent,
    make_processor,
    running,
)


def make_ring(size: int = 8) -> RingBuffer[StubEvent]:
    return RingBuffer.create_multi_producer(StubEvent, size)


def test_should_claim_consecutive_sequences() -> None:
    ring = make_ring()
    assert ring.next() == 0
    assert ring.next(2) == 2
    assert ring.try_next() == 3


def test_should_only_expose_contiguously_published_sequences() -> None:
    ring = make_ring()
    first, second, third = ring.next(), ring.next(), ring.next()
    ring.publish(third)
    ring.publish(first)
    assert ring.cursor == first
    assert ring.highest_published_sequence(0, third) == first
    ring.publish(second)
    assert ring.cursor == third
    assert ring.highest_published_sequence(0, third) == third


def test_barrier_should_not_pass_a_claimed_but_unpublished_slot() -> None:
    ring = make_ring()
    barrier = ring.new_barrier()
    first, second = ring.next(), ring.next()
    ring.publish(second)
    assert barrier.wait_for(0) == -1
    ring.publish(first)
    assert barrier.wait_for(0) == 1


def test_should_throw_insufficient_capacity_when_try_next_would_overrun() -> None:
    ring = make_ring(4)
    consumer = Sequence()
    ring.add_gating_sequences(consumer)
    hi = ring.try_next(4)
    ring.publish(0, hi)
    with pytest.raises(InsufficientCapacityException):
        ring.try_next()
    assert ring.remaining_capacity() == 0
    consumer.set(0)
    assert ring.try_next() == 4


@pytest.mark.timeout(60)
def test_should_deliver_every_event_of_concurrent_producers_once_in_producer_order() -> None:
    ring = make_ring(64)
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    producers, per_producer = 3, 5_000

    def produce(producer: int) -> None:
        for index in range(per_producer):
            sequence = ring.next()
            ring.get(sequence).value = producer * per_producer + index
            ring.publish(sequence)

    with running(processor):
        threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
            assert not thread.is_alive()
        wait_until(lambda: processor.sequence.get() == producers * per_producer - 1)

    assert handler.sequences == list(range(producers * per_producer))
    for producer in range(producers):
        own = [v for v in handler.values if v // per_producer == producer]
        assert own == list(range(producer * per_producer, (producer + 1) * per_producer))
