"""``WatermarkQueue``: one bounded FIFO with high/low watermarks and asynchronous feedback."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from ._stats import PushResult, QueueStats
from ._watermarks import FeedbackListener, Watermarks, fire_feedback

__all__ = ["WatermarkQueue"]

T = TypeVar("T")


class WatermarkQueue(Generic[T]):
    """A FIFO that refuses non-urgent pushes between its high and low watermarks.

    States: the queue is *writable* until a push brings its size to ``high``; from then on it
    is *blocked* and non-urgent pushes answer ``PushResult.FULL`` until pops drain it to
    ``low`` or below, which makes it writable again and fires the feedback. The hysteresis
    keeps a producer from being woken for every single freed slot.

    Urgent pushes (``urgent=True``, e.g. the last data of a rotated file) are always accepted
    and may take the size past ``high``; they block the queue like any other push.

    Feedback: each blocked-to-low crossing calls every listener registered with
    ``add_listener`` exactly once, as ``on_writable(key)``, on the thread that popped, after
    the queue's lock was released. Listeners must be cheap (they run on the consumer's thread)
    and must not raise; if one raises, the others are still called and the first error is
    re-raised from the ``pop``/``pop_batch`` that crossed. The item(s) popped are then lost to
    the caller, so treat a listener failure as fatal.

    Threading model: every method may be called from any thread; one internal lock guards the
    items, the state and the counters. Listeners may call back into this queue.

    Args:
        high: the high watermark, ``>= 1``.
        low: the low watermark, in ``[0, high)``; ``high * 2 // 3`` by default.
        key: the pipeline key passed to listeners.

    Raises:
        ValueError: the watermarks are out of range.
    """

    __slots__ = ("_key", "_listeners", "_lock", "_marks")

    def __init__(self, high: int, low: int | None = None, *, key: str = "") -> None:
        self._marks: Watermarks[T] = Watermarks(high, low)
        self._key = key
        self._lock = threading.Lock()
        self._listeners: tuple[FeedbackListener, ...] = ()

    @property
    def key(self) -> str:
        """The pipeline key passed to feedback listeners."""
        return self._key

    @property
    def high_watermark(self) -> int:
        return self._marks.high

    @property
    def low_watermark(self) -> int:
        return self._marks.low

    def add_listener(self, on_writable: FeedbackListener) -> None:
        """Register an upstream to be told ``on_writable(key)`` at each high-to-low crossing."""
        with self._lock:
            self._listeners = (*self._listeners, on_writable)

    def push(self, item: T, *, urgent: bool = False) -> PushResult:
        """Append ``item`` unless the queue is blocked and the push is not urgent.

        Returns:
            ``PushResult.ACCEPTED`` when the item was appended, ``PushResult.FULL`` when it was
            refused (the caller keeps it, e.g. in a ``BlockedQueue``).
        """
        with self._lock:
            return self._marks.push(item, urgent)

    def pop(self) -> T | None:
        """Remove and return the oldest item, or ``None`` when the queue is empty.

        Fires the feedback when this pop drained a blocked queue to the low watermark.
        """
        with self._lock:
            item, crossed = self._marks.pop()
            listeners = self._listeners
        if crossed:
            fire_feedback(listeners, self._key)
        return item

    def pop_batch(self, max_items: int) -> list[T]:
        """Remove and return up to ``max_items`` oldest items, in order (``[]`` when empty).

        The feedback fires at most once per batch, after the whole batch was taken.

        Raises:
            ValueError: ``max_items < 1``.
        """
        if max_items < 1:
            raise ValueError(f"max_items must be >= 1, got {max_items}")
        with self._lock:
            batch, crossed = self._marks.pop_batch(max_items)
            listeners = self._listeners
        if crossed:
            fire_feedback(listeners, self._key)
        return batch

    def is_writable(self) -> bool:
        """Whether a non-urgent push would be accepted now (a snapshot: it may change)."""
        with self._lock:
            return self._marks.writable

    def size(self) -> int:
        with self._lock:
            return len(self._marks)

    def stats(self) -> QueueStats:
        with self._lock:
            return self._marks.stats()
