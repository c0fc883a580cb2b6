from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import (
    BackoffWaitStrategy,
    BatchEventProcessor,
    BlockingWaitStrategy,
    BusySpinWaitStrategy,
    EventHandler,
    IgnoreExceptionHandler,
    ProcessorAlreadyRunningError,
    ProcessorState,
    RewindableException,
    RingBuffer,
    Sequence,
    SleepingWaitStrategy,
    TimeoutBlockingWaitStrategy,
    WaitStrategy,
    YieldingWaitStrategy,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import (
    JOIN_TIMEOUT,
    Call,
    ProcessorThread,
    RecordingExceptionHandler,
    RecordingHandler,
    StubEvent,
    make_processor,
    publish_values,
    running,
)


def make_ring(size: int = 16, strategy: WaitStrategy | None = None) -> RingBuffer[StubEvent]:
    return RingBuffer.create_single_producer(StubEvent, size, strategy)


def run_until_failed(processor: BatchEventProcessor[StubEvent]) -> ProcessorThread:
    thread = ProcessorThread(processor)
    thread.start()
    thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive(), "processor did not stop on a fatal exception"
    return thread


# -- lifecycle ---------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_should_notify_start_before_events_and_shutdown_after_halt() -> None:
    ring = make_ring()
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    assert not processor.is_running()
    with running(processor):
        wait_until(lambda: handler.lifecycle == ["start"])
        assert processor.is_running()
        running_state = processor.state
        publish_values(ring, [7])
        wait_until(lambda: processor.sequence.get() == 0)
    assert running_state is ProcessorState.RUNNING
    assert handler.lifecycle == ["start", "shutdown"]
    assert processor.state is ProcessorState.IDLE
    assert not processor.is_running()


@pytest.mark.timeout(30)
def test_should_refuse_to_run_twice_at_once() -> None:
    ring = make_ring()
    processor = make_processor(ring, RecordingHandler())
    with running(processor) as threads:
        with pytest.raises(ProcessorAlreadyRunningError):
            processor.run()
        assert threads[0].is_alive()
    assert threads[0].error is None


@pytest.mark.timeout(30)
def test_should_exit_early_when_halted_before_run() -> None:
    ring = make_ring()
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    publish_values(ring, [1, 2])
    processor.halt()
    processor.run()  # returns at once on this thread
    assert handler.lifecycle == ["start", "shutdown"]
    assert handler.calls == []
    assert processor.state is ProcessorState.HALTED


@pytest.mark.timeout(30)
def test_should_resume_after_last_processed_event_when_run_again() -> None:
    ring = make_ring()
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    with running(processor):
        publish_values(ring, [10, 11])
        wait_until(lambda: processor.sequence.get() == 1)
    publish_values(ring, [12])
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 2)
    assert handler.values == [10, 11, 12]
    assert handler.lifecycle == ["start", "shutdown", "start", "shutdown"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "strategy",
    [
        BlockingWaitStrategy(),
        TimeoutBlockingWaitStrategy(10.0),
        SleepingWaitStrategy(),
        YieldingWaitStrategy(),
        BusySpinWaitStrategy(),
        BackoffWaitStrategy(10.0, 10.0, alert_poll_seconds=0.01),
    ],
    ids=lambda strategy: type(strategy).__name__,
)
def test_should_halt_a_processor_waiting_for_events(strategy: WaitStrategy) -> None:
    ring = make_ring(strategy=strategy)
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    publish_values(ring, [1])
    with running(processor) as threads:
        wait_until(lambda: processor.sequence.get() == 0)
        threads[0].join(0.05)  # now waiting for sequence 1
    assert not threads[0].is_alive()
    assert threads[0].error is None
    assert handler.lifecycle == ["start", "shutdown"]


def test_should_hand_its_sequence_to_the_handler() -> None:
    received: list[Sequence] = []

    class Handler(RecordingHandler):
        def set_sequence_callback(self, sequence: Sequence) -> None:
            received.append(sequence)

    processor = make_processor(make_ring(), Handler())
    assert received == [processor.sequence]


