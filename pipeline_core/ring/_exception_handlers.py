"""What a ``BatchEventProcessor`` does when an ``EventHandler`` raises."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

__all__ = ["ExceptionHandler", "FatalExceptionHandler", "IgnoreExceptionHandler"]

E_contra = TypeVar("E_contra", contravariant=True)

logger = logging.getLogger(__name__)


class ExceptionHandler(ABC, Generic[E_contra]):
    """Decides what an exception raised by an ``EventHandler`` does to its processor."""

    @abstractmethod
    def handle_event_exception(
        self, exc: BaseException, sequence: int, event: E_contra | None
    ) -> None:
        """Handle an exception raised while processing events.

        Returning means "skip it": the processor moves its sequence to ``sequence`` (the event
        counts as processed) and goes on with the next one.

        Args:
            exc: what was raised (by ``on_event``, ``on_batch_start`` or ``on_timeout``).
            sequence: the sequence being processed when it was raised.
            event: the event being processed, ``None`` outside ``on_event``.

        Raises:
            BaseException: to stop the processor; ``run`` then calls ``on_shutdown``, returns
                to IDLE and lets the exception out.
        """

    @abstractmethod
    def handle_on_start_exception(self, exc: BaseException) -> None:
        """Handle an exception raised by ``EventHandler.on_start`` (the processor goes on)."""

    @abstractmethod
    def handle_on_shutdown_exception(self, exc: BaseException) -> None:
        """Handle an exception raised by ``EventHandler.on_shutdown``."""


class FatalExceptionHandler(ExceptionHandler[object]):
    """Logs an event exception and re-raises it, stopping the processor (the default)."""

    def handle_event_exception(self, exc: BaseException, sequence: int, event: object) -> None:
        logger.error("exception processing sequence %d: %r", sequence, event, exc_info=exc)
        raise exc

    def handle_on_start_exception(self, exc: BaseException) -> None:
        logger.error("exception during on_start()", exc_info=exc)

    def handle_on_shutdown_exception(self, exc: BaseException) -> None:
        logger.error("exception during on_shutdown()", exc_info=exc)


class IgnoreExceptionHandler(ExceptionHandler[object]):
    """Logs an event exception and skips the event; the processor carries on."""

    def handle_event_exception(self, exc: BaseException, sequence: int, event: object) -> None:
        logger.warning("skipping sequence %d after exception: %r", sequence, event, exc_info=exc)

    def handle_on_start_exception(self, exc: BaseException) -> None:
        logger.warning("exception during on_start()", exc_info=exc)

    def handle_on_shutdown_exception(self, exc: BaseException) -> None:
        logger.warning("exception during on_shutdown()", exc_info=exc)
