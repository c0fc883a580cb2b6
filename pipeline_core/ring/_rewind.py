"""Batch rewind: whether a batch that raised ``RewindableException`` is replayed."""

from __future__ import annotations

import enum
import time
from abc import ABC, abstractmethod

from ._exceptions import RewindableException

__all__ = [
    "BatchRewindStrategy",
    "EventuallyGiveUpBatchRewindStrategy",
    "NanosecondPauseBatchRewindStrategy",
    "RewindAction",
    "SimpleBatchRewindStrategy",
]


class RewindAction(enum.Enum):
    """The answer of a ``BatchRewindStrategy``."""

    REWIND = "rewind"
    """Replay the batch from its first event."""
    THROW = "throw"
    """Give up: hand the exception to the processor's ``ExceptionHandler``."""


class BatchRewindStrategy(ABC):
    """Decides what to do when a ``RewindableEventHandler`` raises ``RewindableException``."""

    @abstractmethod
    def handle_rewind_exception(self, exc: RewindableException, attempts: int) -> RewindAction:
        """Decide whether to replay the batch.

        Called on the processor's thread; the strategy may pause before answering.

        Args:
            exc: what the handler raised.
            attempts: how many times in a row this batch has asked to rewind, counting this
                one (1 on the first failure); reset once a batch completes.

        Returns:
            ``RewindAction.REWIND`` to replay the batch, ``RewindAction.THROW`` to give up.
        """


class SimpleBatchRewindStrategy(BatchRewindStrategy):
    """Always rewinds (the default)."""

    def handle_rewind_exception(self, exc: RewindableException, attempts: int) -> RewindAction:
        return RewindAction.REWIND


class EventuallyGiveUpBatchRewindStrategy(BatchRewindStrategy):
    """Rewinds until the batch has failed ``max_attempts`` times, then gives up.

    Args:
        max_attempts: failures of one batch after which it is given up; at least 1.

    Raises:
        ValueError: if ``max_attempts`` is less than 1.
    """

    def __init__(self, max_attempts: int) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.max_attempts = max_attempts

    def handle_rewind_exception(self, exc: RewindableException, attempts: int) -> RewindAction:
        return RewindAction.THROW if attempts >= self.max_attempts else RewindAction.REWIND


class NanosecondPauseBatchRewindStrategy(BatchRewindStrategy):
    """Pauses ``nanos`` nanoseconds, then rewinds.

    Args:
        nanos: the pause before each replay.

    Raises:
        ValueError: if ``nanos`` is negative.
    """

    def __init__(self, nanos: int) -> None:
        if nanos < 0:
            raise ValueError("nanos must be >= 0")
        self.nanos = nanos

    def handle_rewind_exception(self, exc: RewindableException, attempts: int) -> RewindAction:
        time.sleep(self.nanos / 1e9)
        return RewindAction.REWIND