def test_should_reject_max_batch_size_below_one() -> None:
    ring = make_ring()
    with pytest.raises(ValueError):
        BatchEventProcessor(ring, ring.new_barrier(), RecordingHandler(), max_batch_size=0)


# -- batches -----------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_should_deliver_available_events_as_one_batch_with_end_of_batch_on_last() -> None:
    ring = make_ring()
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    publish_values(ring, [10, 11, 12])
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 2)
    assert handler.calls == [Call(10, 0, False), Call(11, 1, False), Call(12, 2, True)]
    assert handler.batches == [(3, 3)]


@pytest.mark.timeout(30)
def test_should_bound_batches_by_max_batch_size_and_report_queue_depth() -> None:
    ring = make_ring()
    handler = RecordingHandler()
    processor = make_processor(ring, handler, max_batch_size=3)
    publish_values(ring, range(10))
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 9)
    assert handler.batches == [(3, 10), (3, 7), (3, 4), (1, 1)]
    assert [c.sequence for c in handler.calls if c.end_of_batch] == [2, 5, 8, 9]
    assert handler.values == list(range(10))


@pytest.mark.timeout(30)
def test_should_advance_sequence_only_after_whole_batch() -> None:
    ring = make_ring()
    seen: list[int] = []

    class Handler(EventHandler[StubEvent]):
        def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
            seen.append(processor.sequence.get())

    processor = make_processor(ring, Handler())
    publish_values(ring, range(4))
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 3)
    assert seen == [-1, -1, -1, -1]


# -- exceptions --------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_should_stop_on_fatal_exception_after_shutdown_without_committing_batch() -> None:
    ring = make_ring()
    handler = RecordingHandler(fail_always_on={2})
    processor = make_processor(ring, handler)  # FatalExceptionHandler by default
    publish_values(ring, range(5))
    thread = run_until_failed(processor)
    assert isinstance(thread.error, RuntimeError)
    assert str(thread.error) == "boom"
    assert handler.values == [0, 1]
    assert handler.lifecycle == ["start", "shutdown"]
    assert processor.state is ProcessorState.IDLE
    assert processor.sequence.get() == -1, "a failed batch must not be committed"


@pytest.mark.timeout(30)
def test_should_skip_poison_event_and_continue_with_ignore_exception_handler() -> None:
    ring = make_ring()
    handler = RecordingHandler(fail_always_on={2})
    processor = make_processor(ring, handler, exception_handler=IgnoreExceptionHandler())
    publish_values(ring, range(5))
    with running(processor) as threads:
        wait_until(lambda: processor.sequence.get() == 4)
        publish_values(ring, [5])
        wait_until(lambda: processor.sequence.get() == 5)
    assert threads[0].error is None
    assert handler.values == [0, 1, 3, 4, 5]
    assert handler.batches == [(5, 5), (2, 2), (1, 1)]


@pytest.mark.timeout(30)
def test_should_give_exception_handler_the_failing_sequence_and_event() -> None:
    ring = make_ring()
    errors = RecordingExceptionHandler()
    handler = RecordingHandler(fail_on={1})
    processor = make_processor(ring, handler, exception_handler=errors)
    publish_values(ring, [40, 41, 42])
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 2)
    [(exc, sequence, value)] = errors.event_errors
    assert isinstance(exc, RuntimeError)
    assert (sequence, value) == (1, 41)


@pytest.mark.timeout(30)
def test_should_treat_rewindable_exception_from_ordinary_handler_as_error() -> None:
    ring = make_ring()
    errors = RecordingExceptionHandler()
    handler = RecordingHandler(fail_on={1}, error=lambda: RewindableException())
    processor = make_processor(ring, handler, exception_handler=errors)
    publish_values(ring, [0, 1, 2])
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 2)
    assert [(type(e), s) for e, s, _ in errors.event_errors] == [(RewindableException, 1)]
    assert handler.values == [0, 2], "an ordinary handler's batch must not be replayed"


