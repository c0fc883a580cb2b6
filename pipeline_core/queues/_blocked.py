"""``BlockedQueue``: where items wait for their full target queue instead of being re-queued."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

from ._level import QueueLevel
from ._stats import Placement, PushResult

__all__ = ["BlockedQueue"]

T = TypeVar("T")


class BlockedQueue(Generic[T]):
    """Holds, per key and in order, items whose queue in ``target`` refused them.

    Re-queuing a refused item at the tail of its source would make the source thread spin on
    it; parking it here costs nothing until the target queue for that key drains to its low
    mark. The blocked queue registers ``on_writable`` as a feedback listener of ``target``,
    and on that feedback pushes the parked items of the key back, oldest first, until the
    target refuses one (it is blocked again) or none is left.

    Ordering: ``submit`` parks an item whenever its key already has parked items, so items of
    one key reach the target in submission order. ``park`` appends unconditionally: use it for
    an item whose push just answered ``PushResult.FULL``; an item parked while the target is
    writable waits until the next feedback (or an explicit ``on_writable(key)``).

    Threading model: every method may be called from any thread; one internal lock guards the
    parked items and the counters, and is held while pushing into ``target`` (lock order:
    blocked queue, then target level). ``target`` fires feedback without its lock, so
    ``on_writable`` can take both.

    Args:
        target: the level the parked items are for.
    """

    def __init__(self, target: QueueLevel[T]) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._parked: dict[str, deque[T]] = {}  # guarded by _lock
        self._moved = 0  # guarded by _lock
        self._parks = 0  # guarded by _lock
        target.add_feedback_listener(self.on_writable)

    @property
    def target(self) -> QueueLevel[T]:
        return self._target

    def submit(self, key: str, item: T, *, urgent: bool = False) -> Placement:
        """Push ``item`` into the target, or park it when that would break order or is refused.

        An ``urgent`` item (a checkpoint barrier, a rotated file's last data) is pushed past the
        high watermark, unless items of its key are parked: it then parks behind them, since
        order within a key is never broken.

        Returns:
            ``Placement.DELIVERED`` or ``Placement.PARKED``.

        Raises:
            UnknownQueueError: the target has no queue for ``key``.
            QueueClosedError: the target level was closed.
        """
        with self._lock:
            waiting = self._parked.get(key)
            if not waiting and self._target.push(key, item, urgent=urgent) is PushResult.ACCEPTED:
                return Placement.DELIVERED
            self._park_locked(key, item)
            return Placement.PARKED

    def park(self, key: str, item: T) -> None:
        """Append ``item`` to the parked items of ``key``."""
        with self._lock:
            self._park_locked(key, item)

    def on_writable(self, key: str) -> int:
        """Move the parked items of ``key`` into the target, in order, until it refuses one.

        Called by the target's feedback; may also be called directly.

        Returns:
            How many items moved.
        """
        moved = 0
        with self._lock:
            waiting = self._parked.get(key)
            if not waiting:
                return 0
            push = self._target.push
            while waiting and push(key, waiting[0]) is PushResult.ACCEPTED:
                waiting.popleft()
                moved += 1
            if not waiting:
                del self._parked[key]
            self._moved += moved
        return moved

    def parked(self, key: str) -> int:
        """Items of ``key`` waiting now."""
        with self._lock:
            waiting = self._parked.get(key)
            return len(waiting) if waiting else 0

    def total_parked(self) -> int:
        with self._lock:
            return sum(len(waiting) for waiting in self._parked.values())

    @property
    def moved(self) -> int:
        """Items moved into the target by ``on_writable`` since creation."""
        with self._lock:
            return self._moved

    @property
    def parks(self) -> int:
        """Items parked since creation."""
        with self._lock:
            return self._parks

    def _park_locked(self, key: str, item: T) -> None:
        waiting = self._parked.get(key)
        if waiting is None:
            waiting = self._parked[key] = deque()
        waiting.append(item)
        self._parks += 1
