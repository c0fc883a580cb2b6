"""The ring's error taxonomy: one named type per meaning."""

from __future__ import annotations

__all__ = [
    "AlertException",
    "InsufficientCapacityException",
    "ProcessorAlreadyRunningError",
    "RewindableException",
    "RingError",
    "TimeoutException",
]


class RingError(Exception):
    """Base class of every error raised by :mod:`pipeline_core.ring`."""


class AlertException(RingError):
    """A :class:`SequenceBarrier` was alerted while a consumer waited on it.

    Raised by ``SequenceBarrier.wait_for``/``check_alert`` after ``alert()``; a
    ``BatchEventProcessor`` treats it as the request to leave its loop when it is halted.
    """


class TimeoutException(RingError):
    """A wait strategy gave up waiting after its timeout; the processor calls ``on_timeout``."""


class RewindableException(RingError):
    """Raised by a ``RewindableEventHandler`` to ask for the current batch to be replayed.

    Whether the batch is replayed is decided by the processor's ``BatchRewindStrategy``. Raised
    from an ordinary ``EventHandler`` it is an error like any other.

    Args:
        cause: the failure that made the batch worth retrying, kept as ``__cause__``.
    """

    def __init__(self, cause: BaseException | None = None) -> None:
        super().__init__(str(cause) if cause is not None else "rewind requested")
        self.__cause__ = cause


class InsufficientCapacityException(RingError):
    """``RingBuffer.try_next`` could not claim the slots without overrunning a consumer."""


class ProcessorAlreadyRunningError(RingError):
    """``BatchEventProcessor.run`` was called while the processor was already running."""
