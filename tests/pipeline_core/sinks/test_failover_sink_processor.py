"""FailoverSinkProcessor: priorities, failover within one call, growing penalties, recovery."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pytest

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import FailoverSinkProcessor, Sink, Status
from pipeline_core.testing import FailingSink, FakeClock, RecordingSink, SwitchableSink
from tests.pipeline_core.sinks.support import ScriptedSink, make_batch, sequences, wire

START = 1_000_000.0


def failover(
    sinks: Sequence[Sink],
    priorities: Mapping[str, int],
    clock: FakeClock,
    *,
    max_penalty: float = 30.0,
) -> FailoverSinkProcessor:
    wire(sinks, *(make_batch(i) for i in range(10)))
    return FailoverSinkProcessor("group", sinks, priorities, max_penalty=max_penalty, clock=clock)


# -- priorities --------------------------------------------------------------------------------


def test_should_make_the_highest_priority_sink_active() -> None:
    low, high = RecordingSink("low"), RecordingSink("high")
    processor = failover([low, high], {"low": 1, "high": 10}, FakeClock())

    assert processor.active_sink == "high"
    assert processor.process() is Status.READY

    assert sequences(high) == [0]
    assert low.calls == 0
    assert processor.live_sinks() == ["high", "low"]


def test_should_rank_unprioritised_sinks_by_their_position() -> None:
    a, b, c = RecordingSink("a"), RecordingSink("b"), RecordingSink("c")

    processor = failover([a, b, c], {}, FakeClock())

    assert processor.priorities == {"a": 0, "b": -1, "c": -2}
    assert processor.active_sink == "a"


def test_should_rank_prioritised_sinks_above_unprioritised_ones() -> None:
    a, b, c = RecordingSink("a"), RecordingSink("b"), RecordingSink("c")

    processor = failover([a, b, c], {"c": 5}, FakeClock())

    assert processor.live_sinks() == ["c", "a", "b"]


def test_should_leave_out_a_sink_whose_priority_is_taken_and_warn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second, third = RecordingSink("first"), RecordingSink("second"), RecordingSink("third")

    with caplog.at_level(logging.WARNING):
        processor = failover(
            [first, second, third], {"first": 5, "second": 5, "third": 1}, FakeClock()
        )

    assert processor.live_sinks() == ["first", "third"]
    assert "second" not in processor.priorities
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "'second'" in record.getMessage() and "'first'" in record.getMessage()


def test_should_never_try_a_sink_left_out_for_its_priority() -> None:
    first, second = FailingSink("first"), RecordingSink("second")
    processor = failover([first, second], {"first": 5, "second": 5}, FakeClock())

    with pytest.raises(EventDeliveryException):
        processor.process()

    assert second.calls == 0


def test_should_reject_priorities_of_unknown_sinks() -> None:
    with pytest.raises(ValueError, match="unknown sinks"):
        failover([RecordingSink("a")], {"b": 1}, FakeClock())


def test_should_reject_duplicate_sink_names_and_an_empty_group() -> None:
    with pytest.raises(ValueError, match="unique"):
        failover([RecordingSink("a"), RecordingSink("a")], {}, FakeClock())
    with pytest.raises(ValueError, match="needs sinks"):
        failover([], {}, FakeClock())


# -- failover ----------------------------------------------------------------------------------


def test_should_keep_the_active_sink_while_it_does_not_raise() -> None:
    primary, backup = RecordingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, FakeClock())

    for _ in range(3):
        processor.process()

    assert sequences(primary) == [0, 1, 2]
    assert backup.calls == 0


def test_should_return_the_active_sinks_backoff_without_failing_over() -> None:
    primary, backup = RecordingSink("primary"), RecordingSink("backup")
    wire([primary, backup])
    processor = FailoverSinkProcessor(
        "group", [primary, backup], {"primary": 2, "backup": 1}, clock=FakeClock()
    )

    assert processor.process() is Status.BACKOFF

    assert processor.failed_sinks() == {}
    assert backup.calls == 0


def test_should_fail_over_to_the_next_sink_in_the_same_call() -> None:
    clock = FakeClock()
    primary, backup = FailingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)

    assert processor.process() is Status.READY

    assert sequences(backup) == [0]
    assert processor.active_sink == "backup"
    assert processor.live_sinks() == ["backup"]
    health = processor.failed_sinks()["primary"]
    assert health.consecutive_failures == 1
    assert health.excluded_until == START + 2
    assert health.last_failure_at == START
    assert health.last_error == "ConnectionError: sink 'primary' is down"


def test_should_double_the_penalty_of_each_consecutive_failure_up_to_max_penalty() -> None:
    clock = FakeClock()
    primary, backup = FailingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)

    penalties = []
    for _ in range(7):
        processor.process()
        health = processor.failed_sinks()["primary"]
        penalties.append(health.excluded_until - clock.now)
        clock.now = health.excluded_until

    assert penalties == [2, 4, 8, 16, 30, 30, 30]
    assert processor.failed_sinks()["primary"].consecutive_failures == 7


def test_should_cap_penalties_at_the_configured_max_penalty() -> None:
    clock = FakeClock()
    primary, backup = FailingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock, max_penalty=5)

    penalties = []
    for _ in range(4):
        processor.process()
        health = processor.failed_sinks()["primary"]
        penalties.append(health.excluded_until - clock.now)
        clock.now = health.excluded_until

    assert penalties == [2, 4, 5, 5]


def test_should_not_retry_a_failed_sink_before_its_penalty_expires() -> None:
    clock = FakeClock()
    primary, backup = SwitchableSink("primary", up=False), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)
    processor.process()
    primary.up = True

    clock.advance(1.9)
    processor.process()

    assert primary.calls == 1
    assert sequences(backup) == [0, 1]


# -- recovery ----------------------------------------------------------------------------------


def test_should_restore_a_recovered_sink_and_make_the_highest_live_sink_active() -> None:
    clock = FakeClock()
    primary, backup = SwitchableSink("primary", up=False), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)
    processor.process()
    primary.up = True
    clock.advance(2)

    assert processor.process() is Status.READY

    assert sequences(primary) == [1]
    assert processor.active_sink == "primary"
    assert processor.failed_sinks() == {}
    processor.process()
    assert sequences(primary) == [1, 2]
    assert sequences(backup) == [0]


def test_should_keep_the_higher_active_sink_when_a_lower_one_recovers() -> None:
    clock = FakeClock()
    a = SwitchableSink("a", up=False)
    b = SwitchableSink("b", up=False)
    c = RecordingSink("c")
    processor = failover([a, b, c], {"a": 3, "b": 2, "c": 1}, clock)
    processor.process()  # a and b fail, c delivers
    b.up = True
    clock.advance(2)

    processor.process()  # a fails again; b recovers and takes the batch

    assert sequences(b) == [1]
    assert processor.active_sink == "b"
    assert list(processor.failed_sinks()) == ["a"]


def test_should_retry_expired_failed_sinks_oldest_expiry_first() -> None:
    clock = FakeClock()
    a = SwitchableSink("a", up=False)
    b = SwitchableSink("b", up=False)
    c = RecordingSink("c")
    processor = failover([a, b, c], {"a": 3, "b": 2, "c": 1}, clock)
    processor.process()  # a and b fail at START: both expire at START + 2, a first
    assert list(processor.failed_sinks()) == ["a", "b"]
    clock.advance(2)
    b.up = True
    processor.process()  # a fails again (expires at START + 6); b recovers
    b.up = False
    processor.process()  # b fails as the active sink at START + 2 (expires at START + 4)
    assert list(processor.failed_sinks()) == ["b", "a"]
    a.up = b.up = True
    a_calls, b_calls = a.calls, b.calls
    clock.now = START + 6

    processor.process()

    assert b.calls == b_calls + 1 and len(b.delivered) == 2
    assert a.calls == a_calls
    assert processor.active_sink == "b"
    assert list(processor.failed_sinks()) == ["a"]


def test_should_double_the_penalty_when_a_retried_sink_backs_off() -> None:
    clock = FakeClock()
    primary = ScriptedSink("primary", ConnectionError("reset"), Status.BACKOFF)
    backup = RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)
    processor.process()
    clock.advance(2)

    assert processor.process() is Status.READY

    health = processor.failed_sinks()["primary"]
    assert health.consecutive_failures == 2
    assert health.excluded_until == clock.now + 4
    assert health.last_error == "backoff"
    assert sequences(backup) == [0, 1]


def test_should_double_the_penalty_when_a_retried_sink_raises_again() -> None:
    clock = FakeClock()
    primary, backup = FailingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock)
    processor.process()
    clock.advance(2)

    processor.process()

    assert primary.calls == 2
    health = processor.failed_sinks()["primary"]
    assert (health.consecutive_failures, health.excluded_until) == (2, clock.now + 4)
    assert sequences(backup) == [0, 1]


# -- nothing left ------------------------------------------------------------------------------


def test_should_raise_with_the_last_failure_as_cause_when_every_sink_failed() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), FailingSink("b", error=TimeoutError)
    processor = failover([a, b], {"a": 2, "b": 1}, clock)

    with pytest.raises(EventDeliveryException, match="all sinks failed") as raised:
        processor.process()

    assert isinstance(raised.value.__cause__, TimeoutError)
    assert processor.active_sink is None
    assert processor.live_sinks() == []
    assert list(processor.failed_sinks()) == ["a", "b"]


def test_should_raise_without_calling_sinks_while_every_sink_is_penalised() -> None:
    clock = FakeClock()
    a, b = FailingSink("a"), FailingSink("b")
    processor = failover([a, b], {"a": 2, "b": 1}, clock)
    with pytest.raises(EventDeliveryException):
        processor.process()
    clock.advance(1)

    with pytest.raises(EventDeliveryException) as raised:
        processor.process()

    assert (a.calls, b.calls) == (1, 1)
    assert isinstance(raised.value.__cause__, ConnectionError)


def test_should_deliver_again_once_a_penalised_sink_recovers() -> None:
    clock = FakeClock()
    only = SwitchableSink("only", up=False)
    processor = failover([only], {}, clock)
    with pytest.raises(EventDeliveryException):
        processor.process()
    only.up = True
    clock.advance(2)

    assert processor.process() is Status.READY

    assert processor.active_sink == "only"
    assert sequences(only) == [0]


# -- the wall clock stepped back ---------------------------------------------------------------


def test_should_retry_a_penalised_sink_within_max_penalty_after_the_clock_steps_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Penalties are wall-clock times (they are saved across restarts). A host clock stepped
    back an hour kept the primary excluded for an hour and its penalty: the group delivered
    to the backup all that time although the primary was back after seconds."""
    clock = FakeClock()
    primary, backup = SwitchableSink("primary", up=False), RecordingSink("backup")
    processor = failover([primary, backup], {"primary": 2, "backup": 1}, clock, max_penalty=30)
    processor.process()  # the primary fails: excluded for 2 s, the backup delivers
    primary.up = True
    clock.now -= 3600.0  # NTP, or an operator, steps the clock back an hour

    with caplog.at_level(logging.WARNING):
        processor.process()
    clock.advance(30.0)
    processor.process()

    assert processor.active_sink == "primary" and not processor.failed_sinks()
    assert sequences(primary) == [2]
    assert any("stepped back" in r.getMessage() for r in caplog.records)
