"""The sink group's consumer of the ring: chunks into the handoff writer, barriers into seals."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pipeline_core.collector._events import EventKind, PipelineEvent
from pipeline_core.errors import SealError
from pipeline_core.ring import EventHandler
from pipeline_core.sinks import HandoffWriter, SealedBatch

log = logging.getLogger(__name__)


class HandoffEventHandler(EventHandler[PipelineEvent]):
    """Runs on the sink group's :class:`~pipeline_core.ring.BatchEventProcessor` thread.

    It never touches pipeline state: each sealed batch (or seal failure) is reported through
    ``on_sealed``/``on_failed``, which the collector wires to mails for its mailbox thread.
    """

    def __init__(
        self,
        writer: HandoffWriter,
        on_sealed: Callable[[SealedBatch], None],
        on_failed: Callable[[int, SealError], None],
    ) -> None:
        self._writer = writer
        self._on_sealed = on_sealed
        self._on_failed = on_failed

    def on_start(self) -> None:
        self._writer.reset()

    def on_event(self, event: PipelineEvent, sequence: int, end_of_batch: bool) -> None:
        try:
            if event.kind is EventKind.CHUNK:
                assert event.chunk is not None
                self._writer.append(event.chunk)
            else:
                assert event.barrier is not None
                barrier = event.barrier
                try:
                    sealed = self._writer.seal(barrier)
                except SealError as exc:
                    log.error("%s", exc)
                    self._on_failed(barrier.checkpoint_id, exc)
                else:
                    self._on_sealed(sealed)
        finally:
            event.clear()
