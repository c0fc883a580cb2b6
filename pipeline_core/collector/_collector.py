"""The collector: one mailbox thread reading every pipeline's files, shared stage queues, and
sink groups on one ring per pipeline.

::

    files of every pipeline --(one reader: the mailbox's default action, round robin)-->
        process level (one watermark queue per pipeline)
        --(process stage thread)--> BlockedQueue --> send level (one queue per pipeline)
        --(send stage thread; skips pipelines whose ring is full or that are over their rate)-->
        the pipeline's RingBuffer --> one BatchEventProcessor per sink group
        --> SinkRunner --> SinkProcessor (default | failover | load_balance) --> sinks
            (the handoff sink seals staging/<pipeline>/<N>/<host>/ at each barrier)
    mails to the mailbox thread: checkpoint requests (MAX_PRIORITY), barriers passed, acks,
    queue feedback, file events, timeout sweeps, pipelines added or removed, stop

Fairness and isolation (Logtail): each round of the reader gives every pipeline one turn (one
chunk of one of its files), higher priorities first; a round interrupted by the end of the
25 ms slice resumes where it stopped. A pipeline whose process queue is full, or whose acker
has ``max_pending_trees`` in flight, is skipped without blocking the others; the process level
skips a pipeline whose send queue is full; the send level skips a pipeline whose ring is full
(its sinks are slow) or that is over its send rate. Discovery and rotation handling run for
every pipeline whatever its state, so a rotation during a stall loses nothing.

The collector by role, each in its module:

==========================  ================  ===============================================
part                        thread            owns
==========================  ================  ===============================================
``PipelineRegistry``        mailbox           the pipelines served and their lifecycle state
``ReadScheduler``           mailbox           reading: rounds, turns, suspension, housekeeping
``CheckpointDriver``        mailbox           barriers, seals, finishing, stop and removal
``PipelineLauncher``        mailbox           starting and retiring a pipeline's threads
``Feedback``                mailbox (mail     acks, queue feedback, sweeps, file events
                            from others)
``ControlLoop``             its own           lease renewal, request polling, the sweep timer
``RunResults``              mailbox           what the run sealed, each pipeline's result
==========================  ================  ===============================================

Threading model: every piece of pipeline state (the registry, tracked files, offsets,
barriers, acker trees, the coordinators) is changed only on the mailbox thread, the thread
that calls :meth:`Collector.run_once` or :meth:`Collector.run`; each mail handler checks it
first. Stage threads, sink-group threads, the control thread and the file events' thread talk
to it only by mail; metrics read plain attributes from any thread, without locks, and the
probes (:meth:`Collector.liveness`, :meth:`Collector.readiness`) read values their owners
replace whole: the run's phase, the control loop's :class:`ControlStatus`, the last sweep.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Mapping
from enum import Enum

from pipeline_core.collector import _readiness
from pipeline_core.collector._checkpoint_driver import CheckpointDriver
from pipeline_core.collector._control_loop import ControlLoop, WatchList
from pipeline_core.collector._feedback import Feedback
from pipeline_core.collector._launcher import PipelineLauncher, lease_holder
from pipeline_core.collector._lifecycle import CollectorMode, PipelineState
from pipeline_core.collector._metrics import PipelineMetrics, pipeline_metrics
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._readiness import OK, ProbeResult
from pipeline_core.collector._registry import PipelineRegistry, reading_order
from pipeline_core.collector._results import CollectorResult, RunResults
from pipeline_core.collector._scheduler import ReadScheduler
from pipeline_core.collector._stages import ProcessStage, RingPublisher, StageQueues, StageThread
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CollectorBusyError
from pipeline_core.mailbox import MailboxDefaultAction, MailboxProcessor, RejectedExecutionError
from pipeline_core.metastore import Metastore
from pipeline_core.queues import QueueStats
from pipeline_core.sinks import Sink


class Collector:
    """Collects the files of one or more pipelines on this host into sealed handoff batches.

    ``Collector(config, metastore)`` serves one pipeline; :meth:`add_pipeline` adds more,
    before the run or (in continuous mode) while it runs; :meth:`remove_pipeline` seals a
    pipeline and stops it. Process-wide tuning (read slice, stage queue sizes are per
    pipeline) comes from the first pipeline's ``collector`` section.

    Lifecycle: create, call :meth:`run_once` or :meth:`run` once (on the thread that will be
    the mailbox thread), done. :meth:`stop` may be called from any thread. Pipelines added
    before the run wait here; the run serves them from its mailbox thread.
    """

    def __init__(
        self,
        config: PipelineConfig | None = None,
        metastore: Metastore | None = None,
        *,
        sinks: Mapping[str, Sink] | None = None,
    ) -> None:
        """``sinks``: sinks made in code, each used instead of the config's sink of its name
        (custom destinations; test doubles)."""
        self._registry = PipelineRegistry()
        self._queues = StageQueues(self._registry.get)
        self._holder_nonce = uuid.uuid4().hex[:8]  # tells this collector from others in the process
        self._slice_seconds = 0.025
        # Hands the pipelines added before the run over to it: the only moment two threads
        # may both touch them, before the mailbox exists.
        self._handover = threading.Lock()
        self._pending: list[PipelineRuntime] = []
        self._run_parts: _Run | None = None
        self._stop_requested = threading.Event()
        if config is not None:
            if metastore is None:
                raise ValueError("a pipeline config needs its metastore")
            self.add_pipeline(config, metastore, sinks=sinks)

    # -- public ------------------------------------------------------------------------------

    def add_pipeline(
        self,
        config: PipelineConfig,
        metastore: Metastore,
        *,
        sinks: Mapping[str, Sink] | None = None,
    ) -> None:
        """Serve one more pipeline. Before the run: at once; during a run: by mail (any
        thread), and a pipeline whose lease another collector holds is skipped with an error
        in the log."""
        with self._handover:
            run = self._run_parts
            if run is None:
                if any(runtime.name == config.name for runtime in self._pending):
                    raise ValueError(f"pipeline {config.name!r} is served already")
                if not self._pending:
                    self._slice_seconds = config.collector.read_slice_ms / 1000
                holder = lease_holder(config, self._holder_nonce)
                self._pending.append(PipelineRuntime(config, metastore, holder, sinks))
                self._queues.add(config.name, config.collector)
                return
        run.driver.add(config, metastore, sinks)

    def remove_pipeline(self, name: str) -> None:
        """Seal what the pipeline read and stop serving it (by mail; any thread)."""
        self._running().driver.remove(name)

    def replace_pipeline(self, config: PipelineConfig, metastore: Metastore) -> None:
        """Seal what the pipeline of ``config.name`` read, stop it, and serve it again from
        ``config`` (a changed config), resuming from its sealed offsets; adds it if it is not
        served (by mail; any thread)."""
        self._running().driver.replace(config, metastore)

    @property
    def pipelines(self) -> list[str]:
        if self._run_parts is None:
            return [runtime.name for runtime in reading_order(list(self._pending))]
        return self._registry.names()

    def run_once(self) -> CollectorResult:
        """Read every file to its current end, seal every requested checkpoint (requesting one
        if none is pending), and return what was sealed."""
        return self._run(CollectorMode.ONCE)

    def run(self) -> CollectorResult:
        """Tail the files until :meth:`stop`; seal requested checkpoints as they come."""
        return self._run(CollectorMode.CONTINUOUS)

    def stop(self) -> None:
        """Seal what has been read and stop, within seconds whatever the backlog: barriers go
        in at the current read offsets and what is not read yet waits for the next run (any
        thread; not from a signal handler, which may interrupt the mailbox thread while it
        holds the mailbox's lock)."""
        self._stop_requested.set()
        run = self._run_parts
        if run is not None:
            with contextlib.suppress(RejectedExecutionError):  # the loop has ended already
                run.driver.stop()

    def stage_stats(self, pipeline: str | None = None) -> dict[str, QueueStats]:
        """A pipeline's stage queues (``process``, ``send``) now: sizes against watermarks and
        counters since the start (any thread). ``pipeline`` may be omitted with one
        pipeline."""
        return self._queues.stats(pipeline if pipeline is not None else self.pipelines[0])

    def metrics(self) -> list[PipelineMetrics]:
        """Per-pipeline metrics now (read from other threads without locks: counters may be a
        moment apart from each other, never torn)."""
        served = list(self._pending) + list(self._registry.runtimes())
        return [pipeline_metrics(runtime, self._queues.stats(runtime.name)) for runtime in served]

    def liveness(self) -> ProbeResult:
        """Ok while the collector's loops run, starting and stopping included: the mailbox
        thread handles the control loop's sweeps, the control and stage threads are alive.
        Not ok once the run ended (any thread)."""
        run = self._run_parts
        if run is None:
            return ProbeResult(True, "starting")
        return run.liveness(time.monotonic())

    def readiness(self) -> ProbeResult:
        """Ok while it collects: live, every served pipeline's lease held, each pipeline's
        metastore reached recently (see :class:`ControlStatus`); not ok while it starts or
        stops (any thread)."""
        stopping = self._stop_requested.is_set()
        run = self._run_parts
        if run is None:
            return ProbeResult(False, "stopping" if stopping else "starting: no lease taken yet")
        if stopping and run.phase is _Phase.RUNNING:
            return ProbeResult(False, "stopping")
        return run.readiness(time.monotonic())

    # -- the run -----------------------------------------------------------------------------

    def _run(self, mode: CollectorMode) -> CollectorResult:
        started = time.monotonic()
        with self._handover:
            if not self._pending:
                raise ValueError("the collector has no pipeline")
            _acquire_leases(self._pending)
            pending, self._pending = self._pending, []
            run = _Run(self._registry, self._queues, mode, self._slice_seconds, self._holder_nonce)
            for runtime in pending:
                run.driver.serve(runtime)
            self._run_parts = run
        if self._stop_requested.is_set():
            run.driver.stop()
        return run.execute(started)

    def _running(self) -> _Run:
        run = self._run_parts
        assert run is not None, "the collector is not running"
        return run


def _acquire_leases(runtimes: list[PipelineRuntime]) -> None:
    """Take every pipeline's lease, or none.

    Raises:
        CollectorBusyError: another collector holds one of them.
    """
    acquired: list[PipelineRuntime] = []
    for runtime in runtimes:
        if not runtime.acquire_lease():
            for taken in acquired:
                taken.metastore.release_lease(taken.name, taken.host, taken.holder)
            holder = runtime.metastore.lease_holder(runtime.name, runtime.host)
            raise CollectorBusyError(
                f"pipeline {runtime.name!r} on {runtime.host} is being collected by {holder}"
            )
        acquired.append(runtime)


class _Phase(Enum):
    """Where a run is (written by the mailbox thread, read by the probes)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class _Run:
    """One run's parts, wired on the thread that becomes its mailbox thread.

    The processor comes first (every part mails through it); its default action is
    :meth:`_read`, which reads through the scheduler, made last since it finishes pipelines
    through the driver.
    """

    def __init__(
        self,
        registry: PipelineRegistry,
        queues: StageQueues,
        mode: CollectorMode,
        slice_seconds: float,
        holder_nonce: str,
    ) -> None:
        self.processor = MailboxProcessor(self._read)
        mailbox = self.processor.mailbox
        registry.bind(mailbox)
        self.registry = registry
        self.results = RunResults(mailbox)
        self.feedback = Feedback(self.processor, registry, mode)
        self.launcher = PipelineLauncher(
            self.processor, registry, queues, self.feedback, self.results, holder_nonce
        )
        self.driver = CheckpointDriver(
            self.processor, registry, queues, self.launcher, self.results, mode
        )
        self.scheduler = ReadScheduler(
            mailbox,
            registry,
            queues,
            self.driver,
            self.feedback.file_events,
            mode,
            slice_seconds=slice_seconds,
        )
        self.publisher = RingPublisher(registry.runtime, self.feedback.anchored)
        report = self.processor.report_throwable
        queues.process.add_feedback_listener(self.feedback.queue_writable)
        self.stages = [
            StageThread("sluice-process", queues.process, ProcessStage(queues.to_send), report),
            StageThread("sluice-send", queues.send, queues.sending_through(self.publisher), report),
        ]
        self.control = ControlLoop(
            mode,
            sweep=self.feedback.sweep,
            request_checkpoint=self.driver.checkpoint_requested,
            lease_lost=self.driver.lease_lost,
        )
        registry.subscribe(self._registry_changed)
        self.phase = _Phase.STARTING

    def execute(self, started: float) -> CollectorResult:
        """Run the mailbox loop until every pipeline is done (or it fails); stop every
        thread."""
        for stage in self.stages:
            stage.start()
        self.control.start()
        self.phase = _Phase.RUNNING
        try:
            self.processor.run_mailbox_loop()
        finally:
            self.phase = _Phase.STOPPING
            try:
                self._shut_down()
            finally:
                self.phase = _Phase.STOPPED
        return self.results.collector_result(time.monotonic() - started)

    def liveness(self, now: float) -> ProbeResult:
        """See :meth:`Collector.liveness` (any thread)."""
        phase = self.phase
        if phase is _Phase.STOPPED:
            return ProbeResult(False, "stopped")
        if phase is not _Phase.RUNNING:
            return ProbeResult(True, phase.value)
        threads = [(stage.name, stage.alive) for stage in self.stages]
        threads.append(("sluice-control", self.control.alive))
        ended = [name for name, alive in threads if not alive]
        if ended:
            return ProbeResult(False, f"thread {', '.join(ended)} ended")
        silent = now - self.feedback.last_sweep
        if silent > _readiness.MAILBOX_STALL_SECONDS:
            return ProbeResult(False, f"the mailbox thread has not turned for {silent:.0f} s")
        return OK

    def readiness(self, now: float) -> ProbeResult:
        """See :meth:`Collector.readiness` (any thread)."""
        control = self.control.status.readiness(now, _readiness.METASTORE_GRACE_SECONDS)
        phase = self.phase
        if phase is not _Phase.RUNNING:  # a lost lease ends the run: say so
            reason = phase.value if control.ok else f"{phase.value}: {control.reason}"
            return ProbeResult(False, reason)
        live = self.liveness(now)
        return live if not live.ok else control

    def _read(self, controller: MailboxDefaultAction.Controller) -> None:
        self.scheduler.run_default_action(controller)

    def _registry_changed(self, served: tuple[PipelineRuntime, ...]) -> None:
        """The control loop gets what to watch by mail: a snapshot taken here, on the mailbox
        thread."""
        self.control.watch(WatchList.of(served))

    def _shut_down(self) -> None:
        self.feedback.close()
        self.control.stop()
        self.publisher.stopping.set()
        for stage in self.stages:
            stage.stop()
        # The control thread renews leases by taking them: it must be gone before a pipeline
        # releases its lease, or a renewal racing the release takes it again for this ended run.
        self.control.join(timeout=30)
        for runtime in self.registry.runtimes():
            self.results.record_finished(runtime)
            runtime.close()
            if not runtime.state.final:
                self.registry.move(runtime, PipelineState.DONE)
        self.processor.close()
