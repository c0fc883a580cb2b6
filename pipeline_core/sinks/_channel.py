"""``BatchChannel``: the batches a sink group must deliver, taken by its sinks in transactions.

Flume's sinks pull events from a channel inside a transaction: ``take`` then ``commit`` when the
destination has them, ``rollback`` (the events stay) when it failed. Sluice keeps that contract,
with whole ring batches as the unit::

    with channel.transaction() as tx:
        batch = tx.take()
        if batch is None:
            return Status.BACKOFF
        deliver(batch)          # raises -> the transaction rolls back, the batch stays
        tx.commit()             # the batch leaves the channel
        return Status.READY
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType

from pipeline_core.sinks._batch import DeliveryBatch


class ChannelFullError(Exception):
    """``put`` on a channel holding ``capacity`` batches."""


class Transaction:
    """One sink's attempt to deliver the channel's oldest batch. Not reusable."""

    def __init__(self, channel: BatchChannel) -> None:
        self._channel = channel
        self._taken: DeliveryBatch | None = None
        self._done = False

    def take(self) -> DeliveryBatch | None:
        """The oldest batch (it stays in the channel until ``commit``), or ``None``."""
        if self._done:
            raise RuntimeError("the transaction is over")
        self._taken = self._channel.peek()
        return self._taken

    def commit(self) -> None:
        """The taken batch was delivered: remove it from the channel."""
        if self._done:
            raise RuntimeError("the transaction is over")
        self._done = True
        if self._taken is not None:
            self._channel._remove(self._taken)

    def rollback(self) -> None:
        """The taken batch was not delivered: it stays for the next attempt."""
        self._done = True

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._done:
            self.rollback()


class BatchChannel:
    """A bounded FIFO of :class:`DeliveryBatch` shared by the sinks of one group.

    Threading model: any thread may call any method; one lock guards the FIFO. In the collector
    the group's ``BatchEventProcessor`` thread both puts and (through its sinks) takes.
    """

    def __init__(self, capacity: int = 1) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._batches: deque[DeliveryBatch] = deque()
        self._lock = threading.Lock()

    def put(self, batch: DeliveryBatch) -> None:
        with self._lock:
            if len(self._batches) >= self._capacity:
                raise ChannelFullError(f"the channel holds {self._capacity} batches already")
            self._batches.append(batch)

    def peek(self) -> DeliveryBatch | None:
        with self._lock:
            return self._batches[0] if self._batches else None

    def transaction(self) -> Transaction:
        return Transaction(self)

    def clear(self) -> list[DeliveryBatch]:
        """Drop every batch (a rewound ring batch is put again from its first event)."""
        with self._lock:
            dropped = list(self._batches)
            self._batches.clear()
            return dropped

    def __len__(self) -> int:
        with self._lock:
            return len(self._batches)

    def _remove(self, batch: DeliveryBatch) -> None:
        with self._lock:
            if self._batches and self._batches[0] is batch:
                self._batches.popleft()
