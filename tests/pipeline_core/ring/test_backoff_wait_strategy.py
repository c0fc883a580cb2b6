from __future__ import annotations

import pytest

from pipeline_core.ring import BackoffWaitStrategy, RingBuffer
from tests.pipeline_core.ring.support import (
    StubEvent,
    assert_alert_ends_wait,
    assert_waits_for_dependent,
    assert_wakes_when_published,
    publish_values,
)


class ScriptedSleep:
    """Records each sleep; publishes the next value after ``publish_after`` sleeps."""

    def __init__(self, publish_after: int) -> None:
        self.publish_after = publish_after
        self.sleeps: list[float] = []
        self.ring: RingBuffer[StubEvent] | None = None

    def __call__(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if len(self.sleeps) == self.publish_after and self.ring is not None:
            publish_values(self.ring, [len(self.sleeps)])


def test_should_default_to_flume_sink_runner_backoff() -> None:
    strategy = BackoffWaitStrategy()
    assert strategy.backoff_sleep_increment == 1.0
    assert strategy.max_backoff_sleep == 5.0


def test_should_sleep_one_increment_more_per_empty_poll_up_to_max() -> None:
    sleep = ScriptedSleep(publish_after=6)
    strategy = BackoffWaitStrategy(0.01, 0.035, alert_poll_seconds=1.0, sleep=sleep)
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    sleep.ring = ring
    assert ring.new_barrier().wait_for(0) == 0
    assert sleep.sleeps == pytest.approx([0.01, 0.02, 0.03, 0.035, 0.035, 0.035])


def test_should_reset_backoff_once_data_arrives() -> None:
    sleep = ScriptedSleep(publish_after=3)
    strategy = BackoffWaitStrategy(0.01, 1.0, alert_poll_seconds=1.0, sleep=sleep)
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    sleep.ring = ring
    barrier = ring.new_barrier()
    assert barrier.wait_for(0) == 0
    assert sleep.sleeps == pytest.approx([0.01, 0.02, 0.03])
    sleep.sleeps.clear()
    sleep.publish_after = 2
    assert barrier.wait_for(1) == 1
    assert sleep.sleeps == pytest.approx([0.01, 0.02]), "backoff was not reset"


def test_should_not_sleep_when_data_is_available() -> None:
    sleep = ScriptedSleep(publish_after=0)
    ring = RingBuffer.create_single_producer(
        StubEvent, 8, BackoffWaitStrategy(0.01, 0.05, sleep=sleep)
    )
    publish_values(ring, range(3))
    assert ring.new_barrier().wait_for(1) == 2
    assert sleep.sleeps == []


@pytest.mark.timeout(30)
def test_should_wake_when_sequence_is_published() -> None:
    assert_wakes_when_published(BackoffWaitStrategy(0.001, 0.005))


@pytest.mark.timeout(30)
def test_should_wait_for_upstream_consumer_in_a_pipeline() -> None:
    assert_waits_for_dependent(BackoffWaitStrategy(0.001, 0.005))


@pytest.mark.timeout(30)
def test_should_stop_waiting_when_barrier_is_alerted() -> None:
    assert_alert_ends_wait(BackoffWaitStrategy(0.001, 0.005))


@pytest.mark.timeout(30)
def test_should_end_a_long_backoff_promptly_on_alert() -> None:
    strategy = BackoffWaitStrategy(30.0, 60.0, alert_poll_seconds=0.01)

    assert assert_alert_ends_wait(strategy) < 1.0, "alert waited for the 30 s backoff"


def test_should_reject_negative_durations() -> None:
    with pytest.raises(ValueError):
        BackoffWaitStrategy(-1.0, 5.0)
    with pytest.raises(ValueError):
        BackoffWaitStrategy(1.0, 5.0, alert_poll_seconds=0)
