"""The queues' error taxonomy: one named type per meaning."""

from __future__ import annotations

__all__ = [
    "DuplicateQueueError",
    "QueueClosedError",
    "QueueError",
    "UnknownQueueError",
]


class QueueError(Exception):
    """Base class of every error raised by :mod:`pipeline_core.queues`."""


class UnknownQueueError(QueueError):
    """A ``QueueLevel`` was asked about a pipeline key it has no queue for."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no queue for key {key!r}")
        self.key = key


class DuplicateQueueError(QueueError):
    """``QueueLevel.add_queue`` was called for a key that already has a queue."""

    def __init__(self, key: str) -> None:
        super().__init__(f"a queue for key {key!r} already exists")
        self.key = key


class QueueClosedError(QueueError):
    """An item was pushed into a ``QueueLevel`` after ``close()``."""
