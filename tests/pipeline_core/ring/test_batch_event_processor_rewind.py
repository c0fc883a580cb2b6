"""BatchEventProcessor replaying batches for a RewindableEventHandler."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from pipeline_core.ring import (
    BatchRewindStrategy,
    EventuallyGiveUpBatchRewindStrategy,
    IgnoreExceptionHandler,
    NanosecondPauseBatchRewindStrategy,
    RewindableException,
    RewindAction,
    RingBuffer,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.ring.support import (
    JOIN_TIMEOUT,
    ProcessorThread,
    RecordingExceptionHandler,
    RewindingHandler,
    StubEvent,
    make_processor,
    publish_values,
    running,
)


@dataclass
class RecordingRewindStrategy(BatchRewindStrategy):
    attempts: list[int] = field(default_factory=list)
    answer: RewindAction = RewindAction.REWIND

    def handle_rewind_exception(self, exc: RewindableException, attempts: int) -> RewindAction:
        self.attempts.append(attempts)
        return self.answer


def make_ring() -> RingBuffer[StubEvent]:
    return RingBuffer.create_single_producer(StubEvent, 16)


def process(events: int, handler: RewindingHandler, **options: object) -> RewindingHandler:
    ring = make_ring()
    processor = make_processor(ring, handler, **options)  # type: ignore[arg-type]
    publish_values(ring, range(events))
    with running(processor) as threads:
        wait_until(lambda: processor.sequence.get() == events - 1)
    assert threads[0].error is None
    return handler


@pytest.mark.timeout(30)
def test_should_rewind_on_event_in_middle_of_batch() -> None:
    handler = process(6, RewindingHandler(rewinds={3: 1}))
    assert handler.calls == [0, 1, 2, 0, 1, 2, 3, 4, 5]
    assert handler.batches == [(6, 6), (6, 6)]


@pytest.mark.timeout(30)
def test_should_rewind_on_first_event_of_batch() -> None:
    handler = process(3, RewindingHandler(rewinds={0: 1}))
    assert handler.calls == [0, 1, 2]
    assert handler.batches == [(3, 3), (3, 3)]


@pytest.mark.timeout(30)
def test_should_rewind_on_last_event_of_batch() -> None:
    handler = process(3, RewindingHandler(rewinds={2: 1}))
    assert handler.calls == [0, 1, 0, 1, 2]


@pytest.mark.timeout(30)
def test_should_rewind_only_the_failing_batch_when_batches_are_bounded() -> None:
    handler = process(6, RewindingHandler(rewinds={4: 1}), max_batch_size=3)
    assert handler.calls == [0, 1, 2, 3, 3, 4, 5]
    assert handler.batches == [(3, 6), (3, 3), (3, 3)]


@pytest.mark.timeout(30)
def test_should_rewind_repeatedly_with_simple_strategy_counting_attempts() -> None:
    strategy = RecordingRewindStrategy()
    handler = process(3, RewindingHandler(rewinds={1: 3}), rewind_strategy=strategy)
    assert strategy.attempts == [1, 2, 3]
    assert handler.calls == [0, 0, 0, 0, 1, 2]


@pytest.mark.timeout(30)
def test_should_reset_attempts_after_a_successful_batch() -> None:
    strategy = RecordingRewindStrategy()
    handler = RewindingHandler(rewinds={1: 1, 4: 1})
    process(6, handler, max_batch_size=3, rewind_strategy=strategy)
    assert strategy.attempts == [1, 1]
    assert handler.calls == [0, 0, 1, 2, 3, 3, 4, 5]


@pytest.mark.timeout(30)
def test_should_give_up_after_max_attempts_and_hand_exception_to_exception_handler() -> None:
    errors = RecordingExceptionHandler()
    handler = process(
        6,
        RewindingHandler(rewinds={2: 100}),
        rewind_strategy=EventuallyGiveUpBatchRewindStrategy(3),
        exception_handler=errors,
    )
    assert handler.calls == [0, 1, 0, 1, 0, 1, 3, 4, 5]
    [(exc, sequence, value)] = errors.event_errors
    assert isinstance(exc, RewindableException)
    assert (sequence, value) == (2, 2)


@pytest.mark.timeout(30)
def test_should_start_counting_again_after_giving_up() -> None:
    strategy = RecordingRewindStrategy(answer=RewindAction.THROW)
    process(
        4,
        RewindingHandler(rewinds={1: 1, 2: 1}),
        rewind_strategy=strategy,
        exception_handler=IgnoreExceptionHandler(),
    )
    assert strategy.attempts == [1, 1]


@pytest.mark.timeout(30)
def test_should_stop_processor_when_given_up_rewind_is_fatal() -> None:
    ring = make_ring()
    handler = RewindingHandler(rewinds={1: 100})
    processor = make_processor(
        ring, handler, rewind_strategy=EventuallyGiveUpBatchRewindStrategy(2)
    )
    publish_values(ring, range(3))
    thread = ProcessorThread(processor)
    thread.start()
    thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive()
    assert isinstance(thread.error, RewindableException)
    assert isinstance(thread.error.__cause__, RuntimeError)
    assert handler.calls == [0, 0]
    assert processor.sequence.get() == -1


@pytest.mark.timeout(30)
def test_should_pause_before_each_rewind_with_nanosecond_pause_strategy() -> None:
    started = time.monotonic()
    handler = process(
        2,
        RewindingHandler(rewinds={0: 2}),
        rewind_strategy=NanosecondPauseBatchRewindStrategy(50_000_000),
    )
    assert time.monotonic() - started >= 0.1
    assert handler.calls == [0, 1]
