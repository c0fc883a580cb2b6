"""Sequences: the counters through which producers and consumers track their progress."""

from __future__ import annotations

import threading
from collections.abc import Iterable

__all__ = ["INITIAL_CURSOR_VALUE", "FixedSequenceGroup", "Sequence", "minimum_sequence"]

INITIAL_CURSOR_VALUE = -1
"""Value of a sequence before anything was claimed, published or consumed."""


class Sequence:
    """A position in the ring: the highest sequence claimed, published or processed.

    Threading model: ``get`` and ``set`` are plain loads and stores, intended for the sequence's
    single writer (a processor owns its sequence, a single producer owns the cursor) and any
    number of readers. ``compare_and_set``, ``increment_and_get`` and ``add_and_get`` are atomic
    with respect to each other; when several threads write one sequence they must all use them.

    Args:
        initial_value: the starting value, ``INITIAL_CURSOR_VALUE`` (-1) by default.
    """

    __slots__ = ("_lock", "_value")

    def __init__(self, initial_value: int = INITIAL_CURSOR_VALUE) -> None:
        self._value = initial_value
        self._lock = threading.Lock()

    def get(self) -> int:
        """Return the current value."""
        return self._value

    def set(self, value: int) -> None:
        """Store ``value`` (single-writer store, see the class docs)."""
        self._value = value

    def compare_and_set(self, expected: int, new_value: int) -> bool:
        """Set ``new_value`` if the current value is ``expected``.

        Returns:
            True if the value was ``expected`` and is now ``new_value``, False otherwise.
        """
        with self._lock:
            if self._value != expected:
                return False
            self._value = new_value
            return True

    def increment_and_get(self) -> int:
        """Atomically add one; return the new value."""
        return self.add_and_get(1)

    def add_and_get(self, increment: int) -> int:
        """Atomically add ``increment``; return the new value."""
        with self._lock:
            self._value += increment
            return self._value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get()})"


class FixedSequenceGroup(Sequence):
    """A read-only view of several sequences whose value is their minimum.

    A barrier that depends on several upstream consumers waits on such a group.

    Args:
        sequences: the sequences to follow; at least one.

    Raises:
        ValueError: if ``sequences`` is empty.
    """

    __slots__ = ("_sequences",)

    def __init__(self, sequences: Iterable[Sequence]) -> None:
        super().__init__()
        self._sequences = tuple(sequences)
        if not self._sequences:
            raise ValueError("a sequence group needs at least one sequence")

    def get(self) -> int:
        return minimum_sequence(self._sequences)

    def set(self, value: int) -> None:
        raise NotImplementedError("a FixedSequenceGroup is read-only")

    def compare_and_set(self, expected: int, new_value: int) -> bool:
        raise NotImplementedError("a FixedSequenceGroup is read-only")

    def add_and_get(self, increment: int) -> int:
        raise NotImplementedError("a FixedSequenceGroup is read-only")


def minimum_sequence(sequences: Iterable[Sequence], default: int | None = None) -> int:
    """Return the smallest value among ``sequences``, capped by ``default`` when given.

    Raises:
        ValueError: if ``sequences`` is empty and no ``default`` is given.
    """
    minimum = default
    for sequence in sequences:
        value = sequence.get()
        if minimum is None or value < minimum:
            minimum = value
    if minimum is None:
        raise ValueError("no sequences and no default")
    return minimum
