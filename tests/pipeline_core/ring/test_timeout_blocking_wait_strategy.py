from __future__ import annotations

import time

import pytest

from pipeline_core.ring import RingBuffer, TimeoutBlockingWaitStrategy, TimeoutException
from tests.pipeline_core.ring.support import (
    StubEvent,
    assert_alert_ends_wait,
    assert_waits_for_dependent,
    assert_wakes_when_published,
    publish_values,
)


@pytest.mark.timeout(30)
def test_should_wake_when_sequence_is_published_before_timeout() -> None:
    assert_wakes_when_published(TimeoutBlockingWaitStrategy(5.0))


@pytest.mark.timeout(30)
def test_should_wait_for_upstream_consumer_in_a_pipeline() -> None:
    assert_waits_for_dependent(TimeoutBlockingWaitStrategy(5.0))


@pytest.mark.timeout(30)
def test_should_stop_waiting_when_barrier_is_alerted() -> None:
    assert_alert_ends_wait(TimeoutBlockingWaitStrategy(5.0))


@pytest.mark.timeout(30)
def test_should_raise_timeout_after_timeout_without_publication() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 8, TimeoutBlockingWaitStrategy(0.1))
    barrier = ring.new_barrier()
    started = time.monotonic()
    with pytest.raises(TimeoutException):
        barrier.wait_for(0)
    elapsed = time.monotonic() - started
    assert 0.09 <= elapsed < 2.0


def test_should_return_at_once_when_sequence_already_published() -> None:
    ring = RingBuffer.create_single_producer(StubEvent, 8, TimeoutBlockingWaitStrategy(0.1))
    publish_values(ring, range(2))
    assert ring.new_barrier().wait_for(0) == 1


def test_should_reject_non_positive_timeout() -> None:
    with pytest.raises(ValueError):
        TimeoutBlockingWaitStrategy(0)
