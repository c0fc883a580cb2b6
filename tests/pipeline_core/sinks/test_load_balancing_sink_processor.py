"""LoadBalancingSinkProcessor: selector order, trying the next sink, optional backoff."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import LoadBalancingSinkProcessor, SinkSelector, Status
from pipeline_core.testing import (
    BackoffSink,
    FailingSink,
    FakeClock,
    FlakySink,
    RecordingSink,
    StubSink,
    SwitchableSink,
)
from tests.pipeline_core.sinks.support import make_batch, sequences, wire

START = 1_000_000.0


def balance(
    sinks: Sequence[StubSink],
    clock: FakeClock,
    *,
    selector: SinkSelector = SinkSelector.ROUND_ROBIN,
    backoff: bool = False,
    max_timeout: float = 30.0,
    rng: random.Random | None = None,
) -> LoadBalancingSinkProcessor:
    wire(sinks, *(make_batch(i) for i in range(12)))
    return LoadBalancingSinkProcessor(
        "group",
        sinks,
        selector=selector,
        backoff=backoff,
        max_timeout=max_timeout,
        clock=clock,
        rng=rng,
    )


def test_should_need_at_least_two_sinks() -> None:
    with pytest.raises(ValueError, match="at least two sinks"):
        LoadBalancingSinkProcessor("group", [RecordingSink("a")])


def test_should_reject_duplicate_sink_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        LoadBalancingSinkProcessor("group", [RecordingSink("a"), RecordingSink("a")])


def test_should_default_to_round_robin_without_backoff() -> None:
    processor = LoadBalancingSinkProcessor("group", [RecordingSink("a"), RecordingSink("b")])

    assert processor.selector is SinkSelector.ROUND_ROBIN
    assert processor.backoff is False
    assert processor.max_timeout == 30.0


def test_should_name_selectors_as_in_the_config() -> None:
    assert SinkSelector("round_robin") is SinkSelector.ROUND_ROBIN
    assert SinkSelector("random") is SinkSelector.RANDOM


# -- round robin -------------------------------------------------------------------------------


def test_should_start_one_sink_further_at_each_call() -> None:
    a, b, c = RecordingSink("a"), RecordingSink("b"), RecordingSink("c")
    processor = balance([a, b, c], FakeClock())

    for _ in range(6):
        assert processor.process() is Status.READY

    assert sequences(a) == [0, 3]
    assert sequences(b) == [1, 4]
    assert sequences(c) == [2, 5]


def test_should_try_the_next_sink_when_one_raises() -> None:
    a, b, c = FailingSink("a"), RecordingSink("b"), RecordingSink("c")
    processor = balance([a, b, c], FakeClock())

    for _ in range(3):
        processor.process()

    # call 1 starts at a (fails) so b delivers; call 2 starts at b; call 3 at c
    assert sequences(b) == [0, 1]
    assert sequences(c) == [2]
    assert a.calls == 1


def test_should_return_a_backoff_answer_without_trying_another_sink() -> None:
    idle, other = BackoffSink("idle"), RecordingSink("other")
    processor = balance([idle, other], FakeClock())

    assert processor.process() is Status.BACKOFF

    assert other.calls == 0


def test_should_rotate_over_the_available_sinks_only() -> None:
    clock = FakeClock()
    a, b, c = FailingSink("a"), RecordingSink("b"), RecordingSink("c")
    processor = balance([a, b, c], clock, backoff=True)
    processor.process()  # a fails and is excluded, b delivers

    for _ in range(4):
        processor.process()

    assert processor.available_sinks() == ["b", "c"]
    assert sequences(b) + sequences(c) == [0, 2, 4, 1, 3]
    assert a.calls == 1


# -- random ------------------------------------------------------------------------------------


def test_should_try_sinks_in_the_order_shuffled_by_the_rng() -> None:
    sinks = [RecordingSink(name) for name in "abcde"]
    processor = balance(sinks, FakeClock(), selector=SinkSelector.RANDOM, rng=random.Random(7))
    replay = random.Random(7)

    expected = []
    for _ in range(10):
        processor.process()
        order = list(sinks)
        replay.shuffle(order)
        expected.append(order[0].name)

    delivered_by = {batch.sequence: sink.name for sink in sinks for batch in sink.delivered}
    assert [delivered_by[i] for i in range(10)] == expected
    assert len(set(expected)) > 1


def test_should_try_every_sink_in_random_order_until_one_delivers() -> None:
    failing = [FailingSink(name) for name in "abcd"]
    working = RecordingSink("e")
    processor = balance(
        [*failing, working], FakeClock(), selector=SinkSelector.RANDOM, rng=random.Random(3)
    )

    assert processor.process() is Status.READY

    assert sequences(working) == [0]
    assert all(sink.calls <= 1 for sink in failing)


# -- failures ----------------------------------------------------------------------------------


def test_should_raise_with_the_last_failure_as_cause_when_every_sink_failed() -> None:
    a, b = FailingSink("a"), FailingSink("b", error=TimeoutError)
    processor = balance([a, b], FakeClock())

    with pytest.raises(EventDeliveryException, match="all sinks failed") as raised:
        processor.process()

    assert isinstance(raised.value.__cause__, TimeoutError)
    assert (a.calls, b.calls) == (1, 1)


def test_should_keep_trying_a_failing_sink_without_backoff() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), RecordingSink("b")
    processor = balance([a, b], clock, backoff=False)

    for _ in range(4):
        processor.process()

    assert a.calls == 2  # the two calls that started at a
    assert sequences(b) == [0, 1, 2, 3]
    assert processor.available_sinks() == ["a", "b"]
    assert processor.health()["a"].consecutive_failures == 0


# -- backoff -----------------------------------------------------------------------------------


def test_should_exclude_a_failed_sink_for_two_seconds_after_its_first_failure() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), RecordingSink("b")
    processor = balance([a, b], clock, backoff=True)

    processor.process()

    health = processor.health()["a"]
    assert health.consecutive_failures == 1
    assert health.excluded_until == START + 2
    assert health.last_error == "ConnectionError: sink 'a' is down"
    assert processor.available_sinks() == ["b"]
    clock.advance(1.9)
    processor.process()
    processor.process()
    assert a.calls == 1
    clock.advance(0.1)
    assert processor.available_sinks() == ["a", "b"]


def test_should_double_the_exclusion_up_to_max_timeout() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), FailingSink("b")
    processor = balance([a, b], clock, backoff=True)

    exclusions = []
    for _ in range(7):
        with pytest.raises(EventDeliveryException):
            processor.process()
        exclusions.append(processor.health()["a"].excluded_until - clock.now)
        clock.now = processor.health()["a"].excluded_until

    assert exclusions == [2, 4, 8, 16, 30, 30, 30]
    assert (a.calls, b.calls) == (7, 7)


def test_should_cap_exclusions_at_the_configured_max_timeout() -> None:
    clock = FakeClock()
    processor = balance([FailingSink("a"), FailingSink("b")], clock, backoff=True, max_timeout=3)

    exclusions = []
    for _ in range(3):
        with pytest.raises(EventDeliveryException):
            processor.process()
        exclusions.append(processor.health()["a"].excluded_until - clock.now)
        clock.now = processor.health()["a"].excluded_until

    assert exclusions == [2, 3, 3]


def test_should_stop_counting_sequential_failures_at_sixteen() -> None:
    clock = FakeClock()
    processor = balance([FailingSink("a"), FailingSink("b")], clock, backoff=True, max_timeout=1e9)

    for _ in range(20):
        with pytest.raises(EventDeliveryException):
            processor.process()
        clock.now = processor.health()["a"].excluded_until

    health = processor.health()["a"]
    assert health.consecutive_failures == 16
    assert health.excluded_until - health.last_failure_at == 2.0**16


def test_should_start_a_new_series_when_the_last_failure_is_over_an_hour_old() -> None:
    clock = FakeClock()
    processor = balance([FailingSink("a"), FailingSink("b")], clock, backoff=True)
    for _ in range(3):
        with pytest.raises(EventDeliveryException):
            processor.process()
        clock.now = processor.health()["a"].excluded_until
    assert processor.health()["a"].consecutive_failures == 3  # last exclusion: 8 s

    clock.now = processor.health()["a"].last_failure_at + 8 + 3600
    with pytest.raises(EventDeliveryException):
        processor.process()

    health = processor.health()["a"]
    assert health.consecutive_failures == 1
    assert health.excluded_until == clock.now + 2


def test_should_continue_the_series_within_the_hour() -> None:
    clock = FakeClock()
    processor = balance([FailingSink("a"), FailingSink("b")], clock, backoff=True)
    with pytest.raises(EventDeliveryException):
        processor.process()

    clock.now = processor.health()["a"].last_failure_at + 2 + 3599
    with pytest.raises(EventDeliveryException):
        processor.process()

    assert processor.health()["a"].consecutive_failures == 2


def test_should_clear_the_series_after_a_success() -> None:
    clock = FakeClock()
    flaky, down = FlakySink("flaky", failures=2), FailingSink("down")
    processor = balance([flaky, down], clock, backoff=True)
    for _ in range(2):
        with pytest.raises(EventDeliveryException):
            processor.process()
        clock.now = processor.health()["flaky"].excluded_until
    assert processor.health()["flaky"].consecutive_failures == 2

    assert processor.process() is Status.READY

    health = processor.health()["flaky"]
    assert (health.consecutive_failures, health.excluded_until) == (0, 0.0)
    assert health.last_error == "ConnectionError: sink 'flaky' failed (call 2 of 2)"
    assert sequences(flaky) == [0]


def test_should_raise_without_calling_sinks_when_every_sink_is_excluded() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), FailingSink("b")
    processor = balance([a, b], clock, backoff=True)
    with pytest.raises(EventDeliveryException):
        processor.process()

    with pytest.raises(EventDeliveryException, match="no sink is available"):
        processor.process()

    assert (a.calls, b.calls) == (1, 1)


def test_should_bound_an_exclusion_by_max_timeout_after_the_clock_steps_back() -> None:
    """An exclusion set before the host's clock stepped back an hour ran an hour longer."""
    clock = FakeClock()
    a, b = SwitchableSink("a", up=False), RecordingSink("b")
    processor = balance([a, b], clock, backoff=True, max_timeout=30.0)
    processor.process()  # a fails: excluded for 2 s
    a.up = True
    clock.now -= 3600.0

    processor.process()
    assert processor.available_sinks() == ["b"]
    clock.advance(30.0)

    assert processor.available_sinks() == ["a", "b"]
    assert processor.health()["a"].excluded_until == START - 3600.0 + 30.0
