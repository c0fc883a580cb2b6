from __future__ import annotations

import pytest

from pipeline_core.ring import SleepingWaitStrategy
from tests.pipeline_core.ring.support import (
    assert_alert_ends_wait,
    assert_waits_for_dependent,
    assert_wakes_when_published,
)


@pytest.mark.timeout(30)
def test_should_wake_when_sequence_is_published() -> None:
    assert_wakes_when_published(SleepingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_wait_for_upstream_consumer_in_a_pipeline() -> None:
    assert_waits_for_dependent(SleepingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_stop_waiting_when_barrier_is_alerted() -> None:
    assert_alert_ends_wait(SleepingWaitStrategy())


@pytest.mark.timeout(30)
def test_should_wake_when_sleeping_between_every_poll() -> None:
    assert_wakes_when_published(SleepingWaitStrategy(retries=0, sleep_time_ns=1_000_000))
