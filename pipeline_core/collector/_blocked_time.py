"""How long a pipeline's reading has been held back, readable from any thread while it lasts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class BlockedTime:
    """Time blocked so far: ``total`` seconds of blocks that ended, and ``since``, the
    monotonic instant the current block began (None when not blocked).

    One immutable value, so a reader never sees the total of one moment with the start of
    another.
    """

    total: float = 0.0
    since: float | None = None

    @property
    def blocked(self) -> bool:
        return self.since is not None

    def seconds(self, now: float) -> float:
        """Seconds blocked up to ``now`` (a ``time.monotonic()`` reading), the current block
        included."""
        if self.since is None:
            return self.total
        return self.total + max(0.0, now - self.since)

    def began(self, now: float) -> BlockedTime:
        return self if self.since is not None else BlockedTime(self.total, now)

    def ended(self, now: float) -> BlockedTime:
        return self if self.since is None else BlockedTime(self.seconds(now), None)


class BlockedClock:
    """A pipeline's :class:`BlockedTime`, changed by its owning thread, read by any thread.

    The counter read never goes backwards. A block's start or end reads the clock and replaces
    the value under a lock that readers take too: without it, a reader could read the clock
    after the owner read it to end a block but before the ended value replaced the running
    one, and count a few moments the ended value does not (a counter that decreases looks
    like a restart to Prometheus' ``rate()``). Turns that change nothing take no lock.

    Threading model: :meth:`mark` on the thread that owns the pipeline (the collector's
    mailbox thread); :meth:`seconds` and :attr:`value` from any thread.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._value = BlockedTime()  # replaced whole, under the lock

    @property
    def value(self) -> BlockedTime:
        return self._value

    def mark(self, blocked: bool) -> None:
        """The pipeline is blocked (or not) now."""
        if self._value.blocked == blocked:
            return
        with self._lock:
            now = self._clock()
            current = self._value
            self._value = current.began(now) if blocked else current.ended(now)

    def seconds(self) -> float:
        """Seconds blocked until now, the current block included."""
        with self._lock:
            return self._value.seconds(self._clock())
