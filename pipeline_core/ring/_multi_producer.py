"""A ring buffer that any number of threads may claim from and publish to."""

from __future__ import annotations

from typing import TypeVar

from ._exceptions import InsufficientCapacityException
from ._ring_buffer import EventFactory, RingBuffer
from ._sequence import INITIAL_CURSOR_VALUE, minimum_sequence
from ._wait_strategies import WaitStrategy

__all__ = ["MultiProducerRingBuffer"]

E = TypeVar("E")


class MultiProducerRingBuffer(RingBuffer[E]):
    """The ring for several producers: atomic claims, out-of-order publication.

    The internal cursor is the highest *claimed* sequence, advanced atomically. Producers may
    publish their claims in any order, so each slot records the round (``sequence >>
    log2(buffer_size)``) it was last published for; consumers read up to the first slot that
    is claimed but not yet published.

    Threading model: every method may be called from any thread.
    """

    def __init__(
        self, event_factory: EventFactory[E], buffer_size: int, wait_strategy: WaitStrategy | None
    ) -> None:
        super().__init__(event_factory, buffer_size, wait_strategy)
        self._available = [-1] * buffer_size  # round each slot was last published for
        self._index_shift = buffer_size.bit_length() - 1
        self._cached_gating = INITIAL_CURSOR_VALUE  # slowest consumer, as last seen

    def next(self, n: int = 1) -> int:
        self._check_claim_size(n)
        next_sequence = self._cursor.add_and_get(n)
        current = next_sequence - n
        wrap_point = next_sequence - self._buffer_size
        cached = self._cached_gating
        if wrap_point > cached or cached > current:
            # The slots are ours already; wait until the consumers have left them.
            self._cached_gating = self._await_capacity(wrap_point, current)
        return next_sequence

    def try_next(self, n: int = 1) -> int:
        self._check_claim_size(n)
        while True:
            current = self._cursor.get()
            next_sequence = current + n
            minimum = minimum_sequence(self._gating_sequences, current)
            if next_sequence - self._buffer_size > minimum:
                raise InsufficientCapacityException(f"no room for {n} more events")
            if self._cursor.compare_and_set(current, next_sequence):
                self._cached_gating = minimum
                return next_sequence

    def publish(self, lo: int, hi: int | None = None) -> None:
        available, mask, shift = self._available, self._mask, self._index_shift
        if hi is None:
            available[lo & mask] = lo >> shift
        else:
            for sequence in range(lo, hi + 1):
                available[sequence & mask] = sequence >> shift
        self._wait_strategy.signal_all_when_blocking()

    @property
    def cursor(self) -> int:
        claimed = self._cursor.get()
        return self.highest_published_sequence(max(claimed - self._buffer_size + 1, 0), claimed)

    def remaining_capacity(self) -> int:
        produced = self._cursor.get()
        consumed = minimum_sequence(self._gating_sequences, produced)
        return self._buffer_size - (produced - consumed)

    def highest_published_sequence(self, lower_bound: int, available_sequence: int) -> int:
        available, mask, shift = self._available, self._mask, self._index_shift
        for sequence in range(lower_bound, available_sequence + 1):
            if available[sequence & mask] != sequence >> shift:
                return sequence - 1
        return available_sequence

    def is_available(self, sequence: int) -> bool:
        """Whether ``sequence`` has been published (and not yet overwritten)."""
        return self._available[sequence & self._mask] == sequence >> self._index_shift
