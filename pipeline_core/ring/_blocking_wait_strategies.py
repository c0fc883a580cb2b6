"""Wait strategies that block on a condition variable until a producer signals."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ._exceptions import TimeoutException
from ._wait_strategies import WaitStrategy, wait_for_dependents

if TYPE_CHECKING:
    from ._barrier import SequenceBarrier
    from ._sequence import Sequence

__all__ = ["BlockingWaitStrategy", "TimeoutBlockingWaitStrategy"]


class _ConditionWaitStrategy(WaitStrategy):
    """Blocks on a condition variable; producers take its lock only when a consumer asked.

    A consumer raises ``_signal_needed`` under the lock before each look at the cursor; a
    producer stores the cursor first and then, only if the flag is up, lowers it and notifies
    under the lock. So either the producer sees the flag and the notification reaches the
    consumer (which holds the lock until it waits), or the consumer's look already sees the
    new cursor. After one notification, publishes stay lock-free until a consumer blocks again.
    Waiting on upstream consumers (a pipeline) is done by polling: consumers do not signal.
    """

    def __init__(self, timeout: float | None = None) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._signal_needed = False  # raised under _condition, lowered by producers without it
        self._timeout = timeout

    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        if cursor.get() < sequence:
            self._block(sequence, cursor, barrier, self._timeout)
        if dependent_sequence is cursor:
            return cursor.get()
        return wait_for_dependents(sequence, dependent_sequence, barrier)

    def _block(
        self, sequence: int, cursor: Sequence, barrier: SequenceBarrier, timeout: float | None
    ) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while True:
                self._signal_needed = True
                if cursor.get() >= sequence:
                    return
                barrier.check_alert()
                if deadline is None:
                    self._condition.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutException(f"sequence {sequence} not published within {timeout} s")
                self._condition.wait(remaining)

    def signal_all_when_blocking(self) -> None:
        if self._signal_needed:
            self._signal_needed = False
            with self._condition:
                self._condition.notify_all()


class BlockingWaitStrategy(_ConditionWaitStrategy):
    """Blocks on a condition variable until the cursor passes the wanted sequence (the default).

    Publishing costs one flag test unless a consumer is blocked (see ``_ConditionWaitStrategy``).
    """


class TimeoutBlockingWaitStrategy(_ConditionWaitStrategy):
    """Like :class:`BlockingWaitStrategy`, but gives up after ``timeout_seconds``.

    Args:
        timeout_seconds: the longest time one ``wait_for`` blocks for the cursor; then it
            raises ``TimeoutException``.

    Raises:
        ValueError: if ``timeout_seconds`` is not positive.
    """

    def __init__(self, timeout_seconds: float) -> None:
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be > 0")
        super().__init__(timeout_seconds)
        self.timeout_seconds = timeout_seconds
