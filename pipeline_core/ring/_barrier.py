"""The sequence barrier: where a consumer waits for producers and upstream consumers."""

from __future__ import annotations

import time
from collections.abc import Sequence as SequenceOf
from typing import TYPE_CHECKING, Any

from ._exceptions import AlertException
from ._sequence import FixedSequenceGroup, Sequence

if TYPE_CHECKING:
    from ._ring_buffer import RingBuffer
    from ._wait_strategies import WaitStrategy

__all__ = ["SequenceBarrier"]


class SequenceBarrier:
    """Tells a consumer how far it may read: published by producers and passed by its upstream.

    Made by ``RingBuffer.new_barrier(*dependent_sequences)``. With no dependent sequences the
    consumer follows the ring's cursor; with some (a pipeline stage) it also stays behind the
    slowest of them.

    Threading model: ``wait_for`` and ``check_alert`` are called by the consumer's thread;
    ``alert`` and ``clear_alert`` may be called from any thread.

    Args:
        ring_buffer: the ring whose published sequences the barrier tracks.
        wait_strategy: how ``wait_for`` waits (the ring's strategy).
        cursor: the ring's cursor sequence.
        dependent_sequences: the sequences of upstream consumers, possibly none.
    """

    __slots__ = ("_alerted", "_cursor", "_dependent", "_ring_buffer", "_wait_strategy")

    def __init__(
        self,
        ring_buffer: RingBuffer[Any],
        wait_strategy: WaitStrategy,
        cursor: Sequence,
        dependent_sequences: SequenceOf[Sequence] = (),
    ) -> None:
        self._ring_buffer = ring_buffer
        self._wait_strategy = wait_strategy
        self._cursor = cursor
        self._dependent: Sequence
        if not dependent_sequences:
            self._dependent = cursor
        elif len(dependent_sequences) == 1:
            self._dependent = dependent_sequences[0]
        else:
            self._dependent = FixedSequenceGroup(dependent_sequences)
        self._alerted = False

    def wait_for(self, sequence: int) -> int:
        """Wait until ``sequence`` may be read.

        Args:
            sequence: the next sequence the consumer wants.

        Returns:
            The highest sequence that may be read, all lower ones included. Normally
            ``>= sequence``; lower when the wait strategy returned early.

        Raises:
            AlertException: if the barrier is or becomes alerted.
            TimeoutException: if the wait strategy timed out.
        """
        if self._alerted:
            raise AlertException("barrier alerted")
        available = self._wait_strategy.wait_for(sequence, self._cursor, self._dependent, self)
        if available < sequence:
            return available
        highest = self._ring_buffer.highest_published_sequence(sequence, available)
        if highest < sequence:
            # Claimed by a producer that has not published yet: let it run.
            time.sleep(0)
        return highest

    @property
    def cursor(self) -> int:
        """The sequence the consumer may read up to as far as its dependents are concerned."""
        return self._dependent.get()

    @property
    def is_alerted(self) -> bool:
        """Whether ``alert()`` was called since the last ``clear_alert()``."""
        return self._alerted

    def alert(self) -> None:
        """Make current and future waits raise ``AlertException`` until ``clear_alert()``."""
        self._alerted = True
        self._wait_strategy.signal_all_when_blocking()

    def clear_alert(self) -> None:
        """Clear the alert so that ``wait_for`` waits again."""
        self._alerted = False

    def check_alert(self) -> None:
        """Raise ``AlertException`` if the barrier is alerted.

        Raises:
            AlertException: if ``alert()`` was called since the last ``clear_alert()``.
        """
        if self._alerted:
            raise AlertException("barrier alerted")
