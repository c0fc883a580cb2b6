from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import AlertException, RingBuffer, Sequence, SequenceBarrier
from tests.pipeline_core.ring.support import StubEvent, publish_values


def make_ring() -> RingBuffer[StubEvent]:
    return RingBuffer.create_single_producer(StubEvent, 16)


def test_should_return_highest_published_sequence_at_once_when_available() -> None:
    ring = make_ring()
    publish_values(ring, range(5))
    assert ring.new_barrier().wait_for(2) == 4


def test_should_wait_for_slowest_dependent_sequence() -> None:
    ring = make_ring()
    publish_values(ring, range(10))
    upstream_a, upstream_b = Sequence(7), Sequence(3)
    barrier = ring.new_barrier(upstream_a, upstream_b)
    assert barrier.cursor == 3
    assert barrier.wait_for(2) == 3


@pytest.mark.timeout(30)
def test_should_wake_when_dependent_catches_up() -> None:
    ring = make_ring()
    publish_values(ring, range(10))
    upstream = Sequence(2)
    barrier = ring.new_barrier(upstream)
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(barrier.wait_for(6)))
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive(), "waited past an upstream consumer"
    upstream.set(8)
    waiter.join(10)
    assert not waiter.is_alive()
    assert result == [8]


@pytest.mark.timeout(30)
def test_should_wake_when_producer_publishes() -> None:
    ring = make_ring()
    barrier = ring.new_barrier()
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(barrier.wait_for(0)))
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()
    publish_values(ring, [1, 2])
    waiter.join(10)
    assert not waiter.is_alive()
    assert result and result[0] >= 0


def test_should_raise_alert_until_cleared() -> None:
    ring = make_ring()
    publish_values(ring, range(3))
    barrier = ring.new_barrier()
    assert barrier.is_alerted is False
    barrier.alert()
    assert barrier.is_alerted is True
    with pytest.raises(AlertException):
        barrier.check_alert()
    with pytest.raises(AlertException):
        barrier.wait_for(0)
    barrier.clear_alert()
    barrier.check_alert()
    assert barrier.wait_for(0) == 2


@pytest.mark.timeout(30)
def test_should_interrupt_a_blocked_wait_on_alert() -> None:
    barrier: SequenceBarrier = make_ring().new_barrier()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            barrier.wait_for(0)
        except AlertException as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()
    barrier.alert()
    waiter.join(10)
    assert not waiter.is_alive()
    assert len(errors) == 1
