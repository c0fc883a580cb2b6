"""``OffsetTracker``: each file's committed offset, the lowest byte not yet acked everywhere."""

from __future__ import annotations


class OffsetTracker:
    """Advances a file's committed offset over acked ranges, never past a gap.

    The reader tracks every range it hands out (``track``); the acker's completion of a range
    calls ``acked``. The committed offset of a file moves to the end of the acked range that
    starts at it, and on over ranges acked earlier out of order; a range still in flight stops
    it. A replayed range keeps its place until its replay is acked.

    Threading model: owned by the collector's mailbox thread.
    """

    def __init__(self) -> None:
        self._committed: dict[str, int] = {}
        self._ahead: dict[str, dict[int, int]] = {}

    def track(self, fingerprint: str, start: int, end: int) -> None:
        """A range was read; the first range of a file sets where its committed offset starts."""
        self._committed.setdefault(fingerprint, start)
        self._ahead.setdefault(fingerprint, {})

    def acked(self, fingerprint: str, start: int, end: int) -> int:
        """Range ``[start, end)`` is done everywhere; returns the file's committed offset."""
        committed = self._committed.setdefault(fingerprint, start)
        ahead = self._ahead.setdefault(fingerprint, {})
        if start == committed:
            committed = end
            while committed in ahead:
                committed = ahead.pop(committed)
            self._committed[fingerprint] = committed
        elif start > committed:
            ahead[start] = end
        return committed

    def committed(self, fingerprint: str) -> int | None:
        return self._committed.get(fingerprint)

    def snapshot(self) -> dict[str, int]:
        return dict(self._committed)
