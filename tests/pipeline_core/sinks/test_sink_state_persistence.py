"""Sink penalty and backoff state: saved on every change, applied again after a restart."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import (
    FailoverSinkProcessor,
    LoadBalancingSinkProcessor,
    Sink,
    SinkHealth,
    Status,
)
from pipeline_core.testing import FailingSink, FakeClock, RecordingSink, SwitchableSink
from tests.pipeline_core.sinks.support import (
    RecordingStateStore,
    ScriptedSink,
    make_batch,
    sequences,
    wire,
)

START = 1_000_000.0
PRIORITIES = {"primary": 2, "backup": 1}


def failover(
    sinks: Sequence[Sink], clock: FakeClock, store: RecordingStateStore
) -> FailoverSinkProcessor:
    wire(sinks, *(make_batch(i) for i in range(5)))
    return FailoverSinkProcessor("group", sinks, PRIORITIES, clock=clock, state=store)


def balance(
    sinks: Sequence[Sink], clock: FakeClock, store: RecordingStateStore, *, backoff: bool = True
) -> LoadBalancingSinkProcessor:
    wire(sinks, *(make_batch(i) for i in range(5)))
    return LoadBalancingSinkProcessor("group", sinks, backoff=backoff, clock=clock, state=store)


# -- failover ----------------------------------------------------------------------------------


def test_should_save_a_failover_sinks_failure() -> None:
    store = RecordingStateStore()
    processor = failover([FailingSink("primary"), RecordingSink("backup")], FakeClock(), store)

    processor.process()

    assert store.saves == [
        (
            "group",
            "primary",
            SinkHealth(
                consecutive_failures=1,
                excluded_until=START + 2,
                last_error="ConnectionError: sink 'primary' is down",
                last_failure_at=START,
            ),
        )
    ]


def test_should_save_a_backoff_answer_of_a_retried_sink_as_a_failure() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    primary = ScriptedSink("primary", ConnectionError("reset"), Status.BACKOFF)
    processor = failover([primary, RecordingSink("backup")], clock, store)
    processor.process()
    clock.advance(2)

    processor.process()

    assert store.states[("group", "primary")] == SinkHealth(2, START + 6, "backoff", START + 2)


def test_should_save_a_failover_sinks_recovery_keeping_its_last_error() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    primary = SwitchableSink("primary", up=False)
    processor = failover([primary, RecordingSink("backup")], clock, store)
    processor.process()
    primary.up = True
    clock.advance(2)

    processor.process()

    assert store.states[("group", "primary")] == SinkHealth(
        0, 0.0, "ConnectionError: sink 'primary' is down", START
    )
    assert len(store.saves) == 2


def test_should_not_save_the_deliveries_of_healthy_sinks() -> None:
    store = RecordingStateStore()
    processor = failover([RecordingSink("primary"), RecordingSink("backup")], FakeClock(), store)

    for _ in range(3):
        processor.process()

    assert store.saves == []


def test_should_keep_a_penalised_failover_sink_failed_in_a_new_processor() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    failover([FailingSink("primary"), RecordingSink("backup")], clock, store).process()
    clock.advance(1)

    primary, backup = SwitchableSink("primary", up=False), RecordingSink("backup")
    restarted = failover([primary, backup], clock, store)
    restarted.start()

    assert restarted.active_sink == "backup"
    assert restarted.failed_sinks()["primary"].consecutive_failures == 1
    restarted.process()
    assert primary.calls == 0
    assert sequences(backup) == [0]
    clock.advance(1)
    restarted.process()  # the penalty has expired: retried, fails again, penalty doubles
    assert store.states[("group", "primary")].excluded_until == clock.now + 4


def test_should_restore_a_recovered_sink_loaded_as_failed() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    failover([FailingSink("primary"), RecordingSink("backup")], clock, store).process()
    clock.advance(2)
    primary = RecordingSink("primary")
    restarted = failover([primary, RecordingSink("backup")], clock, store)

    assert restarted.process() is Status.READY

    assert sequences(primary) == [0]
    assert restarted.active_sink == "primary"
    assert store.states[("group", "primary")].consecutive_failures == 0


def test_should_start_a_sink_whose_saved_penalty_expired_as_live() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    store.save("group", "primary", SinkHealth(3, START - 1, "ConnectionError: x", START - 9))
    primary = RecordingSink("primary")
    processor = failover([primary, RecordingSink("backup")], clock, store)
    processor.start()

    assert processor.failed_sinks() == {}
    assert processor.active_sink == "primary"
    processor.process()
    assert sequences(primary) == [0]
    assert store.states[("group", "primary")].consecutive_failures == 0


def test_should_load_failover_state_once_on_the_first_process_when_not_started() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    store.save("group", "primary", SinkHealth(1, START + 2, "ConnectionError: x", START))
    primary, backup = RecordingSink("primary"), RecordingSink("backup")
    processor = failover([primary, backup], clock, store)

    processor.process()
    processor.process()

    assert store.loads == 1
    assert primary.calls == 0
    assert sequences(backup) == [0, 1]


def test_should_ignore_state_of_other_groups_and_unknown_sinks() -> None:
    store = RecordingStateStore()
    store.save("other", "primary", SinkHealth(1, START + 60, "x", START))
    store.save("group", "gone", SinkHealth(1, START + 60, "x", START))
    processor = failover([RecordingSink("primary"), RecordingSink("backup")], FakeClock(), store)

    processor.start()

    assert processor.failed_sinks() == {}
    assert processor.active_sink == "primary"


# -- load balancing ----------------------------------------------------------------------------


def test_should_save_a_load_balanced_sinks_failure_and_success() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    a, b = SwitchableSink("a", up=False), RecordingSink("b")
    processor = balance([a, b], clock, store)
    processor.process()
    assert store.states[("group", "a")] == SinkHealth(
        1, START + 2, "ConnectionError: sink 'a' is down", START
    )
    a.up = True
    clock.advance(2)

    processor.process()  # starts at b (round robin)
    processor.process()  # starts at a: delivers

    assert store.states[("group", "a")] == SinkHealth(
        0, 0.0, "ConnectionError: sink 'a' is down", START
    )
    assert [sink for _, sink, _ in store.saves] == ["a", "a"]


def test_should_keep_a_load_balanced_sink_excluded_in_a_new_processor() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    balance([FailingSink("a"), RecordingSink("b")], clock, store).process()
    clock.advance(1)

    a, b = RecordingSink("a"), RecordingSink("b")
    restarted = balance([a, b], clock, store)
    restarted.start()

    assert restarted.available_sinks() == ["b"]
    restarted.process()
    restarted.process()
    assert a.calls == 0
    clock.advance(1)
    assert restarted.available_sinks() == ["a", "b"]


def test_should_continue_a_loaded_failure_series() -> None:
    clock = FakeClock()
    store = RecordingStateStore()
    processor = balance([FailingSink("a"), FailingSink("b")], clock, store)
    with pytest.raises(EventDeliveryException):
        processor.process()
    clock.advance(2)

    restarted = balance([FailingSink("a"), FailingSink("b")], clock, store)
    with pytest.raises(EventDeliveryException):
        restarted.process()

    assert store.states[("group", "a")].consecutive_failures == 2
    assert store.states[("group", "a")].excluded_until == clock.now + 4


def test_should_neither_save_nor_apply_state_without_backoff() -> None:
    store = RecordingStateStore()
    store.save("group", "a", SinkHealth(1, START + 60, "x", START))
    store.saves.clear()
    a, b = FailingSink("a"), RecordingSink("b")
    processor = balance([a, b], FakeClock(), store, backoff=False)
    processor.start()

    processor.process()

    assert a.calls == 1
    assert processor.available_sinks() == ["a", "b"]
    assert store.saves == []
