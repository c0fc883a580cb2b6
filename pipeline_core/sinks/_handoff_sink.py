"""The handoff sink: the sink-group face of :class:`HandoffWriter`."""

from __future__ import annotations

from pipeline_core.errors import SealError
from pipeline_core.sinks._batch import DeliveryBatch
from pipeline_core.sinks._handoff import Barrier, HandoffWriter, SealedBatch
from pipeline_core.sinks._sink import BatchSink


class HandoffSink(BatchSink):
    """Stages every line in raw part files and seals them into a batch at each barrier.

    Its failures are ``SealError``: a batch half-written to the staging folder cannot be
    retried in place, so the collector stops and the next run re-reads from the last sealed
    offsets (the unsealed ``_inflight`` files are discarded on start).
    """

    def __init__(self, name: str, writer: HandoffWriter) -> None:
        super().__init__(name)
        self._writer = writer

    def start(self) -> None:
        self._writer.reset()

    def deliver(self, batch: DeliveryBatch) -> None:
        try:
            self._writer.append(batch.chunks)
        except SealError:
            raise
        except Exception as exc:
            raise SealError(f"cannot stage lines for sink {self.name!r}: {exc}") from exc

    def on_barrier(self, barrier: Barrier) -> SealedBatch:
        return self._writer.seal(barrier)
