"""The handoff sink: the sink-group face of :class:`HandoffWriter`."""

from __future__ import annotations

from pipeline_core.errors import EventDeliveryException, SealError
from pipeline_core.sinks._batch import DeliveryBatch
from pipeline_core.sinks._handoff import NO_ROOM, Barrier, HandoffWriter, SealedBatch
from pipeline_core.sinks._sink import BatchSink


class HandoffSink(BatchSink):
    """Stages every line in raw part files and seals them into a batch at each barrier.

    Its failures are ``SealError``: a batch half-written to the staging folder cannot be
    retried in place, so the collector stops and the next run re-reads from the last sealed
    offsets (the unsealed ``_inflight`` files are discarded on start). But a full filesystem
    (``ENOSPC``, ``EDQUOT``) while staging lines is waited out: the writer takes back what the
    delivery wrote and the failure is an ``EventDeliveryException``, so the sink group
    delivers the same lines again after its pause, reading stalls behind them meanwhile, and
    the runner's log says why each time. So is one at a seal (``StagingFullError``: no room
    for the manifest): the parts are kept and the sink group seals again after its pause.
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
        except OSError as exc:
            if exc.errno in NO_ROOM:
                raise EventDeliveryException(
                    f"cannot stage lines for sink {self.name!r}: {exc.strerror} (the staging "
                    "folder's filesystem is full); what the batch wrote was taken back, and it "
                    "is staged again once there is room"
                ) from exc
            raise SealError(f"cannot stage lines for sink {self.name!r}: {exc}") from exc
        except Exception as exc:
            raise SealError(f"cannot stage lines for sink {self.name!r}: {exc}") from exc

    def on_barrier(self, barrier: Barrier) -> SealedBatch:
        return self._writer.seal(barrier)
