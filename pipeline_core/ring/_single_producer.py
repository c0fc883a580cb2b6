"""A ring buffer claimed by exactly one producing thread."""

from __future__ import annotations

from typing import TypeVar

from ._exceptions import InsufficientCapacityException
from ._ring_buffer import EventFactory, RingBuffer
from ._sequence import INITIAL_CURSOR_VALUE, minimum_sequence
from ._wait_strategies import WaitStrategy

__all__ = ["SingleProducerRingBuffer"]

E = TypeVar("E")


class SingleProducerRingBuffer(RingBuffer[E]):
    """The ring for one producer: claiming is plain arithmetic, publishing one store.

    The producer keeps its last claimed sequence and the slowest gating sequence it saw; it
    reads the consumers' sequences only when a claim would pass that cached value.

    Threading model: ``next``, ``try_next`` and ``publish`` must all be called from the one
    producing thread.
    """

    def __init__(
        self, event_factory: EventFactory[E], buffer_size: int, wait_strategy: WaitStrategy | None
    ) -> None:
        super().__init__(event_factory, buffer_size, wait_strategy)
        self._next_value = INITIAL_CURSOR_VALUE  # highest claimed
        self._cached_gating = INITIAL_CURSOR_VALUE  # slowest consumer, as last seen

    def next(self, n: int = 1) -> int:
        if n < 1 or n > self._buffer_size:
            self._check_claim_size(n)
        next_value = self._next_value
        next_sequence = next_value + n
        wrap_point = next_sequence - self._buffer_size
        cached = self._cached_gating
        if wrap_point > cached or cached > next_value:
            self._cached_gating = self._await_capacity(wrap_point, next_value)
        self._next_value = next_sequence
        return next_sequence

    def try_next(self, n: int = 1) -> int:
        self._check_claim_size(n)
        if not self._has_available_capacity(n):
            raise InsufficientCapacityException(f"no room for {n} more events")
        self._next_value += n
        return self._next_value

    def publish(self, lo: int, hi: int | None = None) -> None:
        self._cursor._value = lo if hi is None else hi  # Sequence.set() without the call
        self._wait_strategy.signal_all_when_blocking()

    @property
    def cursor(self) -> int:
        return self._cursor.get()

    def remaining_capacity(self) -> int:
        produced = self._next_value
        consumed = minimum_sequence(self._gating_sequences, produced)
        return self._buffer_size - (produced - consumed)

    def highest_published_sequence(self, lower_bound: int, available_sequence: int) -> int:
        # Publishing is in order, so everything up to the cursor is published.
        return available_sequence

    def _has_available_capacity(self, required: int) -> bool:
        next_value = self._next_value
        wrap_point = next_value + required - self._buffer_size
        cached = self._cached_gating
        if wrap_point > cached or cached > next_value:
            minimum = minimum_sequence(self._gating_sequences, next_value)
            self._cached_gating = minimum
            if wrap_point > minimum:
                return False
        return True
