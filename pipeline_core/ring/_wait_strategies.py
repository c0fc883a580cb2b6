"""How a consumer waits for a sequence: the ``WaitStrategy`` interface and its polling kinds.

The blocking kinds (condition variable) live in ``_blocking_wait_strategies``.

A note on the GIL: a thread that spins without sleeping keeps the interpreter lock until the
interpreter forces a switch (``sys.getswitchinterval()``, 5 ms by default), so the producer it
waits for cannot run in the meantime. ``BusySpinWaitStrategy`` therefore trades latency bursts
for the lowest cost per poll; ``YieldingWaitStrategy`` and ``SleepingWaitStrategy`` release the
lock (``time.sleep(0)``) after a short spin.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._barrier import SequenceBarrier
    from ._sequence import Sequence

__all__ = [
    "BackoffWaitStrategy",
    "BusySpinWaitStrategy",
    "SleepingWaitStrategy",
    "WaitStrategy",
    "YieldingWaitStrategy",
]

_YIELD_SPINS = 100  # polls that only release the GIL before a dependent wait starts to park
_PARK_SECONDS = 0.0001  # park time once a dependent wait has yielded that often


class WaitStrategy(ABC):
    """Decides how a consumer waits until a sequence becomes available.

    One instance is shared by a ring buffer and every barrier made from it.
    """

    @abstractmethod
    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        """Wait until ``dependent_sequence`` reaches ``sequence``.

        Args:
            sequence: the sequence the consumer wants to process next.
            cursor: the ring's cursor (what producers have published or claimed); blocking
                strategies wait on it, since only producers signal.
            dependent_sequence: what the consumer may read up to: the cursor itself, or the
                minimum of the upstream consumers' sequences in a pipeline.
            barrier: the barrier waiting; strategies call ``barrier.check_alert()`` while they
                wait so that ``alert()`` ends the wait.

        Returns:
            The highest available sequence. It is normally ``>= sequence``; a strategy may
            return a lower value (then the consumer simply waits again).

        Raises:
            AlertException: if the barrier was alerted.
            TimeoutException: if the strategy gave up waiting after its timeout.
        """

    @abstractmethod
    def signal_all_when_blocking(self) -> None:
        """Wake the consumers blocked in ``wait_for``.

        Called by the ring after every publish and by ``SequenceBarrier.alert``, so it must be
        cheap when nobody is blocked.
        """


def wait_for_dependents(sequence: int, dependent: Sequence, barrier: SequenceBarrier) -> int:
    """Poll ``dependent`` until it reaches ``sequence``, releasing the GIL between polls.

    Used once the cursor is known to be past ``sequence``: what is left is upstream consumers
    catching up, which they only do while this thread lets them run.
    """
    spins = 0
    while (available := dependent.get()) < sequence:
        barrier.check_alert()
        time.sleep(0 if spins < _YIELD_SPINS else _PARK_SECONDS)
        spins += 1
    return available


class BusySpinWaitStrategy(WaitStrategy):
    """Polls in a tight loop: lowest cost per poll, but holds the GIL until a forced switch."""

    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        while (available := dependent_sequence.get()) < sequence:
            barrier.check_alert()
        return available

    def signal_all_when_blocking(self) -> None:
        pass


class YieldingWaitStrategy(WaitStrategy):
    """Spins ``spin_tries`` polls, then releases the GIL (``time.sleep(0)``) between polls."""

    def __init__(self, spin_tries: int = 100) -> None:
        self._spin_tries = spin_tries

    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        counter = self._spin_tries
        while (available := dependent_sequence.get()) < sequence:
            barrier.check_alert()
            if counter == 0:
                time.sleep(0)
            else:
                counter -= 1
        return available

    def signal_all_when_blocking(self) -> None:
        pass


class SleepingWaitStrategy(WaitStrategy):
    """Spins, then yields, then sleeps ``sleep_time_ns`` between polls.

    Of ``retries`` polls the first half spin and the second half yield; after that every poll
    is followed by a short sleep. Producers never signal, so publishing stays cheap.
    """

    def __init__(self, retries: int = 200, sleep_time_ns: int = 100) -> None:
        self._retries = retries
        self._sleep_seconds = sleep_time_ns / 1e9

    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        counter = self._retries
        spin_until = self._retries // 2
        while (available := dependent_sequence.get()) < sequence:
            barrier.check_alert()
            if counter > spin_until:
                counter -= 1
            elif counter > 0:
                counter -= 1
                time.sleep(0)
            else:
                time.sleep(self._sleep_seconds)
        return available

    def signal_all_when_blocking(self) -> None:
        pass


class BackoffWaitStrategy(WaitStrategy):
    """Sleeps longer after each consecutive empty poll, like Flume's ``SinkRunner``.

    The n-th consecutive empty poll sleeps ``min(n * backoff_sleep_increment,
    max_backoff_sleep)`` seconds; a poll that finds data resets the count. Publishing never
    wakes a backing-off consumer (that is the point: it lets batches accumulate), but an alert
    ends the sleep within ``alert_poll_seconds``.

    Args:
        backoff_sleep_increment: seconds added to the sleep per consecutive empty poll.
        max_backoff_sleep: the longest sleep, in seconds.
        alert_poll_seconds: how often a sleep checks the barrier's alert.
        sleep: the function used to sleep (a fake clock's in tests).

    Raises:
        ValueError: if a duration is negative or ``alert_poll_seconds`` is not positive.
    """

    def __init__(
        self,
        backoff_sleep_increment: float = 1.0,
        max_backoff_sleep: float = 5.0,
        *,
        alert_poll_seconds: float = 0.05,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if backoff_sleep_increment < 0 or max_backoff_sleep < 0 or alert_poll_seconds <= 0:
            raise ValueError("backoff durations must be >= 0 and the alert poll > 0")
        self.backoff_sleep_increment = backoff_sleep_increment
        self.max_backoff_sleep = max_backoff_sleep
        self._alert_poll_seconds = alert_poll_seconds
        self._sleep = sleep

    def wait_for(
        self,
        sequence: int,
        cursor: Sequence,
        dependent_sequence: Sequence,
        barrier: SequenceBarrier,
    ) -> int:
        consecutive_empty = 0  # local to the call: a call returns only once data arrived
        while (available := dependent_sequence.get()) < sequence:
            barrier.check_alert()
            consecutive_empty += 1
            backoff = min(consecutive_empty * self.backoff_sleep_increment, self.max_backoff_sleep)
            self._pause(backoff, barrier)
        return available

    def _pause(self, seconds: float, barrier: SequenceBarrier) -> None:
        # Sleep in slices so that halt() is honoured without waking on every publish.
        remaining = seconds
        while remaining > 0:
            step = min(remaining, self._alert_poll_seconds)
            self._sleep(step)
            remaining -= step
            barrier.check_alert()

    def signal_all_when_blocking(self) -> None:
        pass
