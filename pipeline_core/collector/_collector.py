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
    timeout sweeps, pipelines added or removed, stop

Fairness and isolation (Logtail): each round of the reader gives every pipeline one turn (one
chunk of one of its files), higher priorities first; a round interrupted by the end of the
25 ms slice resumes where it stopped. A pipeline whose process queue is full, or whose acker
has ``max_pending_trees`` in flight, is skipped without blocking the others; the process level
skips a pipeline whose send queue is full; the send level skips a pipeline whose ring is full
(its sinks are slow) or that is over its send rate. Discovery and rotation handling run for
every pipeline whatever its state, so a rotation during a stall loses nothing.

Threading model: every piece of pipeline state (tracked files, offsets, barriers, acker trees,
the coordinators) is touched only on the mailbox thread, the thread that calls
:meth:`Collector.run_once` or :meth:`Collector.run`. Stage threads, sink-group threads, the
control thread (leases, checkpoint requests, sweeps) and, while tailing, the file events'
thread (which pipelines' files changed: see ``_file_event_router``) talk to it only by mail.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from pipeline_core.collector._checkpoints import SealedCheckpoint
from pipeline_core.collector._events import PipelineEvent
from pipeline_core.collector._file_event_router import FileEventRouter
from pipeline_core.collector._metrics import PipelineMetrics, pipeline_metrics
from pipeline_core.collector._pipeline import PipelineRuntime, PipelineState
from pipeline_core.collector._sink_group import BarrierPassed
from pipeline_core.collector._stages import ProcessStage, RingPublisher, StageItem, StageThread
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CollectorBusyError, MetastoreError
from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MailboxDefaultAction,
    MailboxExecutor,
    MailboxProcessor,
    RejectedExecutionError,
)
from pipeline_core.metastore import LeaseHolder, Metastore, RequestProbe
from pipeline_core.queues import BlockedQueue, PushResult, QueueLevel, QueueStats
from pipeline_core.ring import AlertException, ExceptionHandler, RewindableException
from pipeline_core.sinks import Sink
from pipeline_core.source import Chunk

log = logging.getLogger(__name__)

IDLE_POLL_SECONDS = 0.2
"""How long a caught-up collector waits before reading again, unless file events wake it
(then it waits up to ``collector.file_events_fallback_s``)."""

SETTLING_SCAN_SECONDS = 0.1
"""How soon a pipeline whose last scan saw a possible copy off its paths scans again (the copy
is adopted once it kept its size from one scan to the next)."""

CONTROL_POLL_SECONDS = 1.0
"""How often the control thread queries the metastore (leases, checkpoint requests)."""

REQUEST_PROBE_SECONDS = 0.02
"""How often it asks the metastores' request probes whether a checkpoint was requested."""


class CollectorMode(Enum):
    ONCE = "once"
    """Read every file to its current end, seal the requested checkpoints, stop."""
    CONTINUOUS = "continuous"
    """Tail until stopped, sealing each checkpoint requested meanwhile; seal on stop."""


class _Turn(Enum):
    READ = "read"
    """A chunk was read and queued."""
    EMPTY = "empty"
    """The file in turn had nothing new; others may."""
    CAUGHT_UP = "caught_up"
    """A whole round of the pipeline's files had nothing new."""
    BLOCKED = "blocked"
    """The pipeline's process queue is full or its acker is at its limit."""


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
class PipelineResult:
    sealed: tuple[SealedCheckpoint, ...]
    files: int
    lines: int
    bytes: int
    acker: AckerStats


@dataclass(frozen=True)
class CollectorResult:
    """What a run did, summed over its pipelines (``pipelines`` has each one)."""

    sealed: tuple[SealedCheckpoint, ...]
    files: int
    lines: int
    bytes: int
    seconds: float
    acker: AckerStats | None = None
    pipelines: Mapping[str, PipelineResult] | None = None


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


