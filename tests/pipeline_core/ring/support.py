"""Stubs shared by the ring tests: events, recording handlers, processor threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pipeline_core.ring import (
    AlertException,
    BatchEventProcessor,
    BatchRewindStrategy,
    EventHandler,
    ExceptionHandler,
    RewindableEventHandler,
    RewindableException,
    RingBuffer,
    Sequence,
    WaitStrategy,
)
from pipeline_core.testing import wait_until

JOIN_TIMEOUT = 10.0


class StubEvent:
    """A mutable slot holding one value."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int = -1

    def __repr__(self) -> str:
        return f"StubEvent({self.value})"


def publish_values(ring: RingBuffer[StubEvent], values: Iterable[int]) -> int:
    """Publish each value as one event; return the last sequence published."""
    sequence = -1
    for value in values:
        sequence = ring.next()
        ring.get(sequence).value = value
        ring.publish(sequence)
    return sequence


@dataclass
class Call:
    """One ``on_event`` call as a handler saw it."""

    value: int
    sequence: int
    end_of_batch: bool


@dataclass
class RecordingHandler(EventHandler[StubEvent]):
    """Records every callback; can fail on chosen sequences or slow down per event."""

    fail_on: set[int] = field(default_factory=set)  # sequences whose first delivery raises
    fail_always_on: set[int] = field(default_factory=set)
    error: Callable[[], Exception] = lambda: RuntimeError("boom")
    delay: float = 0.0
    calls: list[Call] = field(default_factory=list)
    batches: list[tuple[int, int]] = field(default_factory=list)
    lifecycle: list[str] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)

    def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
        if self.delay:
            time.sleep(self.delay)
        if sequence in self.fail_always_on:
            raise self.error()
        if sequence in self.fail_on:
            self.fail_on.discard(sequence)
            raise self.error()
        self.calls.append(Call(event.value, sequence, end_of_batch))

    def on_batch_start(self, batch_size: int, queue_depth: int) -> None:
        self.batches.append((batch_size, queue_depth))

    def on_start(self) -> None:
        self.lifecycle.append("start")

    def on_shutdown(self) -> None:
        self.lifecycle.append("shutdown")

    def on_timeout(self, sequence: int) -> None:
        self.timeouts.append(sequence)

    @property
    def values(self) -> list[int]:
        return [call.value for call in self.calls]

    @property
    def sequences(self) -> list[int]:
        return [call.sequence for call in self.calls]


@dataclass
class RewindingHandler(RewindableEventHandler[StubEvent]):
    """Raises ``RewindableException`` on chosen sequences ``rewinds[sequence]`` times."""

    rewinds: dict[int, int] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)
    batches: list[tuple[int, int]] = field(default_factory=list)

    def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
        if self.rewinds.get(sequence, 0) > 0:
            self.rewinds[sequence] -= 1
            raise RewindableException(RuntimeError(f"transient failure at {sequence}"))
        self.calls.append(sequence)

    def on_batch_start(self, batch_size: int, queue_depth: int) -> None:
        self.batches.append((batch_size, queue_depth))


class ProcessorThread(threading.Thread):
    """Runs a processor and keeps what ``run`` raised instead of printing it."""

    def __init__(self, processor: BatchEventProcessor[StubEvent]) -> None:
        super().__init__(name="ring-test-processor", daemon=True)
        self.processor = processor
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.processor.run()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        """Halt the processor and join the thread; fail if it does not end."""
        self.processor.halt()
        self.join(JOIN_TIMEOUT)
        assert not self.is_alive(), "processor thread did not stop"


@contextmanager
def running(*processors: BatchEventProcessor[StubEvent]) -> Iterator[list[ProcessorThread]]:
    """Run each processor on its own thread for the block; halt and join them afterwards."""
    threads = [ProcessorThread(processor) for processor in processors]
    for thread in threads:
        thread.start()
    try:
        for processor in processors:
            wait_until(processor.is_running, what="every processor running")
        yield threads
    finally:
        for thread in threads:
            thread.stop()


def make_processor(
    ring: RingBuffer[StubEvent],
    handler: EventHandler[StubEvent],
    *dependencies: Sequence,
    gate: bool = True,
    max_batch_size: int | None = None,
    exception_handler: ExceptionHandler[StubEvent] | None = None,
    rewind_strategy: BatchRewindStrategy | None = None,
) -> BatchEventProcessor[StubEvent]:
    """A processor on ``ring`` after ``dependencies``, gating the producer unless told not to."""
    processor = BatchEventProcessor(
        ring,
        ring.new_barrier(*dependencies),
        handler,
        max_batch_size=max_batch_size,
        exception_handler=exception_handler,
        rewind_strategy=rewind_strategy,
    )
    if gate:
        ring.add_gating_sequences(processor.sequence)
    return processor


def assert_wakes_when_published(strategy: WaitStrategy) -> None:
    """A consumer waiting with ``strategy`` gets the sequence once it is published."""
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    barrier = ring.new_barrier()
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(barrier.wait_for(0)))
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive(), "returned before anything was published"
    publish_values(ring, [1])
    waiter.join(JOIN_TIMEOUT)
    assert not waiter.is_alive()
    assert result == [0]


def assert_waits_for_dependent(strategy: WaitStrategy) -> None:
    """With the cursor ahead, ``strategy`` still waits for the upstream consumer."""
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    publish_values(ring, range(4))
    upstream = Sequence()
    barrier = ring.new_barrier(upstream)
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(barrier.wait_for(1)))
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive(), "passed an upstream consumer"
    upstream.set(2)
    waiter.join(JOIN_TIMEOUT)
    assert not waiter.is_alive()
    assert result == [2]


def assert_alert_ends_wait(strategy: WaitStrategy) -> float:
    """``alert()`` ends a wait on ``strategy`` with ``AlertException``; returns the seconds
    from the alert to the end of the wait."""
    ring = RingBuffer.create_single_producer(StubEvent, 8, strategy)
    barrier = ring.new_barrier()
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            barrier.wait_for(0)
        except AlertException as exc:
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive()
    started = time.monotonic()
    barrier.alert()
    waiter.join(JOIN_TIMEOUT)
    assert not waiter.is_alive()
    assert len(raised) == 1
    return time.monotonic() - started


@dataclass
class RecordingExceptionHandler(ExceptionHandler[StubEvent]):
    """Keeps every exception it is given; skips the event, or re-raises when told to."""

    rethrow: bool = False
    event_errors: list[tuple[BaseException, int, int | None]] = field(default_factory=list)
    start_errors: list[BaseException] = field(default_factory=list)
    shutdown_errors: list[BaseException] = field(default_factory=list)

    def handle_event_exception(
        self, exc: BaseException, sequence: int, event: StubEvent | None
    ) -> None:
        self.event_errors.append((exc, sequence, None if event is None else event.value))
        if self.rethrow:
            raise exc

    def handle_on_start_exception(self, exc: BaseException) -> None:
        self.start_errors.append(exc)

    def handle_on_shutdown_exception(self, exc: BaseException) -> None:
        self.shutdown_errors.append(exc)
