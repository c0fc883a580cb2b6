"""The collector's checkpoint lifecycle: barriers in, sealed batches out, pipelines finished."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Mapping

from pipeline_core.collector._checkpoints import SealedCheckpoint
from pipeline_core.collector._launcher import PipelineLauncher, UploadFeedback
from pipeline_core.collector._lifecycle import CollectorMode, PipelineState
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._registry import PipelineRegistry, Replacement
from pipeline_core.collector._results import RunResults
from pipeline_core.collector._sink_group import BarrierPassed
from pipeline_core.collector._stages import StageQueues
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CollectorBusyError, MetastoreError
from pipeline_core.mailbox import MAX_PRIORITY, MailboxProcessor, RejectedExecutionError
from pipeline_core.metastore import Metastore
from pipeline_core.ring import AlertException
from pipeline_core.sinks import Sink

log = logging.getLogger(__name__)

STOP_SEAL_SECONDS = 20.0
"""How long a stop waits for the pipelines' last seals. One that cannot seal by then (its
staging disk full, its sink group failing) stops unsealed: what it read since its last seal
is read again by the next run, so nothing is lost or sealed twice."""


class CheckpointDriver:
    """Drives checkpoints and the pipelines' lifecycle: requests become barriers behind the
    last chunk read, barriers passed by every sink group become sealed batches, and a pipeline
    that is stopped, removed or replaced is sealed first, then ends.

    * A request (from the control loop, or cut here when a pipeline finishes with none
      pending) is injected once per pipeline: a barrier at the files' read offsets, pushed
      urgently into the pipeline's process queue.
    * A pipeline finishes (FINISHING, REMOVING or REPLACING) with a barrier for every request
      pending; once the last is sealed it becomes DONE (stays until the collector stops),
      REMOVED or REPLACED (retired; a REPLACED one is served again from its new config).
    * A stop finishes every pipeline (what is not read yet is read by the next run); the
      mailbox loop ends when every pipeline is DONE, or :data:`STOP_SEAL_SECONDS` after the
      stop with the pipelines that could not seal left unsealed.

    Threading model: :meth:`add`, :meth:`remove`, :meth:`replace`, :meth:`stop`,
    :meth:`checkpoint_requested`, :meth:`barrier_passed`, :meth:`batch_uploaded`,
    :meth:`upload_failed` and :meth:`lease_lost` may be called
    from any thread and only send mail; everything else runs on the mailbox thread, and each
    mail handler checks it first.
    """

    def __init__(
        self,
        processor: MailboxProcessor,
        registry: PipelineRegistry,
        queues: StageQueues,
        launcher: PipelineLauncher,
        results: RunResults,
        mode: CollectorMode,
    ) -> None:
        self._processor = processor
        self._mail = processor.get_main_mailbox_executor()
        self._checkpoints = processor.get_mailbox_executor(MAX_PRIORITY)
        self._registry = registry
        self._queues = queues
        self._launcher = launcher
        self._results = results
        self._mode = mode
        self._stop_deadline: threading.Timer | None = None

    # -- any thread: mail only ---------------------------------------------------------------

    def add(
        self, config: PipelineConfig, metastore: Metastore, sinks: Mapping[str, Sink] | None
    ) -> None:
        self._mail.execute(
            functools.partial(self.start_pipeline, config, metastore, sinks),
            "pipeline %s added",
            config.name,
        )

    def remove(self, name: str) -> None:
        self._mail.execute(
            functools.partial(self.begin_removal, name, None), "pipeline %s removed", name
        )

    def replace(self, config: PipelineConfig, metastore: Metastore) -> None:
        self._mail.execute(
            functools.partial(self.begin_removal, config.name, Replacement(config, metastore)),
            "pipeline %s changed",
            config.name,
        )

    def stop(self) -> None:
        """Raises ``RejectedExecutionError`` once the loop has ended."""
        self._mail.execute(self.begin_stop, "stop requested")

    def checkpoint_requested(self, name: str, checkpoint_id: int) -> None:
        """The control loop saw a request (a max-priority mail)."""
        self._checkpoints.execute(
            functools.partial(self._inject_requested, name, checkpoint_id),
            "checkpoint %d of %s requested",
            checkpoint_id,
            name,
        )

    def barrier_passed(self, name: str, passed: BarrierPassed) -> None:
        """A sink group passed a barrier (its thread).

        Raises:
            AlertException: the loop has ended: the group's thread stops.
        """
        try:
            self._checkpoints.execute(  # urgent: a reading slice ends for it
                functools.partial(self._on_barrier_passed, name, passed),
                "sink group %s of %s passed checkpoint %d",
                passed.group,
                name,
                passed.checkpoint_id,
            )
        except RejectedExecutionError:
            raise AlertException() from None

    def batch_uploaded(self, name: str, checkpoint_id: int, url: str) -> None:
        """A pipeline's upload thread stored the batch of ``checkpoint_id`` at ``url``."""
        try:
            self._mail.execute(
                functools.partial(self._on_uploaded, name, checkpoint_id, url),
                "%s: checkpoint %d's batch uploaded",
                name,
                checkpoint_id,
            )
        except RejectedExecutionError:
            log.warning(
                "%s: checkpoint %d uploaded after the collector stopped", name, checkpoint_id
            )

    @property
    def upload_feedback(self) -> UploadFeedback:
        """Where upload threads report: :meth:`batch_uploaded` and :meth:`upload_failed`."""
        return UploadFeedback(self.batch_uploaded, self.upload_failed)

    def upload_failed(self, name: str, error: BaseException) -> None:
        """A pipeline's upload thread failed for good: the collector stops with the error."""
        self._processor.report_throwable(error)

    def lease_lost(self, name: str) -> None:
        """Another collector took over an expired lease: stop reading at once (a control
        mail, put first)."""
        self._processor.report_throwable(CollectorBusyError(f"lost the collector lease of {name}"))

    # -- mail handlers (mailbox thread) ------------------------------------------------------

    def start_pipeline(
        self, config: PipelineConfig, metastore: Metastore, sinks: Mapping[str, Sink] | None
    ) -> None:
        """A pipeline added while running (or served again from a changed config)."""
        self._processor.check_mailbox_thread("CheckpointDriver.start_pipeline()")
        if self._launcher.launch(
            config, metastore, sinks, self.barrier_passed, self.upload_feedback
        ):
            self._processor.resume_default_action()

    def begin_stop(self) -> None:
        """Seal what has been read, now: barriers at the current read offsets (what is not
        read yet is read by the next run), then end when every pipeline has sealed."""
        self._processor.check_mailbox_thread("CheckpointDriver.begin_stop()")
        self._registry.quiesce()
        for runtime in self._registry.runtimes():
            if runtime.state is PipelineState.READING:
                self._finish(runtime, PipelineState.FINISHING)
            elif runtime.state in (PipelineState.REMOVING, PipelineState.REPLACING):
                self._registry.move(runtime, PipelineState.FINISHING)  # ends with the collector
        if self._registry.all_done():
            self._processor.all_actions_completed()  # nothing left to seal (no pipeline served)
        elif self._stop_deadline is None:
            self._stop_deadline = threading.Timer(STOP_SEAL_SECONDS, self._stop_overdue_mail)
            self._stop_deadline.name = "sluice-stop-deadline"
            self._stop_deadline.daemon = True
            self._stop_deadline.start()
        self._processor.resume_default_action()

    def _stop_overdue_mail(self) -> None:
        """The stop's deadline passed (the timer's thread): mail only."""
        with contextlib.suppress(RejectedExecutionError):  # every pipeline sealed and ended
            self._mail.execute(self._end_unsealed, "the stop's last seals are overdue")

    def _end_unsealed(self) -> None:
        """End the run without the seals still in flight, :data:`STOP_SEAL_SECONDS` after the
        stop: the pipelines that could not seal stop unsealed."""
        self._processor.check_mailbox_thread("CheckpointDriver._end_unsealed()")
        unsealed = [r for r in self._registry.runtimes() if r.state is not PipelineState.DONE]
        if not unsealed:
            return
        log.warning(
            "stopping without sealing %s: the last seal did not pass within %.0f s of the "
            "stop (the sink groups' log says why); what was read since the last seal is read "
            "again by the next run",
            ", ".join(runtime.name for runtime in unsealed),
            STOP_SEAL_SECONDS,
        )
        for runtime in unsealed:
            self._registry.move(runtime, PipelineState.DONE)
        self._processor.all_actions_completed()

    def begin_removal(self, name: str, replacement: Replacement | None) -> None:
        """Seal what the pipeline read and stop serving it (then serve it from
        ``replacement``); in one-shot mode, or once it is finishing, it just ends with the
        collector."""
        self._processor.check_mailbox_thread("CheckpointDriver.begin_removal()")
        runtime = self._registry.get(name)
        if runtime is None:
            if replacement is not None:
                self.start_pipeline(replacement.config, replacement.metastore, None)
            else:
                log.warning("pipeline %s is not served; nothing to remove", name)
            return
        target = PipelineState.REMOVING if replacement is None else PipelineState.REPLACING
        if runtime.state is PipelineState.READING:
            if self._mode is CollectorMode.ONCE:
                target, replacement = PipelineState.FINISHING, None
            self._finish(runtime, target, replacement)  # the rest is read when it is back
        elif runtime.state in (PipelineState.REMOVING, PipelineState.REPLACING):
            self._registry.move(runtime, target, replacement)  # changed again while sealing
        else:
            log.info("pipeline %s is %s: it ends with the collector", name, runtime.state.value)

    def _inject_requested(self, name: str, checkpoint_id: int) -> None:
        """A request the control thread saw: inject it unless it was sealed meanwhile (a
        pipeline that stopped or was replaced seals its own request, which the control thread
        may see and forward before the seal; the replacement must not seal it again)."""
        self._processor.check_mailbox_thread("CheckpointDriver._inject_requested()")
        runtime = self._registry.get(name)
        if runtime is None or runtime.coordinator.knows(checkpoint_id):
            return
        try:
            waiting = checkpoint_id in runtime.metastore.unsealed_for_host(name, runtime.host)
        except MetastoreError as exc:  # cannot tell: seal it (a seal of a sealed one is refused)
            log.warning("checkpoint %d of %s: %s", checkpoint_id, name, exc)
            waiting = True
        if waiting:
            self._push_barrier(runtime, checkpoint_id)

    def _on_barrier_passed(self, name: str, passed: BarrierPassed) -> None:
        self._processor.check_mailbox_thread("CheckpointDriver._on_barrier_passed()")
        runtime = self._registry.get(name)
        if runtime is None:
            return
        recorded = runtime.coordinator.passed(passed, runtime.watcher, runtime.tracking.records)
        if recorded is not None:
            self._recorded(runtime, recorded)

    def _on_uploaded(self, name: str, checkpoint_id: int, url: str) -> None:
        self._processor.check_mailbox_thread("CheckpointDriver._on_uploaded()")
        runtime = self._registry.get(name)
        if runtime is None:
            return
        recorded = runtime.coordinator.uploaded(
            checkpoint_id, url, runtime.watcher, runtime.tracking.records
        )
        self._recorded(runtime, recorded)

    def _recorded(self, runtime: PipelineRuntime, recorded: SealedCheckpoint) -> None:
        self._results.record_sealed(recorded)
        runtime.last_snapshot = time.monotonic()
        runtime.sink_states.flush()
        runtime.record_progress()
        self._end_when_sealed(runtime)

    # -- mailbox thread ----------------------------------------------------------------------

    def serve(self, runtime: PipelineRuntime) -> None:
        """Serve a pipeline whose lease is held (at the start of the run)."""
        self._launcher.serve(runtime, self.barrier_passed, self.upload_feedback)

    def finish(self, runtime: PipelineRuntime) -> None:
        """A pipeline caught up for good (one-shot mode): seal it, then it is DONE."""
        self._finish(runtime, PipelineState.FINISHING)

    def _finish(
        self,
        runtime: PipelineRuntime,
        target: PipelineState,
        replacement: Replacement | None = None,
    ) -> None:
        """Stop reading: barriers for every pending request (or a new one)."""
        self._registry.move(runtime, target, replacement)
        pending = runtime.metastore.unsealed_for_host(runtime.name, runtime.host)
        if not pending:
            pending = [runtime.metastore.request_checkpoint(runtime.name).checkpoint_id]
        for checkpoint_id in pending:
            if not runtime.coordinator.knows(checkpoint_id):
                self._push_barrier(runtime, checkpoint_id)
        self._end_when_sealed(runtime)

    def _push_barrier(self, runtime: PipelineRuntime, checkpoint_id: int) -> None:
        barrier = runtime.coordinator.barrier(checkpoint_id, runtime.watcher)
        self._queues.enter(runtime.name, barrier, urgent=True)

    def _end_when_sealed(self, runtime: PipelineRuntime) -> None:
        if not runtime.state.sealing or runtime.coordinator.in_flight:
            return
        final = runtime.state.once_sealed()
        if final is PipelineState.DONE:
            self._registry.move(runtime, final)
            if self._registry.all_done():
                if self._stop_deadline is not None:
                    self._stop_deadline.cancel()
                self._processor.all_actions_completed()
            return
        replacement = self._registry.replacement(runtime.name)
        self._launcher.retire(runtime, final)
        if replacement is not None:
            self.start_pipeline(replacement.config, replacement.metastore, None)