class Collector:
    """Collects the files of one or more pipelines on this host into sealed handoff batches.

    ``Collector(config, metastore)`` serves one pipeline; :meth:`add_pipeline` adds more,
    before the run or (in continuous mode) while it runs; :meth:`remove_pipeline` seals a
    pipeline and stops it. Process-wide tuning (read slice, stage queue sizes are per
    pipeline) comes from the first pipeline's ``collector`` section.

    Lifecycle: create, call :meth:`run_once` or :meth:`run` once (on the thread that will be
    the mailbox thread), done. :meth:`stop` may be called from any thread.
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
        self._pipelines: dict[str, PipelineRuntime] = {}
        self._order: list[str] = []  # by priority, highest first; the reader's round order
        self._cursor = 0
        self._holder_nonce = uuid.uuid4().hex[:8]  # tells this collector from others in the process
        self._send_level: QueueLevel[StageItem] = QueueLevel("send", ready=self._ready_to_send)
        self._process_level: QueueLevel[StageItem] = QueueLevel(
            "process", downstream=self._send_level
        )
        self._to_send = BlockedQueue(self._send_level)
        self._publisher = RingPublisher(self._pipelines.__getitem__, self._anchored_from_stage)
        self._slice_seconds = 0.025
        self._discovery_interval = 1.0
        self._acker_tick = CONTROL_POLL_SECONDS
        # Made on the thread that runs the loop (the mailbox records its owner thread).
        self._processor: MailboxProcessor | None = None
        self._mail: MailboxExecutor | None = None
        self._checkpoints: MailboxExecutor | None = None
        self._suspension: MailboxDefaultAction.Suspension | None = None
        self._file_events: FileEventRouter | None = None  # tailing only
        self._stop_requested = threading.Event()
        self._control_stop = threading.Event()
        self._mode = CollectorMode.ONCE
        self._stopping = False
        self._running = False
        self._sealed: list[SealedCheckpoint] = []
        self._finished: dict[str, PipelineResult] = {}
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
        if self._running:
            self._main_mail().execute(
                functools.partial(self._start_pipeline, config, metastore, sinks),
                "pipeline %s added",
                config.name,
            )
            return
        if config.name in self._pipelines:
            raise ValueError(f"pipeline {config.name!r} is served already")
        if not self._pipelines:
            tuning = config.collector
            self._slice_seconds = tuning.read_slice_ms / 1000
            self._discovery_interval = tuning.discovery_interval_s
        self._register(PipelineRuntime(config, metastore, self._holder(config), sinks))

    def remove_pipeline(self, name: str) -> None:
        """Seal what the pipeline read and stop serving it (by mail; any thread)."""
        self._main_mail().execute(
            functools.partial(self._begin_removal, name, None), "pipeline %s removed", name
        )

    def replace_pipeline(self, config: PipelineConfig, metastore: Metastore) -> None:
        """Seal what the pipeline of ``config.name`` read, stop it, and serve it again from
        ``config`` (a changed config), resuming from its sealed offsets; adds it if it is not
        served (by mail; any thread)."""
        self._main_mail().execute(
            functools.partial(self._begin_removal, config.name, (config, metastore)),
            "pipeline %s changed",
            config.name,
        )

    @property
    def pipelines(self) -> list[str]:
        return list(self._order)

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
        processor = self._processor
        if processor is not None:
            with contextlib.suppress(RejectedExecutionError):  # the loop has ended already
                processor.get_main_mailbox_executor().execute(self._begin_stop, "stop requested")

    def stage_stats(self, pipeline: str | None = None) -> dict[str, QueueStats]:
        """A pipeline's stage queues (``process``, ``send``) now: sizes against watermarks and
        counters since the start (any thread). ``pipeline`` may be omitted with one pipeline."""
        key = pipeline if pipeline is not None else self._order[0]
        return {level.name: level.stats(key) for level in (self._process_level, self._send_level)}

    def metrics(self) -> list[PipelineMetrics]:
        """Per-pipeline metrics now (read from other threads without locks: counters may be a
        moment apart from each other, never torn)."""
        return [
            pipeline_metrics(runtime, self.stage_stats(name))
            for name, runtime in list(self._pipelines.items())
        ]

    # -- lifecycle ---------------------------------------------------------------------------

    def _run(self, mode: CollectorMode) -> CollectorResult:
        if not self._pipelines:
            raise ValueError("the collector has no pipeline")
        self._mode = mode
        started = time.monotonic()
        acquired: list[PipelineRuntime] = []
        for runtime in self._pipelines.values():
            if not runtime.acquire_lease():
                for taken in acquired:
                    taken.metastore.release_lease(taken.name, taken.host, taken.holder)
                holder = runtime.metastore.lease_holder(runtime.name, runtime.host)
                raise CollectorBusyError(
                    f"pipeline {runtime.name!r} on {runtime.host} is being collected by {holder}"
                )
            acquired.append(runtime)
        self._processor = MailboxProcessor(self._default_action)
        self._checkpoints = self._processor.get_mailbox_executor(MAX_PRIORITY)
        self._mail = self._processor.get_main_mailbox_executor()
        if mode is CollectorMode.CONTINUOUS:
            self._file_events = FileEventRouter(self._file_events_arrived)
        self._running = True
        report = self._processor.report_throwable
        self._process_level.add_feedback_listener(self._on_process_queue_writable)
        stages = [
            StageThread("sluice-process", self._process_level, ProcessStage(self._to_send), report),
            StageThread("sluice-send", self._send_level, self._publisher, report),
        ]
        for runtime in self._pipelines.values():
            self._start_runtime(runtime)
        if self._stop_requested.is_set():
            self._mail.execute(self._begin_stop, "stop requested before the start")
        control = threading.Thread(target=self._control_loop, name="sluice-control", daemon=True)
        for stage in stages:
            stage.start()
        control.start()
        try:
            self._processor.run_mailbox_loop()
        finally:
            self._running = False
            if self._file_events is not None:
                self._file_events.close()
            self._control_stop.set()
            self._publisher.stopping.set()
            for stage in stages:
                stage.stop()
            for runtime in list(self._pipelines.values()):
                self._finished[runtime.name] = self._result_of(runtime)
                runtime.close()
            control.join(timeout=30)
            self._processor.close()
        results = dict(self._finished)
        return CollectorResult(
            sealed=tuple(self._sealed),
            files=sum(r.files for r in results.values()),
            lines=sum(r.lines for r in results.values()),
            bytes=sum(r.bytes for r in results.values()),
            seconds=time.monotonic() - started,
            acker=next(iter(results.values())).acker if len(results) == 1 else None,
            pipelines=results,
        )

    def _register(self, runtime: PipelineRuntime) -> None:
        tuning = runtime.config.collector
        self._process_level.add_queue(runtime.name, tuning.process_queue_size)
        self._send_level.add_queue(runtime.name, tuning.send_queue_size)
        self._pipelines[runtime.name] = runtime
        self._order = sorted(
            self._pipelines, key=lambda name: (-self._pipelines[name].priority, name)
        )
        self._acker_tick = min(
            CONTROL_POLL_SECONDS, *(p.config.collector.acker_timeout_s / 3 for p in self._all())
        )

    def _start_runtime(self, runtime: PipelineRuntime) -> None:
        """Start a registered pipeline's sink groups and queue its pending re-deliveries."""
        report = self._loop().report_throwable
        runtime.start_consumers(
            lambda: _ReportingExceptionHandler(report),
            functools.partial(self._barrier_passed_from_sink, runtime.name),
            functools.partial(self._delivered_from_sink, runtime.name),
            self._send_level.wake,  # a slot is free: the send stage may publish
        )
        runtime.tracking.restore(runtime.metastore.acker_trees(runtime.name, runtime.host))

    def _start_pipeline(
        self, config: PipelineConfig, metastore: Metastore, sinks: Mapping[str, Sink] | None
    ) -> None:
        """Mail: a pipeline added while running."""
        if config.name in self._pipelines:
            log.error("pipeline %s is served already; not added again", config.name)
            return
        runtime = PipelineRuntime(config, metastore, self._holder(config), sinks)
        if not runtime.acquire_lease():
            holder_now = metastore.lease_holder(config.name, runtime.host)
            log.error("pipeline %s is being collected by %s: not added", config.name, holder_now)
            runtime.watcher.close()
            return
        self._register(runtime)
        self._start_runtime(runtime)
        log.info("serving pipeline %s", config.name)
        self._wake()

    def _holder(self, config: PipelineConfig) -> str:
        """The name this collector holds the pipeline's lease under: one its machine can prove
        dead after a crash, so a restarted collector takes the lease over at once."""
        return LeaseHolder.of_this_process(config.collector.host, self._holder_nonce).format()

    def _unregister(self, runtime: PipelineRuntime) -> None:
        """Mail: a pipeline removed or finished while others go on."""
        self._finished[runtime.name] = self._result_of(runtime)
        if self._file_events is not None:
            self._file_events.forget(runtime.name)
        runtime.close()
        del self._pipelines[runtime.name]
        self._order.remove(runtime.name)
        self._process_level.remove_queue(runtime.name)
        self._send_level.remove_queue(runtime.name)
        log.info("stopped serving pipeline %s", runtime.name)

    def _control_loop(self) -> None:
        """Renews the leases; in continuous mode, forwards new checkpoint requests as mail;
        sends the acker's timeout sweep as mail (reading may be suspended meanwhile).

        The metastore is queried once a second (``CONTROL_POLL_SECONDS``); in between, every
        ``REQUEST_PROBE_SECONDS``, each metastore's :class:`RequestProbe` tells cheaply whether
        a request may have arrived, and only then is it queried at once.
        """
        now = time.monotonic()
        next_sweep = now + self._acker_tick
        next_poll = now + CONTROL_POLL_SECONDS
        renewals: dict[str, float] = {}
        forwarded: set[tuple[str, int]] = set()
        probes: dict[int, RequestProbe] = {}
        try:
            while not self._control_stop.wait(REQUEST_PROBE_SECONDS):
                now = time.monotonic()
                if now >= next_sweep:
                    next_sweep = now + self._acker_tick
                    with contextlib.suppress(RejectedExecutionError):
                        self._main_mail().execute(self._sweep, "acker timeout sweep")
                polling = now >= next_poll
                if polling:
                    next_poll = now + CONTROL_POLL_SECONDS
                serving = [p for p in self._pipelines.values() if p.state is not PipelineState.DONE]
                probed = self._probe_requests(serving, probes) if not polling else set()
                for runtime in serving:
                    try:
                        if polling:
                            self._renew_lease(runtime, renewals)
                        if polling or id(runtime.metastore) in probed:
                            self._forward_requests(runtime, forwarded)
                    except Exception as exc:  # the metastore may be briefly unreachable
                        log.warning("control loop, pipeline %s: %s", runtime.name, exc)
        finally:
            for probe in probes.values():
                probe.close()

    def _probe_requests(
        self, serving: list[PipelineRuntime], probes: dict[int, RequestProbe]
    ) -> set[int]:
        """The metastores (by ``id``) whose probe says a request may have arrived."""
        if self._mode is not CollectorMode.CONTINUOUS:
            return set()
        changed: set[int] = set()
        for metastore in {id(p.metastore): p.metastore for p in serving}.values():
            probe = probes.get(id(metastore))
            if probe is None:
                probe = probes[id(metastore)] = metastore.request_probe()
            if probe.changed():
                changed.add(id(metastore))
        return changed

    def _renew_lease(self, runtime: PipelineRuntime, renewals: dict[str, float]) -> None:
        lease = runtime.config.collector.lease_seconds
        renew_every = max(0.5, lease / 3)
        now = time.monotonic()
        if now >= renewals.setdefault(runtime.name, now + renew_every):
            if not runtime.acquire_lease():
                # Another collector took over an expired lease: stop reading at once.
                self._loop().report_throwable(
                    CollectorBusyError(f"lost the collector lease of {runtime.name}")
                )
                return
            renewals[runtime.name] = time.monotonic() + renew_every

    def _forward_requests(self, runtime: PipelineRuntime, forwarded: set[tuple[str, int]]) -> None:
        if self._mode is not CollectorMode.CONTINUOUS:
            return
        assert self._checkpoints is not None
        for checkpoint_id in runtime.metastore.unsealed_for_host(runtime.name, runtime.host):
            if (runtime.name, checkpoint_id) not in forwarded:
                forwarded.add((runtime.name, checkpoint_id))
                self._checkpoints.execute(
                    functools.partial(self._inject_requested, runtime.name, checkpoint_id),
                    "checkpoint %d of %s requested",
                    checkpoint_id,
                    runtime.name,
                )

    # -- the default action: reading ---------------------------------------------------------

    def _default_action(self, controller: MailboxDefaultAction.Controller) -> None:
        now = time.monotonic()
        reading = [self._pipelines[name] for name in self._order]
        reading = [p for p in reading if p.state is PipelineState.READING]
        if not reading:
            self._suspend(controller, None)  # the last barriers are in flight
            return
        for runtime in reading:
            self._housekeeping(runtime, now)
        deadline = now + self._slice_seconds
        caught_up: set[str] = set()
        blocked: set[str] = set()
        while True:
            # A round: one turn per pipeline. Rounds go on while some pipeline may still have
            # something to read (it read a chunk, or the file in turn was empty but others of
            # its files may not be); they stop when every pipeline is caught up or blocked.
            going_on = False
            for _ in range(len(reading)):
                runtime = reading[self._cursor % len(reading)]
                self._cursor = (self._cursor + 1) % len(reading)
                turn = self._serve(runtime)
                runtime.mark_blocked(turn is _Turn.BLOCKED, now)
                if turn is _Turn.READ:
                    going_on = True
                    runtime.idle_confirmed = False
                    caught_up.discard(runtime.name)
                    blocked.discard(runtime.name)
                elif turn is _Turn.EMPTY:
                    going_on = True
                elif turn is _Turn.CAUGHT_UP:
                    caught_up.add(runtime.name)
                else:
                    blocked.add(runtime.name)
                if time.monotonic() >= deadline:
                    return
            if not going_on:
                break
        confirming = False
        for runtime in reading:
            if runtime.name not in caught_up:
                continue
            if self._mode is CollectorMode.ONCE:
                if not runtime.idle_confirmed or runtime.watcher.settling:
                    # Look once more for files that appeared while reading, then finish.
                    runtime.watcher.scan()
                    runtime.last_scan = time.monotonic()
                    runtime.idle_confirmed = True
                    confirming = True
                else:
                    self._finish(runtime)
        if confirming:
            return
        if blocked and len(blocked) + len(caught_up) >= len(reading) and not caught_up:
            self._suspend(controller, IDLE_POLL_SECONDS)  # woken by feedback or acks
            if any(self._servable(self._pipelines[name]) for name in blocked):
                self._wake()  # the feedback came before the suspension: do not wait for it
            return
        if any(p.state is PipelineState.READING for p in self._all()):
            events = self._file_events
            wait = (
                IDLE_POLL_SECONDS
                if events is None
                else events.idle_wait(reading, time.monotonic(), IDLE_POLL_SECONDS)
            )
            if any(runtime.watcher.settling for runtime in reading):
                wait = min(wait, SETTLING_SCAN_SECONDS)
            self._suspend(controller, wait)  # or until file events wake it

    def _housekeeping(self, runtime: PipelineRuntime, now: float) -> None:
        """Discovery, acker sweeps and snapshots: for every pipeline, blocked or not."""
        events = self._file_events
        since_scan = now - runtime.last_scan
        if (
            since_scan >= runtime.config.collector.discovery_interval_s
            or (runtime.watcher.settling and since_scan >= SETTLING_SCAN_SECONDS)
            or (events is not None and events.scan_due(runtime, now))
        ):
            runtime.watcher.scan()
            runtime.last_scan = now
            if events is not None:
                events.follow(runtime)
        runtime.tracking.sweep_if_due()
        if now - runtime.last_snapshot >= runtime.config.collector.acker_snapshot_s:
            runtime.save_in_flight()

    def _serve(self, runtime: PipelineRuntime) -> _Turn:
        if not self._push_replays(runtime):
            return _Turn.BLOCKED
        if not self._process_level.is_writable(runtime.name):
            return _Turn.BLOCKED
        if not runtime.tracking.can_admit():
            return _Turn.BLOCKED
        grace = (
            0.0 if self._mode is CollectorMode.ONCE else runtime.config.collector.rotated_grace_s
        )
        result = runtime.reader.read_turn(
            functools.partial(self._publish_chunk, runtime), rotated_grace=grace
        )
        if result.chunk is not None:
            runtime.lines += result.chunk.lines
            runtime.bytes += len(result.chunk.data)
            return _Turn.READ
        if result.blocked:
            return _Turn.BLOCKED
        return _Turn.CAUGHT_UP if result.caught_up else _Turn.EMPTY

    def _servable(self, runtime: PipelineRuntime) -> bool:
        """Whether nothing holds the pipeline's reading back now (queue, acker)."""
        return self._process_level.is_writable(runtime.name) and self._admits(runtime)

    def _publish_chunk(self, runtime: PipelineRuntime, chunk: Chunk) -> bool:
        if not runtime.tracking.can_admit():
            return False
        chunk = runtime.tracking.stamp(chunk)
        if self._process_level.push(runtime.name, chunk) is not PushResult.ACCEPTED:
            return False
        runtime.tracking.started(chunk)
        return True

    def _push_replays(self, runtime: PipelineRuntime) -> bool:
        """Queue the ranges to re-deliver, before any new reading; False while the process
        queue is full."""
        replays = runtime.tracking.replays
        while replays:
            chunk = runtime.tracking.stamp(replays[0])
            if self._process_level.push(runtime.name, chunk) is not PushResult.ACCEPTED:
                return False
            replays.popleft()
            runtime.tracking.started(chunk)
        return True

    def _suspend(self, controller: MailboxDefaultAction.Controller, poll: float | None) -> None:
        """Stop reading until woken: by a queue's feedback, acks, a sweep, a new pipeline,
        or, after ``poll`` seconds, the mailbox loop itself."""
        self._suspension = controller.suspend_default_action(resume_after=poll)

    def _wake(self) -> None:
        """Resume reading if it is suspended (any thread)."""
        suspension = self._suspension
        if suspension is not None:
            self._suspension = None
            suspension.resume()

    def _on_process_queue_writable(self, key: str) -> None:
        """The process level's feedback (on the process stage thread)."""
        self._wake()

    def _file_events_arrived(self) -> None:
        """The file events' thread: changes are recorded (called again only after the mail
        took them, so at most one such mail is pending)."""
        with contextlib.suppress(RejectedExecutionError):  # the loop has ended
            self._main_mail().execute(self._on_file_events, "file events")

    # -- mails (mailbox thread) --------------------------------------------------------------

    def _inject_requested(self, name: str, checkpoint_id: int) -> None:
        """A request the control thread saw: inject it unless it was sealed meanwhile (a
        pipeline that stopped or was replaced seals its own request, which the control thread
        may see and forward before the seal; the replacement must not seal it again)."""
        runtime = self._pipelines.get(name)
        if runtime is None or runtime.coordinator.knows(checkpoint_id):
            return
        try:
            waiting = checkpoint_id in runtime.metastore.unsealed_for_host(name, runtime.host)
        except MetastoreError as exc:  # cannot tell: seal it (a seal of a sealed one is refused)
            log.warning("checkpoint %d of %s: %s", checkpoint_id, name, exc)
            waiting = True
        if waiting:
            self._push_barrier(runtime, checkpoint_id)

    def _inject(self, name: str, checkpoint_id: int) -> None:
        runtime = self._pipelines.get(name)
        if runtime is not None and not runtime.coordinator.knows(checkpoint_id):
            self._push_barrier(runtime, checkpoint_id)

    def _push_barrier(self, runtime: PipelineRuntime, checkpoint_id: int) -> None:
        barrier = runtime.coordinator.barrier(checkpoint_id, runtime.watcher)
        self._process_level.push(runtime.name, barrier, urgent=True)

    def _begin_stop(self) -> None:
        """Seal what has been read, now: barriers at the current read offsets (what is not
        read yet is read by the next run), then end when every pipeline has sealed."""
        self._stopping = True
        for runtime in self._all():
            if runtime.state is PipelineState.READING:
                self._finish(runtime)
        if all(p.state is PipelineState.DONE for p in self._all()):
            self._loop().all_actions_completed()  # nothing left to seal (no pipeline served)
        self._wake()

    def _begin_removal(
        self, name: str, replacement: tuple[PipelineConfig, Metastore] | None
    ) -> None:
        runtime = self._pipelines.get(name)
        if runtime is None:
            if replacement is not None:
                self._start_pipeline(*replacement, None)
            else:
                log.warning("pipeline %s is not served; nothing to remove", name)
            return
        runtime.removing = True
        runtime.replacement = replacement
        if runtime.state is PipelineState.READING:
            self._finish(runtime)  # seal what it read; the rest is read when it is back

    def _finish(self, runtime: PipelineRuntime) -> None:
        """A pipeline caught up for good: barriers for every pending request (or a new one)."""
        runtime.state = PipelineState.FINISHING
        pending = runtime.metastore.unsealed_for_host(runtime.name, runtime.host)
        if not pending:
            pending = [runtime.metastore.request_checkpoint(runtime.name).checkpoint_id]
        for checkpoint_id in pending:
            self._inject(runtime.name, checkpoint_id)
        self._end_when_sealed(runtime)

    def _end_when_sealed(self, runtime: PipelineRuntime) -> None:
        if runtime.state is not PipelineState.FINISHING or runtime.coordinator.in_flight:
            return
        if runtime.removing and not (self._mode is CollectorMode.ONCE or self._stopping):
            self._unregister(runtime)
            if runtime.replacement is not None:
                self._start_pipeline(*runtime.replacement, None)
            return
        runtime.state = PipelineState.DONE
        if all(p.state is PipelineState.DONE for p in self._all()):
            self._loop().all_actions_completed()

    def _on_barrier_passed(self, name: str, passed: BarrierPassed) -> None:
        runtime = self._pipelines.get(name)
        if runtime is None:
            return
        recorded = runtime.coordinator.passed(passed, runtime.watcher, runtime.tracking.records)
        if recorded is not None:
            self._sealed.append(recorded)
            runtime.last_snapshot = time.monotonic()
            runtime.sink_states.flush()
            self._end_when_sealed(runtime)

    def _on_file_events(self) -> None:
        """Files of some pipelines changed: resume reading if one of them can read now (scans
        the events asked for run at the start of the next default action)."""
        events = self._file_events
        if events is None:
            return
        changed = events.take(self._pipelines)
        if self._suspension is None:
            return  # reading is not suspended: the next default action sees the changes
        for name in changed:
            runtime = self._pipelines.get(name)
            if runtime is not None and runtime.state is PipelineState.READING:
                self._wake()
                return

    def _sweep(self) -> None:
        for runtime in self._all():
            runtime.tracking.acker.sweep()
        self._wake_for_acks()

    def _on_acks(self, name: str, acks: list[tuple[int, int]]) -> None:
        runtime = self._pipelines.get(name)
        if runtime is not None:
            runtime.tracking.acker.ack_all(acks)
            # Only this pipeline's admission can have changed: no scan of every pipeline per ack.
            if self._suspension is not None and self._admits(runtime):
                self._wake()

    def _wake_for_acks(self) -> None:
        if self._suspension is not None and any(self._admits(p) for p in self._all()):
            self._wake()

    @staticmethod
    def _admits(runtime: PipelineRuntime) -> bool:
        return bool(runtime.tracking.replays) or runtime.tracking.can_admit()

    # -- called on stage and sink group threads: forward as mail -----------------------------

    def _anchored_from_stage(self, name: str, tree: int, ack_value: int) -> None:
        with contextlib.suppress(RejectedExecutionError):  # the loop has ended
            self._main_mail().execute(
                functools.partial(self._on_acks, name, [(tree, ack_value)]), "chunk anchored"
            )

    def _delivered_from_sink(self, name: str, acks: list[tuple[int, int]]) -> None:
        with contextlib.suppress(RejectedExecutionError):
            self._main_mail().execute(
                functools.partial(self._on_acks, name, acks), "chunks delivered"
            )

    def _barrier_passed_from_sink(self, name: str, passed: BarrierPassed) -> None:
        try:
            self._main_mail().execute(
                functools.partial(self._on_barrier_passed, name, passed),
                "sink group %s of %s passed checkpoint %d",
                passed.group,
                name,
                passed.checkpoint_id,
            )
        except RejectedExecutionError:
            raise AlertException() from None  # the loop has ended: stop this group

    # -- send stage (its thread) -------------------------------------------------------------

    def _ready_to_send(self, name: str) -> bool:
        """Sender readiness: the pipeline's ring has a free slot and it is under its rate."""
        runtime = self._pipelines.get(name)
        if runtime is None:
            return True
        return runtime.ring.remaining_capacity() > 0 and runtime.rate_limit.ready()

    # -- helpers -----------------------------------------------------------------------------

    def _all(self) -> list[PipelineRuntime]:
        return list(self._pipelines.values())

    def _loop(self) -> MailboxProcessor:
        assert self._processor is not None, "the collector is not running"
        return self._processor

    def _main_mail(self) -> MailboxExecutor:
        assert self._mail is not None, "the collector is not running"
        return self._mail

    @staticmethod
    def _result_of(runtime: PipelineRuntime) -> PipelineResult:
        tracking = runtime.tracking
        return PipelineResult(
            sealed=tuple(runtime.coordinator.sealed),
            files=len(runtime.watcher.files),
            lines=runtime.lines,
            bytes=runtime.bytes,
            acker=AckerStats(
                acked=tracking.acker.acked,
                replayed=tracking.replayed,
                timed_out=tracking.acker.timed_out,
                pending=tracking.acker.pending,
                lost=tracking.lost,
                committed_offsets=tracking.offsets.snapshot(),
            ),
        )
