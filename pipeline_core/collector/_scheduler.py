"""The collector's reading: the mailbox's default action, one time slice of rounds at a time."""

from __future__ import annotations

import functools
import time
from enum import Enum

from pipeline_core.collector._checkpoint_driver import CheckpointDriver
from pipeline_core.collector._file_event_router import FileEventRouter
from pipeline_core.collector._lifecycle import CollectorMode
from pipeline_core.collector._pipeline import PipelineRuntime, save_in_flight
from pipeline_core.collector._read_progress import record_samples
from pipeline_core.collector._registry import PipelineRegistry
from pipeline_core.collector._stages import StageQueues
from pipeline_core.mailbox import MailboxDefaultAction, TaskMailbox
from pipeline_core.queues import PushResult
from pipeline_core.source import Chunk

IDLE_POLL_SECONDS = 0.2
"""How long a caught-up collector waits before reading again, unless file events wake it
(then it waits up to ``collector.file_events_fallback_s``)."""

SETTLING_SCAN_SECONDS = 0.1
"""How soon a pipeline whose last scan saw a possible copy off its paths scans again (the copy
is adopted once it kept its size from one scan to the next)."""

DISCOVERY_SLACK = 0.5
"""A pipeline's periodic glob may come this share of its interval early: the pipelines due
within it are globbed at one wake-up, not each at its own (every wake-up looks at every
pipeline). Their next globs are then due together: a hundred pipelines at rest, whose globs
came due one after the other (0.25 s of slack at most), woke the mailbox thread four times a
second; after two intervals they are globbed at one wake-up an interval."""

EARLY_SHARE = 0.5
"""Once a pipeline's acker snapshot or read progress sample is due, those of the others that
are at least this share of their period old are saved with it, in the same transaction."""

QUIET_SNAPSHOT_SECONDS = 600.0
"""A pipeline that had nothing in flight at its last acker snapshot and has read nothing
since has the same (empty) snapshot in the metastore already: it is saved again only this
often, not every ``acker_snapshot_s``. With a hundred pipelines at rest, a save each every
5 s cost 0.6 % of a core; each save is a commit, which also wakes the control thread's request
probe."""


class _Turn(Enum):
    READ = "read"
    """A chunk was read and queued."""
    READ_LAST = "read_last"
    """A chunk was read and queued, and the pipeline's files have nothing more to read now
    (the chunk's file was read to its end and was the last of its round with anything)."""
    EMPTY = "empty"
    """The file in turn had nothing new; others may."""
    CAUGHT_UP = "caught_up"
    """A whole round of the pipeline's files had nothing new."""
    BLOCKED = "blocked"
    """The pipeline's process queue is full, its acker is at its limit, or its spool (staging
    in an object store) waits for uploads."""


