"""The unlocked watermark state shared by ``WatermarkQueue`` and ``QueueLevel``."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from ._stats import PushResult, QueueStats

__all__ = ["FeedbackListener", "Watermarks", "fire_feedback", "validate_watermarks"]

T = TypeVar("T")

FeedbackListener = Callable[[str], object]
"""``on_writable(queue_key)``: told that the queue for ``queue_key`` drained to its low mark."""


def validate_watermarks(high: int, low: int | None) -> int:
    """Check ``high``/``low`` and return the effective low watermark.

    Raises:
        ValueError: ``high < 1``, or ``low`` is not in ``[0, high)``.
    """
    if high < 1:
        raise ValueError(f"high watermark must be >= 1, got {high}")
    effective = high * 2 // 3 if low is None else low
    if not 0 <= effective < high:
        raise ValueError(f"low watermark must be in [0, {high}), got {effective}")
    return effective


def fire_feedback(listeners: tuple[FeedbackListener, ...], key: str) -> None:
    """Call every listener with ``key``; re-raise the first failure after all were called.

    Every listener is called even when one fails, so one broken listener cannot leave another
    upstream waiting for a feedback that never comes.
    """
    first: BaseException | None = None
    for listener in listeners:
        try:
            listener(key)
        except Exception as exc:
            if first is None:
                first = exc
    if first is not None:
        raise first


class Watermarks(Generic[T]):
    """A FIFO with high/low watermark hysteresis and counters; not thread-safe.

    The owner holds its lock around every call. A pop that crosses from "blocked" to the low
    mark returns ``True`` in ``crossed`` so that the owner can fire the feedback after releasing
    its lock.
    """

    __slots__ = (
        "_blocked",
        "_items",
        "feedbacks",
        "high",
        "low",
        "pops",
        "pushes",
        "refusals",
        "urgent_pushes",
    )

    def __init__(self, high: int, low: int | None = None) -> None:
        self.low = validate_watermarks(high, low)
        self.high = high
        self._items: deque[T] = deque()
        self._blocked = False  # guarded by the owner's lock, like every field
        self.pushes = 0
        self.urgent_pushes = 0
        self.refusals = 0
        self.pops = 0
        self.feedbacks = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def writable(self) -> bool:
        return not self._blocked

    def push(self, item: T, urgent: bool) -> PushResult:
        if self._blocked and not urgent:
            self.refusals += 1
            return PushResult.FULL
        self._items.append(item)
        self.pushes += 1
        if urgent:
            self.urgent_pushes += 1
        if len(self._items) >= self.high:
            self._blocked = True
        return PushResult.ACCEPTED

    def pop(self) -> tuple[T | None, bool]:
        """Return ``(item or None, crossed)``."""
        if not self._items:
            return None, False
        return self.take()

    def take(self) -> tuple[T, bool]:
        """Return ``(oldest item, crossed)``; the queue must not be empty (``IndexError``)."""
        item = self._items.popleft()
        self.pops += 1
        return item, self._after_pop()

    def pop_batch(self, max_items: int) -> tuple[list[T], bool]:
        """Return ``(up to max_items items, crossed)``; one crossing at most per batch."""
        take = min(max_items, len(self._items))
        popleft = self._items.popleft
        batch = [popleft() for _ in range(take)]
        self.pops += take
        return batch, (self._after_pop() if take else False)

    def drain(self) -> list[T]:
        items = list(self._items)
        self._items.clear()
        return items

    def _after_pop(self) -> bool:
        if self._blocked and len(self._items) <= self.low:
            self._blocked = False
            self.feedbacks += 1
            return True
        return False

    def stats(self) -> QueueStats:
        return QueueStats(
            size=len(self._items),
            high=self.high,
            low=self.low,
            writable=not self._blocked,
            pushes=self.pushes,
            urgent_pushes=self.urgent_pushes,
            refusals=self.refusals,
            pops=self.pops,
            feedbacks=self.feedbacks,
        )
