"""The collector: a mailbox thread reading files, stage queues, sink groups on a ring.

::

    files --(TimeSlicedReader, the mailbox's default action)--> process level (watermarks)
          --(process stage thread)--> BlockedQueue --> send level (watermarks)
          --(send stage thread)--> RingBuffer --> one BatchEventProcessor per sink group
          --> SinkRunner --> SinkProcessor (default | failover | load_balance) --> sinks
              (the handoff sink seals staging/<pipeline>/<N>/<host>/ at each barrier)
    mails to the mailbox thread: checkpoint requests (MAX_PRIORITY), barriers passed, stop

Back-pressure: a slow sink group holds the ring; the send stage waits for a slot; the send
queue fills to its high watermark; the process level stops serving the pipeline; the process
queue fills; the reader stops reading the pipeline and suspends until the process queue's
low-watermark feedback resumes it. The mailbox thread never blocks on a full stage, so
checkpoint mails are served while the sinks are slow.

Threading model: every piece of pipeline state (tracked files, offsets, barriers, the
coordinator) is touched only on the mailbox thread, the thread that calls :meth:`run_once` or
:meth:`run`. Stage threads, sink-group threads and the control thread (lease renewal, request
polling) talk to it only by mail.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from pipeline_core.collector._checkpoints import CheckpointCoordinator, SealedCheckpoint
from pipeline_core.collector._delivery_tracking import DeliveryTracker
from pipeline_core.collector._events import PipelineEvent
from pipeline_core.collector._sink_group import BarrierPassed, SinkGroupEventHandler
from pipeline_core.collector._sink_groups import build_sink_groups
from pipeline_core.collector._sink_state_store import MetastoreSinkStateStore
from pipeline_core.collector._stages import (
    ProcessStage,
    RingPublisher,
    StageItem,
    StageThread,
)
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CollectorBusyError
from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MailboxDefaultAction,
    MailboxProcessor,
    RejectedExecutionError,
)
from pipeline_core.metastore import Metastore
from pipeline_core.queues import BlockedQueue, PushResult, QueueLevel, QueueStats
from pipeline_core.ring import (
    AlertException,
    BatchEventProcessor,
    ExceptionHandler,
    RewindableException,
    RingBuffer,
)
from pipeline_core.sinks import HandoffWriter, Sink
from pipeline_core.source import Chunk, FileWatcher, TimeSlicedReader

log = logging.getLogger(__name__)

IDLE_POLL_SECONDS = 0.2
"""How long a caught-up collector waits before reading again."""

CONTROL_POLL_SECONDS = 1.0
"""How often the control thread looks at the metastore (lease, checkpoint requests)."""


class CollectorMode(Enum):
    ONCE = "once"
    """Read every file to its current end, seal the requested checkpoints, stop."""
    CONTINUOUS = "continuous"
    """Tail until stopped, sealing each checkpoint requested meanwhile; seal on stop."""


@dataclass(frozen=True)
class AckerStats:
    """The acker's counters at the end of a run."""

    acked: int
    replayed: int
    timed_out: int
    pending: int
    lost: int
    committed_offsets: dict[str, int]


@dataclass(frozen=True)
class CollectorResult:
    sealed: tuple[SealedCheckpoint, ...]
    files: int
    lines: int
    bytes: int
    seconds: float
    acker: AckerStats | None = None


class _ReportingExceptionHandler(ExceptionHandler[PipelineEvent]):
    """Sends a sink group's failure to the mailbox thread, then stops the group's thread."""

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
        log.error("sink shutdown failed: %s", exc)


def _run_consumer(consumer: BatchEventProcessor[PipelineEvent]) -> None:
    """A sink group's thread. A failure has been mailed to the mailbox thread by the
    ``_ReportingExceptionHandler`` before it ends the loop: nothing is left to report here."""
    with contextlib.suppress(Exception):
        consumer.run()


