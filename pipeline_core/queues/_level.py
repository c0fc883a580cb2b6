"""``QueueLevel``: the per-key watermark queues of one pipeline stage, under one lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ._exceptions import DuplicateQueueError, QueueClosedError, UnknownQueueError
from ._stats import PushResult, QueueStats
from ._watermarks import FeedbackListener, Watermarks, fire_feedback

__all__ = ["QueueLevel"]

T = TypeVar("T")


class QueueLevel(Generic[T]):
    """One ``WatermarkQueue``-like FIFO per pipeline key, served round robin by ``find_job``.

    Each queue follows the ``WatermarkQueue`` contract (refuse non-urgent pushes from the high
    mark until drained to the low mark; urgent pushes always accepted). All queues of a level
    share one lock, so a level costs one lock however many keys it has.

    Feedback:
        * asynchronous, upward: when a pop drains a blocked queue to its low mark, every
          listener added with ``add_feedback_listener`` is called once with the key, on the
          popping thread after the level's lock was released (same rules as
          ``WatermarkQueue``: cheap, must not raise).
        * synchronous, downward: a level built with ``downstream=`` skips, in ``find_job``,
          every key whose queue in the downstream level is blocked. It registers itself as a
          feedback listener of the downstream, so a downstream crossing wakes
          ``wait_for_job`` and the skipped key is served again. A key the downstream has no
          queue for is not skipped (pushing it downstream will raise ``UnknownQueueError``).

    Fairness: ``find_job`` resumes the scan at the key after the one it served last, so one
    busy key cannot starve the others. Keys are scanned in the order they were added.

    Threading model: every method may be called from any thread. The level's lock guards the
    queues, the key order, the round-robin cursor and ``closed``. ``find_job`` holds it while
    it reads the downstream level's state, so locks are always taken upstream level first;
    feedback is always fired with no level lock held. Per-key order out of ``find_job`` equals
    push order; keeping it through the next stage needs one consumer per level.

    Lifecycle: OPEN until ``close()``; then pushes raise ``QueueClosedError`` and
    ``wait_for_job`` returns the remaining jobs, then ``None`` at once.

    Readiness (Logtail's sender info): a level built with ``ready=`` also skips, in
    ``find_job``, every key for which ``ready(key)`` is false now (its sink cannot take more, it
    is over its send rate). Readiness changes with time, not pushes: waiters see it on their
    next wake-up or time-out, or at once after ``wake()``. ``ready`` is called under the
    level's lock: it must be cheap and must not call back into the level.

    Args:
        name: a label for messages and ``repr``.
        downstream: the next stage's level, consulted by ``find_job``.
        ready: the per-key readiness check, consulted by ``find_job``.
    """

    def __init__(
        self,
        name: str = "",
        *,
        downstream: QueueLevel[Any] | None = None,
        ready: Callable[[str], bool] | None = None,
    ) -> None:
        self._name = name
        self._ready = ready
        self._lock = threading.Lock()
        self._job_ready = threading.Condition(self._lock)
        self._queues: dict[str, Watermarks[T]] = {}  # guarded by _lock
        self._order: list[str] = []  # guarded by _lock
        self._last = -1  # index in _order of the key served last; guarded by _lock
        self._closed = False  # guarded by _lock
        self._interrupts = 0  # guarded by _lock
        self._listeners: tuple[FeedbackListener, ...] = ()  # guarded by _lock
        self._downstream = downstream
        if downstream is not None:
            downstream.add_feedback_listener(self._on_downstream_writable)

    def __repr__(self) -> str:
        return f"QueueLevel({self._name!r}, keys={len(self._order)})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def downstream(self) -> QueueLevel[Any] | None:
        return self._downstream

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closed

    def keys(self) -> list[str]:
        """The keys in round-robin order."""
        with self._lock:
            return list(self._order)

    def add_feedback_listener(self, on_writable: FeedbackListener) -> None:
        """Register ``on_writable(key)``, called at each high-to-low crossing of any queue."""
        with self._lock:
            self._listeners = (*self._listeners, on_writable)

    def add_queue(self, key: str, high: int, low: int | None = None) -> None:
        """Create the queue for ``key`` (watermarks as in ``WatermarkQueue``).

        Raises:
            DuplicateQueueError: ``key`` already has a queue.
            ValueError: the watermarks are out of range.
        """
        marks: Watermarks[T] = Watermarks(high, low)
        with self._lock:
            if key in self._queues:
                raise DuplicateQueueError(key)
            self._queues[key] = marks
            self._order.append(key)

    def remove_queue(self, key: str) -> list[T]:
        """Delete the queue for ``key`` and return the items it still held, oldest first.

        Raises:
            UnknownQueueError: ``key`` has no queue.
        """
        with self._lock:
            marks = self._queues.pop(key, None)
            if marks is None:
                raise UnknownQueueError(key)
            index = self._order.index(key)
            del self._order[index]
            if index <= self._last:
                self._last -= 1
            return marks.drain()

    def push(self, key: str, item: T, *, urgent: bool = False) -> PushResult:
        """Push ``item`` into the queue for ``key`` and wake one ``wait_for_job`` caller.

        Returns:
            ``PushResult.ACCEPTED`` or ``PushResult.FULL`` (the caller keeps the item).

        Raises:
            UnknownQueueError: ``key`` has no queue.
            QueueClosedError: the level was closed.
        """
        with self._lock:
            if self._closed:
                raise QueueClosedError(f"{self!r} is closed")
            marks = self._queues.get(key)
            if marks is None:
                raise UnknownQueueError(key)
            result = marks.push(item, urgent)
            if result is PushResult.ACCEPTED:
                self._job_ready.notify()
            return result

    def find_job(self) -> tuple[str, T] | None:
        """Pop one item from the next servable key after the one served last.

        A key is servable when its queue is non-empty and its downstream queue (if any) is
        writable. Fires the feedback if the pop crossed to the low mark.

        Returns:
            ``(key, item)``, or ``None`` when no key is servable now.
        """
        with self._lock:
            job, crossed_key, listeners = self._find_locked()
        if crossed_key is not None:
            fire_feedback(listeners, crossed_key)
        return job

    def wait_for_job(self, timeout: float | None = None) -> tuple[str, T] | None:
        """Like ``find_job``, but wait up to ``timeout`` seconds (forever if ``None``).

        Woken by pushes, by the downstream's feedback, by ``close()`` and by ``interrupt()``.

        Returns:
            ``(key, item)``; ``None`` on timeout, on ``interrupt()``, or at once once the level
            is closed and no job is left.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            interrupts = self._interrupts
            while True:
                job, crossed_key, listeners = self._find_locked()
                if job is not None or self._closed or self._interrupts != interrupts:
                    break
                if deadline is None:
                    self._job_ready.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._job_ready.wait(remaining)
        if crossed_key is not None:
            fire_feedback(listeners, crossed_key)
        return job

    def wake(self) -> None:
        """Wake every ``wait_for_job`` caller to look again (readiness changed); nothing is
        done while every queue is empty, since a waiter would find no job (a ring slot freed
        at every delivery woke the send stage for nothing)."""
        with self._lock:
            if any(len(marks) for marks in self._queues.values()):
                self._job_ready.notify_all()

    def interrupt(self) -> None:
        """Make every ``wait_for_job`` caller return now (with ``None`` unless a job is there),
        so that it looks at its own stop flag instead of waiting out its timeout."""
        with self._lock:
            self._interrupts += 1
            self._job_ready.notify_all()

    def close(self) -> None:
        """Refuse further pushes and wake every waiter; idempotent."""
        with self._lock:
            self._closed = True
            self._job_ready.notify_all()

    def is_writable(self, key: str) -> bool:
        """Whether a non-urgent push for ``key`` would be accepted now.

        Raises:
            UnknownQueueError: ``key`` has no queue.
        """
        with self._lock:
            return self._get(key).writable

    def size(self, key: str) -> int:
        """Items queued for ``key``. Raises ``UnknownQueueError`` for an unknown key."""
        with self._lock:
            return len(self._get(key))

    def total_size(self) -> int:
        with self._lock:
            return sum(len(marks) for marks in self._queues.values())

    def stats(self, key: str) -> QueueStats:
        """Snapshot of the queue for ``key``. Raises ``UnknownQueueError`` for an unknown key."""
        with self._lock:
            return self._get(key).stats()

    def snapshot(self) -> dict[str, QueueStats]:
        """Snapshots of every queue, in round-robin order."""
        with self._lock:
            return {key: self._queues[key].stats() for key in self._order}

    # -- internals -------------------------------------------------------------------------

    def _get(self, key: str) -> Watermarks[T]:
        marks = self._queues.get(key)
        if marks is None:
            raise UnknownQueueError(key)
        return marks

    def _writable_for_upstream(self, key: str) -> bool:
        """The synchronous feedback read by the upstream level; unknown keys count writable."""
        with self._lock:
            marks = self._queues.get(key)
            return marks is None or marks.writable

    def _find_locked(
        self,
    ) -> tuple[tuple[str, T] | None, str | None, tuple[FeedbackListener, ...]]:
        order = self._order
        count = len(order)
        downstream = self._downstream
        for step in range(1, count + 1):
            index = (self._last + step) % count
            key = order[index]
            marks = self._queues[key]
            if not len(marks):
                continue
            if downstream is not None and not downstream._writable_for_upstream(key):
                continue
            if self._ready is not None and not self._ready(key):
                continue
            item, crossed = marks.take()
            self._last = index
            return (key, item), (key if crossed else None), self._listeners
        return None, None, ()

    def _on_downstream_writable(self, key: str) -> None:
        with self._lock:
            self._job_ready.notify_all()
