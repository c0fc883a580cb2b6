"""A sink group on the collector's ring: one ``BatchEventProcessor`` thread delivering every
ring batch through the group's ``SinkRunner`` and ``SinkProcessor``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pipeline_core.collector._events import EventKind, PipelineEvent
from pipeline_core.config import mask_url_passwords
from pipeline_core.errors import SealError, StagingFullError
from pipeline_core.ring import (
    AlertException,
    ExceptionHandler,
    RewindableEventHandler,
    RewindableException,
    Sequence,
)
from pipeline_core.sinks import (
    Barrier,
    BatchChannel,
    DeliveryBatch,
    RunnerOutcome,
    SealedBatch,
    Sink,
    SinkProcessor,
    SinkRunner,
)
from pipeline_core.source import Chunk

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BarrierPassed:
    """A sink group delivered everything before checkpoint ``checkpoint_id``'s barrier and made
    it durable; ``sealed`` is the handoff batch when the group holds the handoff sink."""

    group: str
    checkpoint_id: int
    sealed: SealedBatch | None


class SinkGroupEventHandler(RewindableEventHandler[PipelineEvent]):
    """Delivers the ring's events to one sink group, on the group's processor thread.

    * Chunks are gathered per ring batch; at ``end_of_batch`` (and before a barrier) they go
      into the group's channel as one :class:`DeliveryBatch`, and the runner polls the
      processor until a sink took it (``BACKOFF`` waits as the runner's backoff says).
    * When every sink failed (``EventDeliveryException``), the runner has already waited its
      ``max_backoff_sleep``; the handler raises ``RewindableException`` and the processor's
      ``BatchRewindStrategy`` replays the ring batch or gives up.
    * A ``SealError`` (the handoff sink cannot stage or seal) is not retried in place: it goes
      to the exception handler, which stops the collector; the next run re-reads what was not
      sealed. But a ``StagingFullError`` (no room for the batch's manifest) is: the seal is
      tried again after each of the runner's pauses, its parts kept, until it passes or the
      runner stops.
    * A barrier is passed once everything before it was delivered: every sink's
      ``on_barrier`` makes it durable (the handoff sink seals the batch), then
      ``on_barrier_passed`` reports it (the collector turns that into a mail).

    With ``sole_consumer`` (the pipeline has one sink group), a delivered event's slot drops
    its chunk at once instead of holding it until the ring wraps round.

    A replayed batch starts again from its first event; events up to ``_done_through`` were
    delivered (or their barrier passed) by an earlier attempt and are skipped, so a rewind never
    delivers a chunk twice or seals a checkpoint twice.

    Acker: once a batch is delivered, the group acks its edge of each chunk's tree
    (``children[index]``) through ``on_delivered``. A group with ``skip_replays`` (the handoff
    group) acks replayed chunks without delivering them.

    It never touches pipeline state: everything it learns leaves through ``on_barrier_passed``
    and ``on_delivered``.
    """

    def __init__(
        self,
        processor: SinkProcessor,
        runner: SinkRunner,
        channel: BatchChannel,
        on_barrier_passed: Callable[[BarrierPassed], None],
        *,
        index: int = 0,
        skip_replays: bool = False,
        on_delivered: Callable[[list[tuple[int, int]]], None] | None = None,
        sole_consumer: bool = False,
        on_released: Callable[[], None] | None = None,
    ) -> None:
        self._processor = processor
        self._runner = runner
        self._channel = channel
        self._on_barrier_passed = on_barrier_passed
        self._index = index
        self._skip_replays = skip_replays
        self._on_delivered = on_delivered
        self._chunks: list[Chunk] = []
        self._sole_consumer = sole_consumer
        self._events: list[PipelineEvent] = []  # of the chunks gathered, to release their slots
        self._acks: list[tuple[int, int]] = []
        self._done_through = -1
        self._on_released = on_released
        self._sequence: Sequence | None = None
        self.delivered_lines = 0

    @property
    def group(self) -> str:
        return self._processor.group

    def on_start(self) -> None:
        for sink in self._processor.sinks:
            sink.set_channel(self._channel)
        self._processor.start()

    def on_shutdown(self) -> None:
        self._processor.stop()

    def set_sequence_callback(self, sequence: Sequence) -> None:
        self._sequence = sequence

    def on_batch_start(self, batch_size: int, queue_depth: int) -> None:
        self._chunks.clear()  # a replayed batch gathers its chunks again
        self._events.clear()
        self._acks.clear()

    def on_event(self, event: PipelineEvent, sequence: int, end_of_batch: bool) -> None:
        if sequence > self._done_through:
            if event.kind is EventKind.CHUNK:
                chunk = event.chunk
                assert chunk is not None
                if chunk.tree:
                    self._acks.append((chunk.tree, event.children[self._index]))
                if self._sole_consumer:
                    self._events.append(event)
                if not (chunk.replay and self._skip_replays):
                    self._chunks.append(chunk)
            else:
                assert event.barrier is not None
                self._deliver(sequence - 1)
                self._pass(event.barrier, sequence)
        if end_of_batch:
            self._deliver(sequence)
            self._release(sequence)

    def _release(self, through: int) -> None:
        """Give the ring its slots back now rather than after this call returns, and say so:
        the send stage, waiting for a free slot, publishes at once instead of at its next
        poll."""
        if self._sequence is not None:
            self._sequence.set(through)
        if self._on_released is not None:
            self._on_released()

    def _deliver(self, through: int) -> None:
        if not self._chunks:
            self._acknowledge()
            self._done_through = max(self._done_through, through)
            return
        batch = DeliveryBatch(tuple(self._chunks), through)
        self._channel.put(batch)
        while len(self._channel):
            outcome = self._runner.run_once()
            if self._runner.stopped:
                self._channel.clear()
                raise AlertException()  # halting: the batch stays unacknowledged in the ring
            if outcome is RunnerOutcome.FAILED:
                self._channel.clear()
                error = self._runner.last_error
                if isinstance(error, SealError):
                    raise error
                raise RewindableException(error)
        self._chunks.clear()
        for delivered in self._events:
            # The only group on the ring: nobody reads the slot again, so it need not keep the
            # chunk's bytes alive until the ring wraps round (memory: queued chunks only).
            delivered.clear()
        self._events.clear()
        self._done_through = through
        self.delivered_lines += batch.lines
        self._acknowledge()

    def _acknowledge(self) -> None:
        if self._acks and self._on_delivered is not None:
            self._on_delivered(list(self._acks))
        self._acks.clear()

    def _pass(self, barrier: Barrier, sequence: int) -> None:
        sealed: SealedBatch | None = None
        for sink in self._processor.sinks:
            try:
                result = self._on_barrier(sink, barrier)
            except SealError:
                raise
            except Exception as exc:
                log.warning(
                    "sink %s could not flush at checkpoint %d: %s",
                    sink.name,
                    barrier.checkpoint_id,
                    mask_url_passwords(str(exc)),
                )
                continue
            if result is not None:
                sealed = result
        self._done_through = sequence
        self._on_barrier_passed(BarrierPassed(self.group, barrier.checkpoint_id, sealed))

    def _on_barrier(self, sink: Sink, barrier: Barrier) -> SealedBatch | None:
        """``sink.on_barrier``, tried again after the runner's pause while the staging
        filesystem has no room for the batch; halting when the runner stops meanwhile (the
        barrier is not passed: the next run reads what was not sealed)."""
        while True:
            try:
                return sink.on_barrier(barrier)
            except StagingFullError as exc:
                log.warning("sink group %r: %s", self._processor.group, exc)
                if self._runner.pause():
                    raise AlertException() from exc


class ReportingExceptionHandler(ExceptionHandler[PipelineEvent]):
    """Sends a sink group's failure to the collector's mailbox thread (``report``: the mailbox
    processor's ``report_throwable``), then stops the group's thread."""

    def __init__(self, report: Callable[[BaseException], None]) -> None:
        self._report = report

    def handle_event_exception(
        self, exc: BaseException, sequence: int, event: PipelineEvent | None
    ) -> None:
        given_up = isinstance(exc, RewindableException) and exc.__cause__ is not None
        self._report(exc.__cause__ if given_up and exc.__cause__ is not None else exc)
        raise exc

    def handle_on_start_exception(self, exc: BaseException) -> None:
        self._report(exc)

    def handle_on_shutdown_exception(self, exc: BaseException) -> None:
        log.error("sink shutdown failed: %s", mask_url_passwords(str(exc)))
