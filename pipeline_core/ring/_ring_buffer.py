"""The ring buffer: preallocated slots, a cursor, and the consumers' gating sequences."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from ._barrier import SequenceBarrier
from ._blocking_wait_strategies import BlockingWaitStrategy
from ._sequence import Sequence, minimum_sequence
from ._wait_strategies import WaitStrategy

__all__ = ["DataProvider", "EventFactory", "RingBuffer"]

E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)

EventFactory = Callable[[], E]
"""Makes one empty event; called ``buffer_size`` times when the ring is created."""

_YIELD_SPINS = 100  # capacity polls that only release the GIL before the producer parks
_PARK_SECONDS = 0.0001


class DataProvider(Protocol[E_co]):
    """Anything that hands out the event stored for a sequence (a ``RingBuffer``)."""

    def get(self, sequence: int) -> E_co:
        """Return the event stored for ``sequence``."""
        ...


class RingBuffer(ABC, Generic[E]):
    """A bounded ring of reusable events between producers and consumers.

    Producers claim slots with ``next(n)`` (or ``try_next(n)``), fill the events returned by
    ``get(sequence)`` in place, and make them visible with ``publish``. Consumers wait on a
    barrier from ``new_barrier()`` and report progress through their own ``Sequence``, which
    is registered with ``add_gating_sequences`` so that producers never overwrite a slot a
    consumer has not processed yet (back-pressure). A ring without gating sequences never
    blocks its producers and overwrites unread slots.

    Create one with ``create_single_producer`` (one producing thread, the fastest) or
    ``create_multi_producer`` (any number of producing threads).

    Threading model: ``get`` is safe from any thread for sequences the caller has claimed or
    has been given by its barrier. Gating sequences may be added and removed from any thread.

    Args:
        event_factory: makes the preallocated events.
        buffer_size: the number of slots, a power of two.
        wait_strategy: how consumers wait; ``BlockingWaitStrategy()`` by default.

    Raises:
        ValueError: if ``buffer_size`` is not a power of two.
    """

    def __init__(
        self,
        event_factory: EventFactory[E],
        buffer_size: int,
        wait_strategy: WaitStrategy | None = None,
    ) -> None:
        if buffer_size < 1 or buffer_size & (buffer_size - 1):
            raise ValueError(f"buffer_size must be a power of two, got {buffer_size}")
        self._buffer_size = buffer_size
        self._mask = buffer_size - 1
        self._entries: list[E] = [event_factory() for _ in range(buffer_size)]
        self._wait_strategy = wait_strategy if wait_strategy is not None else BlockingWaitStrategy()
        self._cursor = Sequence()
        self._gating_sequences: tuple[Sequence, ...] = ()  # replaced whole, never mutated
        self._gating_lock = threading.Lock()  # serialises add/remove, not readers

    @classmethod
    def create_single_producer(
        cls,
        event_factory: EventFactory[E],
        buffer_size: int,
        wait_strategy: WaitStrategy | None = None,
    ) -> RingBuffer[E]:
        """Make a ring for exactly one producing thread (claims are not thread-safe)."""
        from ._single_producer import SingleProducerRingBuffer

        return SingleProducerRingBuffer(event_factory, buffer_size, wait_strategy)

    @classmethod
    def create_multi_producer(
        cls,
        event_factory: EventFactory[E],
        buffer_size: int,
        wait_strategy: WaitStrategy | None = None,
    ) -> RingBuffer[E]:
        """Make a ring that any number of threads may claim from and publish to."""
        from ._multi_producer import MultiProducerRingBuffer

        return MultiProducerRingBuffer(event_factory, buffer_size, wait_strategy)

    # -- producer side -------------------------------------------------------------------------

    @abstractmethod
    def next(self, n: int = 1) -> int:
        """Claim the next ``n`` slots, waiting while that would overrun a gating sequence.

        Args:
            n: how many slots to claim, ``1 <= n <= buffer_size``.

        Returns:
            The highest claimed sequence; the claimed range is ``[result - n + 1, result]``.

        Raises:
            ValueError: if ``n`` is out of range.
        """

    @abstractmethod
    def try_next(self, n: int = 1) -> int:
        """Claim the next ``n`` slots if that is possible without waiting.

        Returns:
            The highest claimed sequence.

        Raises:
            InsufficientCapacityException: if a gating sequence would be overrun.
            ValueError: if ``n`` is out of range.
        """

    @abstractmethod
    def publish(self, lo: int, hi: int | None = None) -> None:
        """Make claimed slots visible to consumers and wake blocked consumers.

        Args:
            lo: the sequence to publish, or the lowest of a range.
            hi: the highest sequence of the range ``[lo, hi]``; ``None`` publishes ``lo`` only.
        """

    @property
    @abstractmethod
    def cursor(self) -> int:
        """The highest published sequence (all lower ones are published too)."""

    @abstractmethod
    def remaining_capacity(self) -> int:
        """How many slots can be claimed now without waiting."""

    @abstractmethod
    def highest_published_sequence(self, lower_bound: int, available_sequence: int) -> int:
        """Return the highest published sequence in ``[lower_bound, available_sequence]``.

        Args:
            lower_bound: the first sequence to check.
            available_sequence: the highest sequence the cursor says may be available.

        Returns:
            The highest ``s`` such that every sequence in ``[lower_bound, s]`` is published,
            ``lower_bound - 1`` if ``lower_bound`` itself is not.
        """

    # -- shared --------------------------------------------------------------------------------

    @property
    def buffer_size(self) -> int:
        """The number of slots."""
        return self._buffer_size

    @property
    def wait_strategy(self) -> WaitStrategy:
        """The strategy that consumers of this ring wait with."""
        return self._wait_strategy

    def get(self, sequence: int) -> E:
        """Return the event stored in the slot for ``sequence``."""
        return self._entries[sequence & self._mask]

    def new_barrier(self, *dependent_sequences: Sequence) -> SequenceBarrier:
        """Make a barrier for a consumer that follows the cursor and ``dependent_sequences``."""
        return SequenceBarrier(self, self._wait_strategy, self._cursor, dependent_sequences)

    def add_gating_sequences(self, *sequences: Sequence) -> None:
        """Make producers wait for ``sequences`` before reusing slots.

        Each added sequence is first moved to the current cursor: a consumer that joins a
        running ring starts from the present, not from events already published.
        """
        with self._gating_lock:
            cursor = self._cursor.get()
            for sequence in sequences:
                sequence.set(cursor)
            self._gating_sequences = (*self._gating_sequences, *sequences)
            cursor = self._cursor.get()  # the cursor may have moved meanwhile
            for sequence in sequences:
                sequence.set(cursor)

    def remove_gating_sequence(self, sequence: Sequence) -> bool:
        """Stop gating producers on ``sequence``.

        Returns:
            True if ``sequence`` was a gating sequence.
        """
        with self._gating_lock:
            kept = tuple(s for s in self._gating_sequences if s is not sequence)
            removed = len(kept) != len(self._gating_sequences)
            self._gating_sequences = kept
            return removed

    def minimum_gating_sequence(self) -> int:
        """The slowest gating sequence, or the cursor when there is none."""
        return minimum_sequence(self._gating_sequences, self._cursor.get())

    def _await_capacity(self, wrap_point: int, default: int) -> int:
        # Slow path of next(): poll the consumers, releasing the GIL so that they can run.
        spins = 0
        while wrap_point > (minimum := minimum_sequence(self._gating_sequences, default)):
            time.sleep(0 if spins < _YIELD_SPINS else _PARK_SECONDS)
            spins += 1
        return minimum

    def _check_claim_size(self, n: int) -> None:
        if n < 1 or n > self._buffer_size:
            raise ValueError(f"n must be between 1 and {self._buffer_size}, got {n}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(buffer_size={self._buffer_size}, cursor={self.cursor}, "
            f"gating={len(self._gating_sequences)})"
        )