@pytest.mark.timeout(30)
def test_should_report_exception_in_on_batch_start_without_an_event() -> None:
    ring = make_ring()
    errors = RecordingExceptionHandler()

    class Handler(RecordingHandler):
        def on_batch_start(self, batch_size: int, queue_depth: int) -> None:
            if not self.batches:
                self.batches.append((batch_size, queue_depth))
                raise ValueError("bad batch")

    handler = Handler()
    processor = make_processor(ring, handler, exception_handler=errors)
    publish_values(ring, [0, 1, 2])
    with running(processor):
        wait_until(lambda: processor.sequence.get() == 2)
    [(exc, sequence, value)] = errors.event_errors
    assert isinstance(exc, ValueError)
    assert (sequence, value) == (0, None)
    assert handler.values == [1, 2]


@pytest.mark.timeout(30)
def test_should_route_lifecycle_exceptions_to_exception_handler_and_keep_running() -> None:
    ring = make_ring()
    errors = RecordingExceptionHandler()

    class Handler(RecordingHandler):
        def on_start(self) -> None:
            raise RuntimeError("start failed")

        def on_shutdown(self) -> None:
            raise RuntimeError("shutdown failed")

    handler = Handler()
    processor = make_processor(ring, handler, exception_handler=errors)
    with running(processor) as threads:
        publish_values(ring, [1])
        wait_until(lambda: processor.sequence.get() == 0)
    assert threads[0].error is None
    assert [str(e) for e in errors.start_errors] == ["start failed"]
    assert [str(e) for e in errors.shutdown_errors] == ["shutdown failed"]
    assert handler.values == [1]


# -- timeouts ----------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_should_call_on_timeout_with_processor_sequence_when_wait_times_out() -> None:
    ring = make_ring(strategy=TimeoutBlockingWaitStrategy(0.02))
    handler = RecordingHandler()
    processor = make_processor(ring, handler)
    with running(processor):
        wait_until(lambda: len(handler.timeouts) >= 2)
        publish_values(ring, [5, 6])
        wait_until(lambda: processor.sequence.get() == 1)
        count = len(handler.timeouts)
        wait_until(lambda: len(handler.timeouts) >= count + 1)
    assert handler.values == [5, 6]
    assert set(handler.timeouts[:2]) == {-1}
    assert handler.timeouts[-1] == 1


@pytest.mark.timeout(30)
def test_should_give_on_timeout_exceptions_to_exception_handler() -> None:
    ring = make_ring(strategy=TimeoutBlockingWaitStrategy(0.02))
    errors = RecordingExceptionHandler()

    class Handler(RecordingHandler):
        def on_timeout(self, sequence: int) -> None:
            raise RuntimeError("flush failed")

    processor = make_processor(ring, Handler(), exception_handler=errors)
    with running(processor):
        wait_until(lambda: len(errors.event_errors) >= 1)
    exc, sequence, value = errors.event_errors[0]
    assert str(exc) == "flush failed"
    assert (sequence, value) == (-1, None)


@pytest.mark.timeout(30)
def test_should_stop_when_exception_handler_raises_on_timeout_failure() -> None:
    ring = make_ring(strategy=TimeoutBlockingWaitStrategy(0.02))

    class Handler(RecordingHandler):
        def on_timeout(self, sequence: int) -> None:
            raise RuntimeError("flush failed")

    handler = Handler()
    processor = make_processor(ring, handler)
    thread = run_until_failed(processor)
    assert str(thread.error) == "flush failed"
    assert handler.lifecycle == ["start", "shutdown"]


@pytest.mark.timeout(30)
def test_should_report_running_until_loop_has_ended() -> None:
    ring = make_ring()
    release = threading.Event()

    class Handler(RecordingHandler):
        def on_shutdown(self) -> None:
            release.wait(JOIN_TIMEOUT)
            super().on_shutdown()

    processor = make_processor(ring, Handler())
    thread = ProcessorThread(processor)
    thread.start()
    wait_until(lambda: processor.state is ProcessorState.RUNNING)
    processor.halt()
    assert processor.is_running(), "still shutting down"
    release.set()
    thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive()
    assert not processor.is_running()
