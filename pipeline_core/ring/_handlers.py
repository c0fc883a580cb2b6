"""Event handlers: the user code a ``BatchEventProcessor`` drives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from ._sequence import Sequence

__all__ = ["EventHandler", "RewindableEventHandler"]

E_contra = TypeVar("E_contra", contravariant=True)


class EventHandler(ABC, Generic[E_contra]):
    """Receives the events of a ring, in order, in batches, on the processor's thread.

    Only ``on_event`` must be implemented; the other callbacks default to doing nothing.
    Everything is called from the thread running ``BatchEventProcessor.run``.

    Lifecycle: ``on_start`` once when the processor starts, then for each batch
    ``on_batch_start`` followed by ``on_event`` per event (``end_of_batch`` on the last one),
    ``on_timeout`` whenever the wait strategy times out, and ``on_shutdown`` once when the
    processor stops, whatever the reason.
    """

    @abstractmethod
    def on_event(self, event: E_contra, sequence: int, end_of_batch: bool) -> None:
        """Handle one event.

        The event object belongs to the ring and is reused once the processor's sequence
        passes it: copy out what must outlive the call.

        Args:
            event: the event published for ``sequence``.
            sequence: its sequence number.
            end_of_batch: True for the last event of the batch (a good moment to flush).

        Raises:
            Exception: any exception goes to the processor's ``ExceptionHandler``.
        """

    def on_batch_start(self, batch_size: int, queue_depth: int) -> None:
        """Called before the events of a batch.

        Args:
            batch_size: how many events the batch holds (at most the ``max_batch_size``).
            queue_depth: how many events were available when the batch was taken, this batch
                included.
        """

    def on_start(self) -> None:
        """Called once on the processor's thread before the first event."""

    def on_shutdown(self) -> None:
        """Called once on the processor's thread after the last event, whatever the reason."""

    def on_timeout(self, sequence: int) -> None:
        """Called when the wait strategy timed out waiting for the next event.

        Args:
            sequence: the processor's sequence, the last event it completed.
        """

    def set_sequence_callback(self, sequence: Sequence) -> None:
        """Receive the processor's own sequence when the processor is made.

        A handler that finishes events asynchronously may ``set`` it itself to release slots
        early; most handlers ignore it.
        """


class RewindableEventHandler(EventHandler[E_contra]):
    """An event handler that may raise ``RewindableException`` to replay the current batch.

    The processor then asks its ``BatchRewindStrategy`` whether to rewind: on
    ``RewindAction.REWIND`` the batch is delivered again from its first event (so handling
    must be idempotent within a batch), on ``RewindAction.THROW`` the exception goes to the
    processor's ``ExceptionHandler``.
    """
