from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import BlockingWaitStrategy, RingBuffer
from tests.pipeline_core.ring.support import (
    JOIN_TIMEOUT,
    StubEvent,
    assert_alert_ends_wait,
    assert_waits_for_dependent,
    assert_wakes_when_published,
    publish_values,
)


@pytest.mark.timeout(30)
def test_should_wake_when_sequence_is_published() -> None:
    assert_wakes_when_published(BlockingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_wait_for_upstream_consumer_in_a_pipeline() -> None:
    assert_waits_for_dependent(BlockingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_stop_waiting_when_barrier_is_alerted() -> None:
    assert_alert_ends_wait(BlockingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_not_take_the_lock_to_publish_when_no_consumer_is_blocked() -> None:
    strategy = BlockingWaitStrategy()
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    publisher = threading.Thread(target=lambda: publish_values(ring, range(4)))
    with strategy._condition:  # a publish that needed the lock would now block
        publisher.start()
        publisher.join(JOIN_TIMEOUT)
        assert not publisher.is_alive(), "publishing took the lock with nobody waiting"
    assert ring.cursor == 3


@pytest.mark.timeout(60)
def test_should_not_lose_a_wakeup_across_many_wait_publish_rounds() -> None:
    strategy = BlockingWaitStrategy()
    ring = RingBuffer.create_single_producer(StubEvent, 1024, strategy)
    barrier = ring.new_barrier()
    rounds = 500
    seen: list[int] = []
    turn = threading.Semaphore(0)

    def consume() -> None:
        for sequence in range(rounds):
            turn.release()  # the producer publishes only once this consumer is about to wait
            seen.append(barrier.wait_for(sequence))

    consumer = threading.Thread(target=consume)
    consumer.start()
    for value in range(rounds):
        assert turn.acquire(timeout=JOIN_TIMEOUT)
        publish_values(ring, [value])
    consumer.join(JOIN_TIMEOUT)
    assert not consumer.is_alive(), "a consumer missed a wakeup"
    assert seen == list(range(rounds))
