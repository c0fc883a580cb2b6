"""Sender flow control per pipeline (Logtail's SenderInfo): is the pipeline ready to send?"""

from __future__ import annotations

import time
from collections.abc import Callable


class SendRateLimit:
    """A token bucket of bytes per second, allowing one burst of a second's worth.

    ``ready()`` is true while the bucket holds tokens; ``spend(n)`` takes ``n`` bytes after a
    send, possibly into debt, so a chunk larger than the rate is sent and paid for later.
    ``bytes_per_second=None`` means no limit.

    Threading model: used by the thread publishing the pipeline's items, the send stage's, or
    the reader's when it publishes at once (``StageQueues.enter``): never two at a time,
    since the reader does so only while no item of the pipeline is in the stages.
    """

    def __init__(
        self, bytes_per_second: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = bytes_per_second
        self._clock = clock
        self._tokens = float(bytes_per_second or 0)
        self._stamp = clock()
        self.waits = 0
        """How often the pipeline was found over its rate."""

    def ready(self) -> bool:
        if self._rate is None:
            return True
        self._refill()
        if self._tokens > 0:
            return True
        self.waits += 1
        return False

    def spend(self, nbytes: int) -> None:
        if self._rate is not None:
            self._refill()
            self._tokens -= nbytes

    def _refill(self) -> None:
        assert self._rate is not None
        now = self._clock()
        self._tokens = min(float(self._rate), self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now
