"""``Sink``: one destination. A sink group's processor calls ``process()``; the sink takes the
group channel's oldest batch in a transaction and delivers it."""

from __future__ import annotations

from abc import ABC, abstractmethod

from pipeline_core.sinks._batch import DeliveryBatch
from pipeline_core.sinks._channel import BatchChannel
from pipeline_core.sinks._handoff import Barrier, SealedBatch
from pipeline_core.sinks._status import Status


class Sink(ABC):
    """A destination for batches (Flume's ``Sink``).

    Lifecycle: ``set_channel`` (by its group), ``start()``, any number of ``process()`` and
    ``on_barrier()`` calls, ``stop()``. All calls come from the group's delivery thread.

    ``process()`` returns ``Status.READY`` when it delivered a batch and ``Status.BACKOFF``
    when there was nothing to deliver or the destination is not ready now; a failure raises
    (the processor above decides what happens next). Retryable failures inside a sink
    (connection resets, HTTP 429/503, deadlocks) are retried inside the sink first, so the
    processor sees one failure per batch.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._channel: BatchChannel | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def channel(self) -> BatchChannel:
        if self._channel is None:
            raise RuntimeError(f"sink {self.name!r} has no channel")
        return self._channel

    def set_channel(self, channel: BatchChannel) -> None:
        self._channel = channel

    def start(self) -> None:  # noqa: B027 - optional hook
        """Open connections and files."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Flush and release everything ``start`` opened."""

    @abstractmethod
    def process(self) -> Status:
        """Deliver the channel's oldest batch, if any."""

    def on_barrier(self, barrier: Barrier) -> SealedBatch | None:
        """Everything before ``barrier`` was delivered: make it durable.

        The handoff sink seals the checkpoint's batch and returns it; other sinks flush and
        return ``None``. A failure raises ``SealError``.
        """
        return None


class BatchSink(Sink):
    """A sink that delivers a whole batch at a time: implement ``deliver``."""

    def process(self) -> Status:
        with self.channel.transaction() as transaction:
            batch = transaction.take()
            if batch is None:
                return Status.BACKOFF
            self.deliver(batch)
            transaction.commit()
            return Status.READY

    @abstractmethod
    def deliver(self, batch: DeliveryBatch) -> None:
        """Deliver every line of ``batch`` or raise (nothing is committed then)."""
