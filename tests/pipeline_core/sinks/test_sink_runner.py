"""SinkRunner: Flume's polling runner, its backoff waits, counters and thread."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import (
    DefaultSinkProcessor,
    RunnerCounters,
    RunnerOutcome,
    SinkRunner,
    Status,
)
from pipeline_core.testing import BackoffSink, FakeClock, RecordingSink, SlowSink, wait_until
from tests.pipeline_core.sinks.support import (
    JOIN_TIMEOUT,
    ScriptedProcessor,
    make_batch,
    sequences,
    wire,
)

# -- backoff -----------------------------------------------------------------------------------


def test_should_back_off_one_more_second_per_consecutive_backoff_up_to_five() -> None:
    clock = FakeClock()
    runner = SinkRunner(ScriptedProcessor(default=Status.BACKOFF), clock=clock)

    outcomes = [runner.run_once() for _ in range(7)]

    assert outcomes == [RunnerOutcome.BACKOFF] * 7
    assert clock.waits == [1, 2, 3, 4, 5, 5, 5]
    assert clock.now == 1_000_000.0 + 25
    assert runner.counters.backoffs == 7
    assert runner.counters.consecutive_backoffs == 7


def test_should_restart_the_backoff_series_after_a_delivery() -> None:
    clock = FakeClock()
    processor = ScriptedProcessor(
        Status.BACKOFF, Status.BACKOFF, Status.READY, Status.BACKOFF, default=Status.BACKOFF
    )
    runner = SinkRunner(processor, clock=clock)

    outcomes = [runner.run_once() for _ in range(4)]

    assert outcomes == [
        RunnerOutcome.BACKOFF,
        RunnerOutcome.BACKOFF,
        RunnerOutcome.DELIVERED,
        RunnerOutcome.BACKOFF,
    ]
    assert clock.waits == [1, 2, 1]
    assert runner.counters == RunnerCounters(backoffs=3, consecutive_backoffs=1, deliveries=1)


def test_should_use_the_configured_increment_and_maximum() -> None:
    clock = FakeClock()
    runner = SinkRunner(
        ScriptedProcessor(default=Status.BACKOFF),
        backoff_sleep_increment=0.5,
        max_backoff_sleep=1.2,
        clock=clock,
    )

    for _ in range(4):
        runner.run_once()

    assert clock.waits == [0.5, 1.0, 1.2, 1.2]


def test_should_poll_again_at_once_after_a_delivery() -> None:
    clock = FakeClock()
    runner = SinkRunner(ScriptedProcessor(default=Status.READY), clock=clock)

    assert runner.run_once() is RunnerOutcome.DELIVERED
    assert runner.run_once() is RunnerOutcome.DELIVERED

    assert clock.waits == []
    assert runner.counters.deliveries == 2


def test_should_reject_negative_durations() -> None:
    with pytest.raises(ValueError):
        SinkRunner(ScriptedProcessor(), backoff_sleep_increment=-1)
    with pytest.raises(ValueError):
        SinkRunner(ScriptedProcessor(), max_backoff_sleep=-1)


# -- failures ----------------------------------------------------------------------------------


def test_should_wait_the_maximum_backoff_after_a_delivery_failure() -> None:
    clock = FakeClock()
    error = EventDeliveryException("all sinks failed")
    runner = SinkRunner(ScriptedProcessor(error), clock=clock)

    assert runner.run_once() is RunnerOutcome.FAILED

    assert clock.waits == [5.0]
    assert runner.last_error is error
    assert runner.counters == RunnerCounters(delivery_errors=1)


def test_should_count_other_exceptions_as_errors() -> None:
    clock = FakeClock()
    error = RuntimeError("bug")
    runner = SinkRunner(ScriptedProcessor(error), max_backoff_sleep=2.5, clock=clock)

    assert runner.run_once() is RunnerOutcome.FAILED

    assert clock.waits == [2.5]
    assert runner.last_error is error
    assert runner.counters == RunnerCounters(errors=1)


def test_should_log_a_failure_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    runner = SinkRunner(ScriptedProcessor(ConnectionError("reset")), clock=FakeClock())

    runner.run_once()

    (record,) = [r for r in caplog.records if r.name == "pipeline_core.sinks._runner"]
    assert "unable to deliver" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ConnectionError)


def test_should_keep_the_backoff_series_across_a_failure() -> None:
    clock = FakeClock()
    processor = ScriptedProcessor(
        Status.BACKOFF, EventDeliveryException("down"), Status.BACKOFF, default=Status.BACKOFF
    )
    runner = SinkRunner(processor, clock=clock)

    for _ in range(3):
        runner.run_once()

    assert clock.waits == [1, 5, 2]


def test_should_expose_counters_as_a_frozen_snapshot() -> None:
    runner = SinkRunner(ScriptedProcessor(default=Status.READY), clock=FakeClock())
    before = runner.counters

    runner.run_once()

    assert before == RunnerCounters()
    assert runner.counters.deliveries == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        runner.counters.deliveries = 5  # type: ignore[misc]


# -- run_once without start, and stop -----------------------------------------------------------


def test_should_run_once_without_being_started() -> None:
    processor = ScriptedProcessor(Status.READY)
    runner = SinkRunner(processor, clock=FakeClock())

    assert runner.run_once() is RunnerOutcome.DELIVERED

    assert processor.lifecycle == []
    assert not runner.running
    assert not runner.stopped


def test_should_not_wait_any_more_once_stopped() -> None:
    clock = FakeClock()
    runner = SinkRunner(ScriptedProcessor(default=Status.BACKOFF), clock=clock)

    assert runner.stop() is True
    runner.run_once()
    runner.run_once()

    assert runner.stopped
    assert clock.waits == [1, 2]
    assert clock.now == 1_000_000.0


def test_should_deliver_through_a_default_processor() -> None:
    sink = RecordingSink("only")
    wire([sink], make_batch(1), make_batch(2))
    runner = SinkRunner(DefaultSinkProcessor("group", sink), clock=FakeClock())

    outcomes = [runner.run_once() for _ in range(3)]

    assert outcomes == [RunnerOutcome.DELIVERED, RunnerOutcome.DELIVERED, RunnerOutcome.BACKOFF]
    assert sequences(sink) == [1, 2]


def test_should_not_add_a_wait_after_a_slow_delivery() -> None:
    clock = FakeClock()
    sink = SlowSink("slow", delay_s=3, clock=clock)
    wire([sink], make_batch(1))
    runner = SinkRunner(DefaultSinkProcessor("group", sink), clock=clock)

    assert runner.run_once() is RunnerOutcome.DELIVERED

    assert clock.now == 1_000_000.0 + 3
    assert clock.waits == []
    assert sequences(sink) == [1]


# -- the runner's thread -----------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_should_poll_on_its_own_named_daemon_thread_until_stopped() -> None:
    sink = RecordingSink("only")
    channel = wire([sink], make_batch(1))
    runner = SinkRunner(
        DefaultSinkProcessor("web", sink), backoff_sleep_increment=0.001, max_backoff_sleep=0.01
    )

    runner.start()
    wait_until(lambda: sequences(sink) == [1])
    channel.put(make_batch(2))
    wait_until(lambda: sequences(sink) == [1, 2])
    threads = [t for t in threading.enumerate() if t.name == "sluice-sink-runner-web"]
    assert len(threads) == 1 and threads[0].daemon
    assert runner.running

    assert runner.stop(timeout=JOIN_TIMEOUT) is True

    assert not runner.running
    assert runner.stopped
    assert sink.started and sink.stopped
    assert runner.counters.deliveries == 2


@pytest.mark.timeout(10)
def test_should_start_the_processor_first_and_stop_it_on_the_runner_thread() -> None:
    processor = ScriptedProcessor(default=Status.BACKOFF, group="g")
    runner = SinkRunner(processor, backoff_sleep_increment=0.001, max_backoff_sleep=0.001)

    runner.start()
    wait_until(lambda: processor.calls >= 3)
    runner.stop(timeout=JOIN_TIMEOUT)

    caller = threading.current_thread().name
    assert processor.lifecycle == [("start", caller), ("stop", "sluice-sink-runner-g")]


@pytest.mark.timeout(10)
def test_should_end_a_long_backoff_at_once_when_stopped() -> None:
    sink = BackoffSink("idle")
    runner = SinkRunner(
        DefaultSinkProcessor("group", sink), backoff_sleep_increment=60, max_backoff_sleep=60
    )
    runner.start()
    wait_until(lambda: runner.counters.backoffs == 1)

    began = time.monotonic()
    assert runner.stop(timeout=JOIN_TIMEOUT) is True

    assert time.monotonic() - began < 5
    assert sink.calls == 1


@pytest.mark.timeout(10)
def test_should_keep_polling_after_failures() -> None:
    processor = ScriptedProcessor(RuntimeError("bug"), RuntimeError("bug"), default=Status.READY)
    runner = SinkRunner(processor, backoff_sleep_increment=0.001, max_backoff_sleep=0.001)

    runner.start()
    wait_until(lambda: runner.counters.deliveries >= 1)
    runner.stop(timeout=JOIN_TIMEOUT)

    assert runner.counters.errors == 2


def test_should_refuse_to_start_after_a_stop() -> None:
    runner = SinkRunner(ScriptedProcessor(default=Status.BACKOFF), clock=FakeClock())
    runner.stop()

    with pytest.raises(RuntimeError):
        runner.start()


@pytest.mark.timeout(10)
def test_should_refuse_a_second_start() -> None:
    runner = SinkRunner(ScriptedProcessor(), backoff_sleep_increment=0.001, max_backoff_sleep=0.01)
    runner.start()
    try:
        with pytest.raises(RuntimeError):
            runner.start()
    finally:
        runner.stop(timeout=JOIN_TIMEOUT)


def test_should_raise_a_processor_start_failure_to_the_caller_and_start_no_thread() -> None:
    processor = ScriptedProcessor()
    processor.fail_start = OSError("cannot connect")
    runner = SinkRunner(processor, clock=FakeClock())

    with pytest.raises(OSError, match="cannot connect"):
        runner.start()

    assert not runner.running
    assert processor.calls == 0
