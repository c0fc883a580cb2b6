"""RingBuffer with a single producer (``RingBuffer.create_single_producer``)."""

from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import (
    BlockingWaitStrategy,
    InsufficientCapacityException,
    RingBuffer,
    Sequence,
    YieldingWaitStrategy,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import StubEvent, publish_values


def make_ring(size: int = 8) -> RingBuffer[StubEvent]:
    return RingBuffer.create_single_producer(StubEvent, size)


def test_should_preallocate_one_event_per_slot_from_factory() -> None:
    ring = make_ring(4)
    events = [ring.get(sequence) for sequence in range(4)]
    assert len({id(event) for event in events}) == 4
    assert all(isinstance(event, StubEvent) for event in events)
    assert ring.buffer_size == 4


def test_should_reuse_slots_when_sequence_wraps() -> None:
    ring = make_ring(4)
    assert ring.get(1) is ring.get(5) is ring.get(9)


@pytest.mark.parametrize("size", [0, 3, 6, 1000])
def test_should_reject_buffer_size_not_power_of_two(size: int) -> None:
    with pytest.raises(ValueError):
        make_ring(size)


def test_should_default_to_blocking_wait_strategy() -> None:
    assert isinstance(make_ring().wait_strategy, BlockingWaitStrategy)
    strategy = YieldingWaitStrategy()
    ring = RingBuffer.create_single_producer(StubEvent, 4, strategy)
    assert ring.wait_strategy is strategy


def test_should_claim_consecutive_sequences() -> None:
    ring = make_ring()
    assert ring.next() == 0
    assert ring.next() == 1
    assert ring.next(3) == 4


def test_should_advance_cursor_only_on_publish() -> None:
    ring = make_ring()
    assert ring.cursor == -1
    sequence = ring.next()
    assert ring.cursor == -1
    ring.publish(sequence)
    assert ring.cursor == 0


def test_should_publish_a_claimed_range() -> None:
    ring = make_ring()
    hi = ring.next(3)
    for sequence in range(hi - 2, hi + 1):
        ring.get(sequence).value = sequence * 10
    ring.publish(hi - 2, hi)
    assert ring.cursor == 2
    assert [ring.get(s).value for s in range(3)] == [0, 10, 20]


@pytest.mark.parametrize("n", [0, -1, 9])
def test_should_reject_claim_of_invalid_size(n: int) -> None:
    ring = make_ring(8)
    with pytest.raises(ValueError):
        ring.next(n)
    with pytest.raises(ValueError):
        ring.try_next(n)


def test_should_overwrite_freely_without_gating_sequences() -> None:
    ring = make_ring(4)
    publish_values(ring, range(10))
    assert ring.cursor == 9
    assert ring.remaining_capacity() == 4


def test_should_report_remaining_capacity_against_slowest_consumer() -> None:
    ring = make_ring(8)
    slow, fast = Sequence(), Sequence()
    ring.add_gating_sequences(slow, fast)
    publish_values(ring, range(5))
    assert ring.remaining_capacity() == 3
    fast.set(4)
    assert ring.remaining_capacity() == 3
    slow.set(2)
    assert ring.remaining_capacity() == 6


def test_should_throw_insufficient_capacity_when_try_next_would_overrun() -> None:
    ring = make_ring(4)
    consumer = Sequence()
    ring.add_gating_sequences(consumer)
    assert ring.try_next(4) == 3
    ring.publish(0, 3)
    with pytest.raises(InsufficientCapacityException):
        ring.try_next()
    consumer.set(1)
    assert ring.try_next(2) == 5
    with pytest.raises(InsufficientCapacityException):
        ring.try_next()


@pytest.mark.timeout(30)
def test_should_block_producer_until_consumer_frees_a_slot() -> None:
    ring = make_ring(4)
    consumer = Sequence()
    ring.add_gating_sequences(consumer)
    publish_values(ring, range(4))
    claimed: list[int] = []
    producer = threading.Thread(target=lambda: claimed.append(ring.next()))
    producer.start()
    producer.join(0.2)
    assert producer.is_alive(), "producer overran the consumer"
    assert claimed == []
    consumer.set(0)
    producer.join(10)
    assert not producer.is_alive()
    assert claimed == [4]


def test_should_move_added_gating_sequence_to_cursor() -> None:
    ring = make_ring(8)
    publish_values(ring, range(3))
    late = Sequence()
    ring.add_gating_sequences(late)
    assert late.get() == 2
    assert ring.minimum_gating_sequence() == 2


def test_should_stop_gating_on_removed_sequence() -> None:
    ring = make_ring(4)
    consumer = Sequence()
    ring.add_gating_sequences(consumer)
    publish_values(ring, range(4))
    assert ring.remaining_capacity() == 0
    assert ring.remove_gating_sequence(consumer) is True
    assert ring.remove_gating_sequence(consumer) is False
    assert ring.remaining_capacity() == 4
    assert ring.try_next() == 4


def test_should_make_barrier_following_the_cursor() -> None:
    ring = make_ring()
    barrier = ring.new_barrier()
    publish_values(ring, [5, 6])
    assert barrier.cursor == 1
    assert barrier.wait_for(0) == 1


@pytest.mark.timeout(30)
def test_should_hand_values_to_a_consumer_thread_in_order() -> None:
    ring = make_ring(16)
    consumer_sequence = Sequence()
    ring.add_gating_sequences(consumer_sequence)
    barrier = ring.new_barrier()
    received: list[int] = []

    def consume() -> None:
        next_sequence = 0
        while next_sequence < 1000:
            available = barrier.wait_for(next_sequence)
            for sequence in range(next_sequence, available + 1):
                received.append(ring.get(sequence).value)
            consumer_sequence.set(available)
            next_sequence = available + 1

    thread = threading.Thread(target=consume)
    thread.start()
    publish_values(ring, range(1000))
    thread.join(10)
    assert not thread.is_alive()
    assert received == list(range(1000))
    wait_until(lambda: ring.remaining_capacity() == 16)