class Collector:
    """Collects one pipeline's files on this host into sealed handoff batches.

    Lifecycle: create, call :meth:`run_once` or :meth:`run` once (on the thread that will be
    the mailbox thread), done. :meth:`stop` may be called from any thread or a signal handler.
    """

    def __init__(
        self,
        config: PipelineConfig,
        metastore: Metastore,
        *,
        sinks: Mapping[str, Sink] | None = None,
    ) -> None:
        """``sinks``: sinks made in code, each used instead of the config's sink of its name
        (custom destinations; test doubles)."""
        self._config = config
        self._metastore = metastore
        tuning = config.collector
        self._host = tuning.host
        self._holder = f"{self._host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._watcher = FileWatcher(
            config.sources,
            self._host,
            tuning.signature_bytes,
            metastore.files(config.name, self._host),
        )
        self._reader = TimeSlicedReader(
            self._watcher,
            chunk_bytes=tuning.read_chunk_bytes,
            max_line_bytes=tuning.max_line_bytes,
            slice_seconds=tuning.read_slice_ms / 1000,
        )
        writer = HandoffWriter(
            config.staging_dir,
            config.name,
            self._host,
            config.sources,
            max_part_bytes=config.handoff.max_part_bytes,
            row_group_bytes=config.handoff.row_group_bytes,
        )
        self._sink_states = MetastoreSinkStateStore(metastore, config.name, self._host)
        self._groups = build_sink_groups(config, writer, self._sink_states, sinks)
        self._coordinator = CheckpointCoordinator(
            metastore, config.name, self._host, [group.name for group in self._groups]
        )
        self._ring = RingBuffer.create_single_producer(PipelineEvent, tuning.ring_size)
        self._key = config.name
        self._send_level: QueueLevel[StageItem] = QueueLevel("send")
        self._process_level: QueueLevel[StageItem] = QueueLevel(
            "process", downstream=self._send_level
        )
        self._process_level.add_queue(self._key, tuning.process_queue_size)
        self._send_level.add_queue(self._key, tuning.send_queue_size)
        self._to_send = BlockedQueue(self._send_level)
        self._tracking = DeliveryTracker(
            self._watcher,
            timeout=tuning.acker_timeout_s,
            max_pending=tuning.max_pending_trees,
            replays_wanted=any(not group.holds_handoff for group in self._groups),
        )
        self._last_snapshot = time.monotonic()
        self._publisher = RingPublisher(
            {self._key: self._ring}, len(self._groups), self._anchored_from_stage
        )
        self._blocked_reading: MailboxDefaultAction.Suspension | None = None
        self._waiting_for_acks: MailboxDefaultAction.Suspension | None = None
        # Made on the thread that runs the loop (the mailbox records its owner thread).
        self._processor: MailboxProcessor | None = None
        self._stop_requested = threading.Event()
        self._mode = CollectorMode.ONCE
        self._last_scan = float("-inf")
        self._idle_confirmed = False
        self._stopping = False
        self._finishing = False
        self._lines = 0
        self._bytes = 0
        self._control_stop = threading.Event()

    # -- public ------------------------------------------------------------------------------

    def run_once(self) -> CollectorResult:
        """Read every file to its current end, seal every requested checkpoint (requesting one
        if none is pending), and return what was sealed."""
        return self._run(CollectorMode.ONCE)

    def run(self) -> CollectorResult:
        """Tail the files until :meth:`stop`; seal requested checkpoints as they come."""
        return self._run(CollectorMode.CONTINUOUS)

    def stop(self) -> None:
        """Seal what has been read and stop (any thread; not from a signal handler, which
        may interrupt the mailbox thread while it holds the mailbox's lock)."""
        self._stop_requested.set()
        processor = self._processor
        if processor is not None:
            with contextlib.suppress(RejectedExecutionError):  # the loop has ended already
                processor.get_main_mailbox_executor().execute(self._begin_stop, "stop requested")

    def stage_stats(self) -> dict[str, QueueStats]:
        """This pipeline's stage queues (``process``, ``send``) now: sizes against watermarks
        and counters since the start (any thread)."""
        return {
            level.name: level.stats(self._key) for level in (self._process_level, self._send_level)
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def _run(self, mode: CollectorMode) -> CollectorResult:
        self._mode = mode
        started = time.monotonic()
        lease = self._config.collector.lease_seconds
        if not self._metastore.acquire_lease(self._config.name, self._host, self._holder, lease):
            holder = self._metastore.lease_holder(self._config.name, self._host)
            raise CollectorBusyError(
                f"pipeline {self._config.name!r} on {self._host} is being collected by {holder}"
            )
        self._processor = MailboxProcessor(self._default_action)
        self._checkpoints = self._processor.get_mailbox_executor(MAX_PRIORITY)
        self._mail = self._processor.get_main_mailbox_executor()
        report = self._processor.report_throwable
        self._process_level.add_feedback_listener(self._on_process_queue_writable)
        stages = [
            StageThread("sluice-process", self._process_level, ProcessStage(self._to_send), report),
            StageThread("sluice-send", self._send_level, self._publisher, report),
        ]
        consumers: list[tuple[BatchEventProcessor[PipelineEvent], threading.Thread]] = []
        for index, group in enumerate(self._groups):
            handler = SinkGroupEventHandler(
                group.processor,
                group.runner,
                group.channel,
                self._barrier_passed_from_sink,
                index=index,
                skip_replays=group.holds_handoff,
                on_delivered=self._delivered_from_sink,
            )
            consumer = BatchEventProcessor(
                self._ring,
                self._ring.new_barrier(),
                handler,
                exception_handler=_ReportingExceptionHandler(report),
                rewind_strategy=group.rewind_strategy,
            )
            self._ring.add_gating_sequences(consumer.sequence)
            thread = threading.Thread(
                target=_run_consumer,
                args=(consumer,),
                name=f"sluice-sink-{group.name}",
                daemon=True,
            )
            consumers.append((consumer, thread))
        if self._stop_requested.is_set():
            self._mail.execute(self._begin_stop, "stop requested before the start")
        self._tracking.restore(self._metastore.acker_trees(self._config.name, self._host))
        control = threading.Thread(target=self._control_loop, name="sluice-control", daemon=True)
        for stage in stages:
            stage.start()
        for _, thread in consumers:
            thread.start()
        control.start()
        try:
            self._processor.run_mailbox_loop()
        finally:
            self._control_stop.set()
            self._publisher.stopping.set()
            for stage in stages:
                stage.stop()
            for group in self._groups:
                group.runner.stop()
            for consumer, thread in consumers:
                consumer.halt()
                thread.join(timeout=30)
                self._ring.remove_gating_sequence(consumer.sequence)
            control.join(timeout=30)
            self._sink_states.flush()
            self._save_in_flight()
            self._watcher.close()
            self._processor.close()
            self._metastore.release_lease(self._config.name, self._host, self._holder)
        return CollectorResult(
            sealed=tuple(self._coordinator.sealed),
            files=len(self._watcher.files),
            lines=self._lines,
            bytes=self._bytes,
            seconds=time.monotonic() - started,
            acker=AckerStats(
                acked=self._tracking.acker.acked,
                replayed=self._tracking.replayed,
                timed_out=self._tracking.acker.timed_out,
                pending=self._tracking.acker.pending,
                lost=self._tracking.lost,
                committed_offsets=self._tracking.offsets.snapshot(),
            ),
        )

    def _control_loop(self) -> None:
        """Renews the lease; in continuous mode, forwards new checkpoint requests as mail;
        sends the acker's timeout sweep as mail (reading may be suspended meanwhile)."""
        lease = self._config.collector.lease_seconds
        renew_every = max(0.5, lease / 3)
        next_renewal = time.monotonic() + renew_every
        tick = min(CONTROL_POLL_SECONDS, self._config.collector.acker_timeout_s / 3)
        next_poll = time.monotonic() + CONTROL_POLL_SECONDS
        forwarded: set[int] = set()
        while not self._control_stop.wait(tick):
            with contextlib.suppress(RejectedExecutionError):
                self._mail.execute(self._sweep, "acker timeout sweep")
            if time.monotonic() < next_poll:
                continue
            next_poll = time.monotonic() + CONTROL_POLL_SECONDS
            try:
                if time.monotonic() >= next_renewal:
                    if not self._metastore.acquire_lease(
                        self._config.name, self._host, self._holder, lease
                    ):
                        # Another collector took over an expired lease: stop reading at once.
                        self._loop().report_throwable(
                            CollectorBusyError(f"lost the collector lease of {self._config.name}")
                        )
                        return
                    next_renewal = time.monotonic() + renew_every
                if self._mode is CollectorMode.CONTINUOUS:
                    for checkpoint_id in self._metastore.unsealed_for_host(
                        self._config.name, self._host
                    ):
                        if checkpoint_id not in forwarded:
                            forwarded.add(checkpoint_id)
                            self._checkpoints.execute(
                                functools.partial(self._inject, checkpoint_id),
                                "checkpoint %d requested",
                                checkpoint_id,
                            )
            except Exception as exc:  # the metastore may be briefly unreachable
                log.warning("control loop: %s", exc)

    # -- the default action: reading ---------------------------------------------------------

    def _default_action(self, controller: MailboxDefaultAction.Controller) -> None:
        if self._finishing:
            controller.suspend_default_action()
            return
        now = time.monotonic()
        if now - self._last_scan >= self._config.collector.discovery_interval_s:
            self._watcher.scan()
            self._last_scan = now
        grace = (
            0.0
            if self._mode is CollectorMode.ONCE or self._stopping
            else (self._config.collector.rotated_grace_s)
        )
        self._tracking.sweep_if_due()
        if now - self._last_snapshot >= self._config.collector.acker_snapshot_s:
            self._save_in_flight()
        if not self._push_replays():
            self._wait_for_process_queue(controller)
            return
        if not self._process_level.is_writable(self._key):
            self._wait_for_process_queue(controller)
            return
        if not self._tracking.can_admit():
            self._wait_for_acks(controller)
            return
        result = self._reader.read_slice(self._publish_chunk, rotated_grace=grace)
        self._lines += result.lines
        self._bytes += result.bytes
        if result.blocked:
            self._idle_confirmed = False
            if self._tracking.can_admit():
                self._wait_for_process_queue(controller)
            else:
                self._wait_for_acks(controller)
            return
        if not result.caught_up:
            self._idle_confirmed = False
            return
        if self._mode is CollectorMode.ONCE or self._stopping:
            if not self._idle_confirmed:
                # Look once more for files that appeared while reading, then finish.
                self._watcher.scan()
                self._last_scan = time.monotonic()
                self._idle_confirmed = True
                return
            self._finish()
            return
        suspension = controller.suspend_default_action()
        timer = threading.Timer(IDLE_POLL_SECONDS, suspension.resume)
        timer.daemon = True
        timer.start()

    def _publish_chunk(self, chunk: Chunk) -> bool:
        if not self._tracking.can_admit():
            return False
        chunk = self._tracking.stamp(chunk)
        if self._process_level.push(self._key, chunk) is not PushResult.ACCEPTED:
            return False
        self._tracking.started(chunk)
        return True

    def _push_replays(self) -> bool:
        """Queue the ranges to re-deliver, before any new reading; False while the process
        queue is full."""
        replays = self._tracking.replays
        while replays:
            chunk = self._tracking.stamp(replays[0])
            if self._process_level.push(self._key, chunk) is not PushResult.ACCEPTED:
                return False
            replays.popleft()
            self._tracking.started(chunk)
        return True

    def _wait_for_acks(self, controller: MailboxDefaultAction.Controller) -> None:
        """Stop reading until acks bring the trees in flight under the limit (an ack mail
        resumes reading)."""
        self._waiting_for_acks = controller.suspend_default_action()

    def _save_in_flight(self) -> None:
        self._last_snapshot = time.monotonic()
        try:
            self._metastore.save_acker_trees(
                self._config.name, self._host, self._tracking.records()
            )
        except Exception as exc:  # retried at the next snapshot
            log.warning("cannot save the acker's in-flight trees: %s", exc)

    def _wait_for_process_queue(self, controller: MailboxDefaultAction.Controller) -> None:
        """Stop reading until the process queue drains to its low watermark (its feedback
        resumes reading; checked again after suspending, so a feedback in between is not
        missed). Mail, checkpoints included, is still served meanwhile."""
        suspension = controller.suspend_default_action()
        self._blocked_reading = suspension
        if self._process_level.is_writable(self._key):
            self._blocked_reading = None
            suspension.resume()

    def _on_process_queue_writable(self, key: str) -> None:
        """The process level's feedback (on the process stage thread)."""
        suspension = self._blocked_reading
        if suspension is not None and key == self._key:
            self._blocked_reading = None
            suspension.resume()

    # -- mails (mailbox thread) --------------------------------------------------------------

    def _inject(self, checkpoint_id: int) -> None:
        if self._coordinator.knows(checkpoint_id):
            return
        barrier = self._coordinator.barrier(checkpoint_id, self._watcher)
        self._process_level.push(self._key, barrier, urgent=True)

    def _begin_stop(self) -> None:
        self._stopping = True
        self._idle_confirmed = False

    def _finish(self) -> None:
        """Caught up for good: put barriers for every pending request, then end the loop."""
        self._finishing = True
        pending = self._metastore.unsealed_for_host(self._config.name, self._host)
        if not pending:
            pending = [self._metastore.request_checkpoint(self._config.name).checkpoint_id]
        for checkpoint_id in pending:
            self._inject(checkpoint_id)
        self._end_when_sealed()

    def _end_when_sealed(self) -> None:
        if self._finishing and self._coordinator.in_flight == 0:
            self._loop().all_actions_completed()

    def _on_barrier_passed(self, passed: BarrierPassed) -> None:
        recorded = self._coordinator.passed(passed, self._watcher, self._tracking.records)
        if recorded is not None:
            self._last_snapshot = time.monotonic()
            self._sink_states.flush()
            self._end_when_sealed()

    def _loop(self) -> MailboxProcessor:
        assert self._processor is not None, "the collector is not running"
        return self._processor

    def _sweep(self) -> None:
        self._tracking.acker.sweep()
        self._resume_if_admitting()

    def _on_acks(self, acks: list[tuple[int, int]]) -> None:
        self._tracking.acker.ack_all(acks)
        self._resume_if_admitting()

    def _resume_if_admitting(self) -> None:
        suspension = self._waiting_for_acks
        if suspension is not None and (self._tracking.replays or self._tracking.can_admit()):
            self._waiting_for_acks = None
            suspension.resume()

    # -- called on stage and sink group threads: forward as mail -----------------------------

    def _anchored_from_stage(self, tree: int, ack_value: int) -> None:
        with contextlib.suppress(RejectedExecutionError):  # the loop has ended
            self._mail.execute(
                functools.partial(self._on_acks, [(tree, ack_value)]), "chunk anchored"
            )

    def _delivered_from_sink(self, acks: list[tuple[int, int]]) -> None:
        with contextlib.suppress(RejectedExecutionError):
            self._mail.execute(functools.partial(self._on_acks, acks), "chunks delivered")

    def _barrier_passed_from_sink(self, passed: BarrierPassed) -> None:
        try:
            self._mail.execute(
                functools.partial(self._on_barrier_passed, passed),
                "sink group %s passed checkpoint %d",
                passed.group,
                passed.checkpoint_id,
            )
        except RejectedExecutionError:
            raise AlertException() from None  # the loop has ended: stop this group