class ReadScheduler(MailboxDefaultAction):
    """Reads every READING pipeline's files, fairly, one time slice per default-action call.

    Each call first does every reading pipeline's housekeeping (discovery scans, when file
    events ask for one, acker snapshots and read progress samples), then reads in rounds until
    the slice ends: a round gives each pipeline one turn (one chunk of one of its files),
    higher priorities first, and resumes where an interrupted round stopped. A pipeline whose
    process queue is full or whose acker is at its limit is skipped (BLOCKED) without holding
    the others up. When no pipeline can read, reading is suspended: until feedback resumes it
    (a queue drained, acks, file events: see ``Feedback``), or a poll interval. In one-shot
    mode a pipeline caught up twice in a row (with a scan for files that appeared meanwhile in
    between) is finished through the ``CheckpointDriver``.

    Threading model: mailbox thread only (the default action checks it).
    """

    def __init__(
        self,
        mailbox: TaskMailbox,
        registry: PipelineRegistry,
        queues: StageQueues,
        driver: CheckpointDriver,
        file_events: FileEventRouter | None,
        mode: CollectorMode,
        *,
        slice_seconds: float,
    ) -> None:
        self._mailbox = mailbox
        self._registry = registry
        self._queues = queues
        self._driver = driver
        self._file_events = file_events
        self._mode = mode
        self._slice_seconds = slice_seconds
        self._cursor = 0
        self._idle_confirmed: set[str] = set()
        """One-shot mode: pipelines caught up once and scanned again since."""
        self._quiet: dict[str, tuple[tuple[int, ...], float]] = {}
        """Pipelines whose last acker snapshot was empty: what they had read by then, and
        when it was saved."""

    def run_default_action(self, controller: MailboxDefaultAction.Controller) -> None:
        self._mailbox.check_mailbox_thread("ReadScheduler.run_default_action()")
        now = time.monotonic()
        reading = self._registry.reading()
        if not reading:
            controller.suspend_default_action()  # the last barriers are in flight
            return
        for runtime in reading:
            self._housekeeping(runtime, now)
        self._save_snapshots(self._snapshots_due(reading, now), now)
        self._record_samples(reading, now)
        rounds = self._read_rounds(reading, now)
        if rounds is None:
            return  # the slice ended
        caught_up, blocked = rounds
        if self._mode is CollectorMode.ONCE and self._confirm_idle(reading, caught_up):
            return
        if blocked and len(blocked) + len(caught_up) >= len(reading) and not caught_up:
            self._suspend(controller, IDLE_POLL_SECONDS, blocked)  # woken by feedback or acks
            return
        if self._registry.any_reading():
            events = self._file_events
            wait = (
                IDLE_POLL_SECONDS
                if events is None
                else events.idle_wait(reading, time.monotonic(), IDLE_POLL_SECONDS)
            )
            if any(runtime.watcher.settling for runtime in reading):
                wait = min(wait, SETTLING_SCAN_SECONDS)
            now = time.monotonic()
            for runtime in reading:  # an event held at a file's end is handed on in time
                due = runtime.reader.flush_due()
                if due is not None:
                    wait = min(wait, max(due - now, 0.001))
            for runtime in reading:  # trees in flight are saved every acker_snapshot_s
                if runtime.tracking.acker.pending:
                    due = runtime.last_snapshot + runtime.config.collector.acker_snapshot_s
                    wait = min(wait, max(due - now, 0.001))
            self._suspend(controller, wait, blocked)  # or file events

    def _suspend(
        self, controller: MailboxDefaultAction.Controller, wait: float, blocked: set[str]
    ) -> None:
        """Suspend reading for ``wait`` seconds at most; not at all if a pipeline held back
        can read already (its queue drained or its spool freed since its turn)."""
        suspension = controller.suspend_default_action(resume_after=wait)
        if any(self._servable(self._registry.runtime(name)) for name in blocked):
            suspension.resume()

    def _read_rounds(
        self, reading: list[PipelineRuntime], now: float
    ) -> tuple[set[str], set[str]] | None:
        """Rounds until every pipeline is caught up or blocked: the names of those caught up
        and of those blocked; None when the slice ended first."""
        deadline = now + self._slice_seconds
        caught_up: set[str] = set()
        blocked: set[str] = set()
        while True:
            # A round: one turn per pipeline. Rounds go on while some pipeline may still have
            # something to read (it read a chunk, or the file in turn was empty but others of
            # its files may not be); they stop when every pipeline is caught up or blocked. A
            # pipeline caught up (a whole round of its files had nothing) has no more turns in
            # this call: its reader would start another round of them (what is written
            # meanwhile comes with the next wake-up).
            going_on = False
            for _ in range(len(reading)):
                runtime = reading[self._cursor % len(reading)]
                self._cursor = (self._cursor + 1) % len(reading)
                if runtime.name in caught_up:
                    continue
                turn = self._serve(runtime)
                runtime.mark_blocked(turn is _Turn.BLOCKED)
                if turn is _Turn.READ or turn is _Turn.READ_LAST:
                    self._idle_confirmed.discard(runtime.name)
                    blocked.discard(runtime.name)
                    if turn is _Turn.READ:
                        going_on = True
                        caught_up.discard(runtime.name)
                    else:  # no turn that would only find that out
                        caught_up.add(runtime.name)
                elif turn is _Turn.EMPTY:
                    going_on = True
                elif turn is _Turn.CAUGHT_UP:
                    caught_up.add(runtime.name)
                else:
                    blocked.add(runtime.name)
                if time.monotonic() >= deadline or self._mailbox.has_urgent_mail:
                    return None  # the slice ended, or a checkpoint's mail waits
            if not going_on:
                return caught_up, blocked

    def _confirm_idle(self, reading: list[PipelineRuntime], caught_up: set[str]) -> bool:
        """One-shot mode: finish the pipelines caught up again since their last look; look
        once more for files that appeared while reading the others. True while looking."""
        confirming = False
        for runtime in reading:
            if runtime.name not in caught_up:
                continue
            if runtime.name not in self._idle_confirmed or runtime.watcher.settling:
                runtime.watcher.scan()
                runtime.last_scan = time.monotonic()
                self._idle_confirmed.add(runtime.name)
                confirming = True
            else:
                self._driver.finish(runtime)
        return confirming

    def _housekeeping(self, runtime: PipelineRuntime, now: float) -> None:
        """Discovery, for every pipeline, blocked or not (the acker's timeout sweep comes by
        mail, reading or not)."""
        events = self._file_events
        since_scan = now - runtime.last_scan
        discovery = (
            runtime.config.collector.discovery_interval_s
            if events is None
            else events.discovery_interval(runtime)
        )
        if since_scan >= discovery * (1 - DISCOVERY_SLACK) or (
            runtime.watcher.settling and since_scan >= SETTLING_SCAN_SECONDS
        ):
            runtime.watcher.scan()
            runtime.last_scan = now
            if events is not None:
                events.follow(runtime)
        elif events is not None and events.scan_due(runtime, now):
            within = events.scan_within(runtime, now)
            runtime.watcher.scan(within)
            if within is None:
                runtime.last_scan = now
            events.follow(runtime)

    def _snapshots_due(self, reading: list[PipelineRuntime], now: float) -> list[PipelineRuntime]:
        """The pipelines whose acker snapshot is to be saved now: once one is due
        (``acker_snapshot_s``), every one at least half due comes with it, so that a
        metastore's are saved together (:meth:`_save_snapshots`); the quiet are left out."""
        ages = [(now - r.last_snapshot) / r.config.collector.acker_snapshot_s for r in reading]
        if all(age < 1 for age in ages):
            return []
        due: list[PipelineRuntime] = []
        for runtime, age in zip(reading, ages, strict=True):
            if age < EARLY_SHARE:
                continue
            if self._quiet_since_snapshot(runtime, now):
                runtime.last_snapshot = now
            else:
                due.append(runtime)
        return due

    def _record_samples(self, reading: list[PipelineRuntime], now: float) -> None:
        """Take and record the read progress samples due, a metastore's together (once one
        is due, every one at least half due comes with it: :func:`record_samples`)."""
        if not any(runtime.progress.due(now) for runtime in reading):
            return
        record_samples(
            [
                (runtime.progress, taken)
                for runtime in reading
                if runtime.progress.due(now, early=EARLY_SHARE)
                and (taken := runtime.progress.take(*runtime.read_totals())) is not None
            ]
        )

    def _quiet_since_snapshot(self, runtime: PipelineRuntime, now: float) -> bool:
        """Whether the metastore holds the acker's in-flight trees already: nothing was in
        flight at the last snapshot and no tree was started since (nothing read, nothing
        replayed), so every seal since saved none either (at most
        :data:`QUIET_SNAPSHOT_SECONDS` long)."""
        quiet = self._quiet.get(runtime.name)
        return (
            quiet is not None
            and quiet[0] == _read_marks(runtime)
            and runtime.tracking.acker.pending == 0
            and now - quiet[1] < QUIET_SNAPSHOT_SECONDS
        )

    def _save_snapshots(self, runtimes: list[PipelineRuntime], now: float) -> None:
        """Save the acker's in-flight trees of ``runtimes``, a metastore's in one transaction
        (each commit wakes every collector watching the metastore for requests: a hundred
        pipelines' snapshots one by one were a hundred)."""
        if not runtimes:
            return
        marks = {runtime.name: _read_marks(runtime) for runtime in runtimes}
        for runtime in save_in_flight(runtimes):
            if runtime.tracking.acker.pending == 0:
                self._quiet[runtime.name] = (marks[runtime.name], now)
            else:
                self._quiet.pop(runtime.name, None)

    def _serve(self, runtime: PipelineRuntime) -> _Turn:
        if not self._push_replays(runtime):
            return _Turn.BLOCKED
        if not self._queues.process.is_writable(runtime.name):
            return _Turn.BLOCKED
        if not runtime.tracking.can_admit():
            return _Turn.BLOCKED
        if runtime.spool_full:
            return _Turn.BLOCKED  # the spool is at its bound: wait for uploads
        grace = (
            0.0 if self._mode is CollectorMode.ONCE else runtime.config.collector.rotated_grace_s
        )
        result = runtime.reader.read_turn(
            functools.partial(self._publish_chunk, runtime),
            rotated_grace=grace,
        )
        if result.chunk is not None:
            runtime.lines += result.chunk.lines
            runtime.events += result.chunk.event_count
            runtime.bytes += len(result.chunk.data)
            return _Turn.READ_LAST if result.caught_up else _Turn.READ
        if result.blocked:
            return _Turn.BLOCKED
        return _Turn.CAUGHT_UP if result.caught_up else _Turn.EMPTY

    def _servable(self, runtime: PipelineRuntime) -> bool:
        """Whether nothing holds the pipeline's reading back now (queue, acker, spool)."""
        return (
            self._queues.process.is_writable(runtime.name)
            and runtime.tracking.can_proceed()
            and not runtime.spool_full
        )

    def _publish_chunk(self, runtime: PipelineRuntime, chunk: Chunk) -> bool:
        if not runtime.tracking.can_admit():
            return False
        chunk = runtime.tracking.stamp(chunk)
        if self._queues.enter(runtime.name, chunk) is not PushResult.ACCEPTED:
            return False
        runtime.tracking.started(chunk)
        return True

    def _push_replays(self, runtime: PipelineRuntime) -> bool:
        """Queue the ranges to re-deliver, before any new reading; False while the process
        queue is full."""
        replays = runtime.tracking.replays
        while replays:
            chunk = runtime.tracking.stamp(replays[0])
            if self._queues.enter(runtime.name, chunk) is not PushResult.ACCEPTED:
                return False
            replays.popleft()
            runtime.tracking.started(chunk)
        return True


def _read_marks(runtime: PipelineRuntime) -> tuple[int, ...]:
    """What changes when a tree is started: lines and bytes read, ranges replayed."""
    tracking = runtime.tracking
    return (runtime.lines, runtime.bytes, tracking.replayed, len(tracking.replays))
