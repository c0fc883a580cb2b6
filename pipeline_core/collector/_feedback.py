"""News from the collector's other threads that may let reading go on, turned into mail."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable

from pipeline_core.collector._file_event_router import FileEventRouter
from pipeline_core.collector._lifecycle import CollectorMode, PipelineState
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._registry import PipelineRegistry
from pipeline_core.mailbox import MailboxProcessor, RejectedExecutionError

IDLE_SWEEP_SECONDS = 10.0
"""How often the acker's timeout sweep is mailed while no tree is in flight (the liveness
heartbeat: see ``MAILBOX_STALL_SECONDS``)."""


class Feedback:
    """What other threads tell the mailbox thread that may let reading go on, one mail each.

    ========================  ==================  ==========================================
    news                      told by             its mail (on the mailbox thread)
    ========================  ==================  ==========================================
    a process queue drained   process stage       resume reading if the pipeline was held
                                                  back
    a chunk anchored          send stage          XOR into its acker tree (a mail that wakes
                                                  the thread only if the pipeline was held
                                                  back); resume reading if it was and can
                                                  read now
    chunks delivered          a sink group        the same
    timeout sweep             control loop        sweep every acker (failed trees become
                                                  replays); resume if a pipeline can read
    files changed             file events         note the scans wanted (``file_events``);
                                                  resume if a READING pipeline's files changed
    ========================  ==================  ==========================================

    ``file_events`` (continuous mode only) routes the file events; the reader asks it when to
    scan and how long to wait.

    A pipeline that caught up with its files waits for their next change: acks and drained
    queues resume reading only for a pipeline held back by them (or with replays to queue).
    Were every ack to resume it, a tailed file would be read again at every delivery of its
    previous chunk, a few hundred times a second at 1 MB/s, whatever the file events'
    coalescing.

    Threading model: :meth:`queue_writable`, :meth:`anchored`, :meth:`delivered`,
    :meth:`sweep` and ``_file_events_arrived`` run on the threads above and only put a mail
    (none once the loop has ended); every ``_on_…`` handler runs on the mailbox thread and
    checks it first; :meth:`forget` and :meth:`close` are for the mailbox thread.
    """

    def __init__(
        self, processor: MailboxProcessor, registry: PipelineRegistry, mode: CollectorMode
    ) -> None:
        self._processor = processor
        self._mail = processor.get_main_mailbox_executor()
        self._registry = registry
        self.file_events = (
            FileEventRouter(self._file_events_arrived, mailbox=processor.mailbox)
            if mode is CollectorMode.CONTINUOUS
            else None
        )
        self.last_sweep = time.monotonic()
        """When the mailbox thread last handled a sweep (the control loop sends one a second
        at most, every ``IDLE_SWEEP_SECONDS`` at least): written on the mailbox thread, read by
        the liveness probe."""
        self._sweep_sent = float("-inf")
        """When the control thread last mailed a sweep (control thread)."""

    # -- other threads: mail only ------------------------------------------------------------

    def queue_writable(self, key: str) -> None:
        """The process level's feedback (process stage thread)."""
        self._send(functools.partial(self._on_queue_writable, key), "queue of %s writable", key)

    def anchored(self, name: str, tree: int, ack_value: int) -> None:
        """A chunk's edges were anchored, one per sink group: by the send stage, or by the
        mailbox thread publishing at once (``StageQueues.enter``), which takes them in now."""
        if self._processor.is_mailbox_thread():
            self._on_acks(name, [(tree, ack_value)])
        else:
            self._post_acks(name, [(tree, ack_value)])

    def delivered(self, name: str, acks: list[tuple[int, int]]) -> None:
        """A sink group delivered chunks (its thread)."""
        self._post_acks(name, acks)

    def _post_acks(self, name: str, acks: list[tuple[int, int]]) -> None:
        """Mail the acks without waking the mailbox thread (they are taken in before its next
        turn), and wake it if the pipeline's acker held its reading back. The mailbox thread
        marks a pipeline held back before it last looks at its mailbox, so the mark is seen
        here if that look missed this mail."""
        self._send(functools.partial(self._on_acks, name, acks), "acks of %s", name, wake=False)
        runtime = self._registry.get(name)
        if runtime is not None and runtime.is_blocked:
            self._mail.wake()

    def sweep(self) -> None:
        """Time for the acker's timeout sweep (control thread). While no pipeline has a tree
        in flight (read without a lock, as the metrics are: a tree started meanwhile is swept
        at the next turn) it is mailed every ``IDLE_SWEEP_SECONDS`` only, as the liveness
        probe's heartbeat: every second, it woke an idle collector's mailbox thread for
        nothing."""
        now = time.monotonic()
        if now - self._sweep_sent < IDLE_SWEEP_SECONDS and not any(
            r.tracking.acker.pending for r in self._registry.runtimes()
        ):
            return
        self._sweep_sent = now
        self._send(self._on_sweep, "acker timeout sweep")

    def _file_events_arrived(self) -> None:
        """The file events' thread: changes are recorded (called again only after the mail
        took them, so at most one such mail is pending)."""
        self._send(self._on_file_events, "file events")

    # -- mailbox thread ----------------------------------------------------------------------

    def forget(self, name: str) -> None:
        """The pipeline is no longer served."""
        if self.file_events is not None:
            self.file_events.forget(name)

    def close(self) -> None:
        if self.file_events is not None:
            self.file_events.close()

    def _on_queue_writable(self, key: str) -> None:
        self._processor.check_mailbox_thread("Feedback._on_queue_writable()")
        runtime = self._registry.get(key)
        if runtime is None or self._held_back(runtime):
            self._processor.resume_default_action()

    def _on_acks(self, name: str, acks: list[tuple[int, int]]) -> None:
        self._processor.check_mailbox_thread("Feedback._on_acks()")
        runtime = self._registry.get(name)
        if runtime is None:
            return
        runtime.tracking.acker.ack_all(acks)
        # Only this pipeline's admission can have changed: no scan of every pipeline per ack.
        if (
            self._reading_suspended()
            and self._held_back(runtime)
            and runtime.tracking.can_proceed()
        ):
            self._processor.resume_default_action()

    def _on_sweep(self) -> None:
        self._processor.check_mailbox_thread("Feedback._on_sweep()")
        self.last_sweep = time.monotonic()
        runtimes = self._registry.runtimes()
        for runtime in runtimes:
            runtime.tracking.acker.sweep()
        if self._reading_suspended() and any(
            self._held_back(r) and r.tracking.can_proceed() for r in runtimes
        ):
            self._processor.resume_default_action()

    def _on_file_events(self) -> None:
        """Files of some pipelines changed: resume reading if one of them can read now (scans
        the events asked for run at the start of the next default action)."""
        self._processor.check_mailbox_thread("Feedback._on_file_events()")
        events = self.file_events
        if events is None:
            return
        changed = events.take(self._registry.get)
        if not self._reading_suspended():
            return  # the next default action sees the changes
        for name in changed:
            runtime = self._registry.get(name)
            if runtime is not None and runtime.state is PipelineState.READING:
                self._processor.resume_default_action()
                return

    # -- internals -----------------------------------------------------------------------------

    @staticmethod
    def _held_back(runtime: PipelineRuntime) -> bool:
        """Whether news of its queue or acker may let the pipeline read: it was held back at
        its last turn, or has ranges to deliver again (a caught-up pipeline waits for its
        files to change instead)."""
        return runtime.is_blocked or bool(runtime.tracking.replays)

    def _reading_suspended(self) -> bool:
        return not self._processor.is_default_action_available()

    def _send(
        self, command: Callable[[], None], description: str, *args: object, wake: bool = True
    ) -> None:
        with contextlib.suppress(RejectedExecutionError):  # the loop has ended
            self._mail.execute(command, description, *args, wake=wake)
