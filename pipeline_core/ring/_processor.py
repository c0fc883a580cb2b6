"""The batch event processor: a consumer loop that feeds a ring's events to an EventHandler."""

from __future__ import annotations

import enum
import threading
from typing import Generic, TypeVar

from ._barrier import SequenceBarrier
from ._exception_handlers import ExceptionHandler, FatalExceptionHandler
from ._exceptions import (
    AlertException,
    ProcessorAlreadyRunningError,
    RewindableException,
    TimeoutException,
)
from ._handlers import EventHandler, RewindableEventHandler
from ._rewind import BatchRewindStrategy, RewindAction, SimpleBatchRewindStrategy
from ._ring_buffer import DataProvider, RingBuffer
from ._sequence import Sequence

__all__ = ["BatchEventProcessor", "ProcessorState"]

E = TypeVar("E")


class ProcessorState(enum.Enum):
    """Lifecycle of a ``BatchEventProcessor``: IDLE -> RUNNING -> (HALTED) -> IDLE."""

    IDLE = "idle"
    HALTED = "halted"
    RUNNING = "running"


class BatchEventProcessor(Generic[E]):
    """Waits on a barrier for published events and hands them to an ``EventHandler`` in batches.

    Each turn of the loop waits once on the barrier, takes every available event up to
    ``max_batch_size``, calls ``on_batch_start`` and then ``on_event`` per event, and only
    after the whole batch succeeded moves ``sequence`` to its last event. That sequence is what
    producers (``RingBuffer.add_gating_sequences``) and downstream stages
    (``RingBuffer.new_barrier(processor.sequence)``) follow.

    Exceptions: a ``RewindableException`` from a ``RewindableEventHandler`` is put to the
    rewind strategy (replay the batch, or give up). Any other exception, a given-up rewind, or
    a ``RewindableException`` from an ordinary handler goes to the exception handler: if it
    returns, the failing event counts as processed and the loop goes on with the next one; if
    it raises, the loop stops. Wait-strategy timeouts call ``on_timeout``.

    Threading model: ``run`` is the body of one dedicated thread; ``halt``, ``is_running`` and
    ``sequence`` may be used from any thread.

    Lifecycle: IDLE until ``run`` switches it to RUNNING (atomically: a second concurrent
    ``run`` raises ``ProcessorAlreadyRunningError``). ``halt`` sets HALTED and alerts the
    barrier; the loop then ends, ``on_shutdown`` is called and the state goes back to IDLE, so
    the processor can be run again and continues after its last processed event. A processor
    halted before it ran calls ``on_start`` and ``on_shutdown`` and returns at once, staying
    HALTED.

    Args:
        data_provider: where events are read, normally the ``RingBuffer``.
        sequence_barrier: the barrier to wait on, from ``ring.new_barrier(...)``.
        event_handler: the user code.
        max_batch_size: the most events per batch; ``None`` (the default) means unbounded.
        exception_handler: defaults to ``FatalExceptionHandler()``.
        rewind_strategy: consulted for ``RewindableEventHandler``s only; defaults to
            ``SimpleBatchRewindStrategy()``.

    Raises:
        ValueError: if ``max_batch_size`` is less than 1.
    """

    def __init__(
        self,
        data_provider: DataProvider[E],
        sequence_barrier: SequenceBarrier,
        event_handler: EventHandler[E],
        *,
        max_batch_size: int | None = None,
        exception_handler: ExceptionHandler[E] | None = None,
        rewind_strategy: BatchRewindStrategy | None = None,
    ) -> None:
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        self._data_provider = data_provider
        self._barrier = sequence_barrier
        self._handler = event_handler
        self._batch_limit_offset = None if max_batch_size is None else max_batch_size - 1
        self._exception_handler: ExceptionHandler[E] = (
            exception_handler if exception_handler is not None else FatalExceptionHandler()
        )
        self._rewind_strategy = (
            rewind_strategy if rewind_strategy is not None else SimpleBatchRewindStrategy()
        )
        self._rewindable = isinstance(event_handler, RewindableEventHandler)
        self._retries_attempted = 0  # consecutive rewinds of the current batch
        self._sequence = Sequence()
        self._state = ProcessorState.IDLE  # written under _state_lock, read without it
        self._state_lock = threading.Lock()
        event_handler.set_sequence_callback(self._sequence)

    @property
    def sequence(self) -> Sequence:
        """The last event this processor completed; use it to gate producers or later stages."""
        return self._sequence

    @property
    def state(self) -> ProcessorState:
        """The current lifecycle state."""
        return self._state

    @property
    def exception_handler(self) -> ExceptionHandler[E]:
        """What event exceptions are handed to; may be replaced before ``run``."""
        return self._exception_handler

    @exception_handler.setter
    def exception_handler(self, handler: ExceptionHandler[E]) -> None:
        self._exception_handler = handler

    def is_running(self) -> bool:
        """True from ``run`` until the loop has ended (HALTED counts as running)."""
        return self._state is not ProcessorState.IDLE

    def halt(self) -> None:
        """Ask the loop to stop after the current batch; returns at once (join the thread)."""
        with self._state_lock:
            self._state = ProcessorState.HALTED
        self._barrier.alert()

    def run(self) -> None:
        """Process events until halted or stopped by the exception handler.

        Raises:
            ProcessorAlreadyRunningError: if the processor is already running.
            BaseException: whatever the exception handler raised, after ``on_shutdown``.
        """
        with self._state_lock:
            witness = self._state
            if witness is ProcessorState.IDLE:
                self._state = ProcessorState.RUNNING
        if witness is ProcessorState.RUNNING:
            raise ProcessorAlreadyRunningError("the processor is already running")
        if witness is ProcessorState.HALTED:
            self._notify_start()
            self._notify_shutdown()
            return
        self._barrier.clear_alert()
        self._notify_start()
        try:
            if self._state is ProcessorState.RUNNING:
                self._process_events()
        finally:
            self._notify_shutdown()
            with self._state_lock:
                self._state = ProcessorState.IDLE

    def _process_events(self) -> None:
        # Hot loop: bind what is used per batch and per event to locals, and read a ring's
        # slots directly instead of calling get() per event.
        wait_for = self._barrier.wait_for
        get = self._data_provider.get
        slots = _slots_of(self._data_provider)
        entries, mask = slots if slots is not None else ([], 0)
        on_event = self._handler.on_event
        on_batch_start = self._handler.on_batch_start
        sequence = self._sequence
        limit_offset = self._batch_limit_offset
        event: E | None
        next_sequence = sequence.get() + 1
        while True:
            start_of_batch = current = next_sequence
            event = None
            try:
                try:
                    available = wait_for(next_sequence)
                    end = available
                    if limit_offset is not None and next_sequence + limit_offset < available:
                        end = next_sequence + limit_offset
                    if next_sequence <= end:
                        on_batch_start(end - next_sequence + 1, available - next_sequence + 1)
                        if slots is not None:
                            for current in range(next_sequence, end + 1):
                                event = entries[current & mask]
                                on_event(event, current, current == end)
                        else:
                            for current in range(next_sequence, end + 1):
                                event = get(current)
                                on_event(event, current, current == end)
                        next_sequence = end + 1
                        self._retries_attempted = 0
                        sequence.set(end)
                except RewindableException as exc:
                    next_sequence = self._attempt_rewind(exc, start_of_batch)
            except TimeoutException:
                self._notify_timeout(sequence.get())
            except AlertException:
                if self._state is not ProcessorState.RUNNING:
                    break
            except Exception as exc:
                # `current` is the failing event (or the batch start when no event was reached).
                # The handler decides: return to skip that event, raise to stop the loop.
                self._exception_handler.handle_event_exception(exc, current, event)
                sequence.set(current)
                next_sequence = current + 1

    def _attempt_rewind(self, exc: RewindableException, start_of_batch: int) -> int:
        if not self._rewindable:
            raise exc  # only a RewindableEventHandler may rewind: an ordinary error
        self._retries_attempted += 1
        action = self._rewind_strategy.handle_rewind_exception(exc, self._retries_attempted)
        if action is RewindAction.REWIND:
            return start_of_batch
        self._retries_attempted = 0
        raise exc

    def _notify_timeout(self, sequence: int) -> None:
        try:
            self._handler.on_timeout(sequence)
        except Exception as exc:
            self._exception_handler.handle_event_exception(exc, sequence, None)

    def _notify_start(self) -> None:
        try:
            self._handler.on_start()
        except Exception as exc:
            self._exception_handler.handle_on_start_exception(exc)

    def _notify_shutdown(self) -> None:
        try:
            self._handler.on_shutdown()
        except Exception as exc:
            self._exception_handler.handle_on_shutdown_exception(exc)


def _slots_of(provider: DataProvider[E]) -> tuple[list[E], int] | None:
    # A ring's slot list and index mask, read once so that the loop can index it directly.
    if isinstance(provider, RingBuffer):
        return provider._entries, provider._mask
    return None
