"""``MailboxProcessor``: the single-threaded loop alternating mails and the default action."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from types import TracebackType

from ._default_action import DefaultAction, MailboxDefaultAction
from ._exceptions import MailboxClosedException, ReportedThrowableError
from ._executor import MailboxExecutor
from ._mail import MAX_PRIORITY, MIN_PRIORITY, Mail
from ._metrics import DEFAULT_LATENCY_WINDOW, MailboxMetrics, MetricsRecorder
from ._task_mailbox import MailboxState, TaskMailbox

__all__ = ["MailboxProcessor"]


class MailboxProcessor:
    """Runs a default action over and over, and every mail in between, on one thread.

    :meth:`run_mailbox_loop` repeats: run every mail that has arrived (taken as one batch, one
    lock acquisition), then call the default action once. When no mail has arrived the check
    costs one unlocked flag read. While the default action is suspended the loop blocks on the
    mailbox instead of spinning, and wakes for the next mail (a resume is such a mail).

    Args:
        default_action: called with a :class:`MailboxDefaultAction.Controller` between mails.
        mailbox: the mailbox to serve; by default a new one owned by the constructing thread.
        main_executor_priority: priority of :meth:`get_main_mailbox_executor`'s mails.
        latency_window: how many recent put-to-run latencies :meth:`metrics` percentiles use.

    Threading model:
        The mailbox thread is the mailbox's owner. On it only: :meth:`run_mailbox_loop`,
        :meth:`run_mailbox_step`, :meth:`drain`, :meth:`prepare_close`, :meth:`has_mail`,
        :meth:`resume_default_action`, the controller's ``suspend_default_action``, and
        executors' ``yield_``, ``try_yield``, ``should_interrupt``, ``is_idle``; elsewhere they
        raise :class:`IllegalThreadError`. From any thread: :meth:`suspend`,
        :meth:`all_actions_completed`, :meth:`report_throwable`, ``Suspension.resume``,
        executors' ``execute``/``submit``, :meth:`close`, :meth:`metrics`,
        :meth:`check_mailbox_thread`. Control flags are only written on the mailbox thread;
        other threads change them by sending control mails put first.

    Lifecycle:
        Running: :meth:`run_mailbox_loop` returns after :meth:`suspend` (it may be called
        again to continue) or for good after :meth:`all_actions_completed`; it raises when a
        mail or the default action raises, or a reported error arrives. Closing, on the
        mailbox thread once the loop returned: :meth:`prepare_close` quiesces the mailbox
        (puts refused), :meth:`drain` runs the mails still queued, :meth:`close` closes it and
        cancels the futures of whatever it dropped. A :meth:`close` from another thread makes
        a running loop raise :class:`MailboxClosedException`, at once if it waits for mail,
        else after the current default-action call. The processor is a context manager that
        closes on exit.
    """

    def __init__(
        self,
        default_action: DefaultAction,
        mailbox: TaskMailbox | None = None,
        *,
        main_executor_priority: int = MIN_PRIORITY,
        latency_window: int = DEFAULT_LATENCY_WINDOW,
    ) -> None:
        self._default_action = default_action
        self._mailbox = mailbox if mailbox is not None else TaskMailbox()
        self._metrics = MetricsRecorder(latency_window)
        self._controller = _MailboxController(self)
        self._main_executor = MailboxExecutor(self._mailbox, main_executor_priority, self)
        # Control flags: written on the mailbox thread only.
        self._mailbox_loop_running = True
        self._suspended = False
        self._suspended_default_action: _DefaultActionSuspension | None = None
        self._resume_deadline: float | None = None  # monotonic; the suspension's timeout

    @property
    def mailbox(self) -> TaskMailbox:
        return self._mailbox

    # -- mailbox thread -----------------------------------------------------------------------

    def run_mailbox_loop(self) -> None:
        """Run mails and the default action until suspended or all actions completed.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is not ``OPEN``, or was closed meanwhile.
            ReportedThrowableError: another thread called :meth:`report_throwable`.
            Exception: whatever a mail or the default action raised.
        """
        self._check_is_mailbox_thread("run_mailbox_loop")
        mailbox = self._mailbox
        if mailbox.state is not MailboxState.OPEN:
            raise MailboxClosedException(
                f"run_mailbox_loop needs an OPEN mailbox, it is {mailbox.state.name}"
            )
        self._suspended = not self._mailbox_loop_running
        controller = self._controller
        default_action = self._default_action
        while not self._suspended:
            if mailbox.create_batch():  # unlocked flag read when no mail arrived
                self._process_mails_non_blocking(mailbox, single_step=False)
            if self._suspended_default_action is not None:
                self._process_mails_when_default_action_unavailable(mailbox)
            if not self._suspended:
                default_action(controller)

    def run_mailbox_step(self) -> bool:
        """Run one mail if any is waiting, else one default action; true if something ran.

        Never blocks. Meant for tests that step the loop one action at a time.
        """
        self._check_is_mailbox_thread("run_mailbox_step")
        self._suspended = not self._mailbox_loop_running
        mailbox = self._mailbox
        if mailbox.create_batch() and self._process_mails_non_blocking(mailbox, single_step=True):
            return True
        if self._suspended_default_action is None and not self._suspended:
            self._default_action(self._controller)
            return True
        return False

    def drain(self) -> None:
        """Run every mail still in the mailbox, in order, without the default action.

        Meant for shutdown, after :meth:`prepare_close`: mails already queued still run.
        """
        self._check_is_mailbox_thread("drain")
        for mail in self._mailbox.drain():
            self._run_mail(mail)

    def prepare_close(self) -> None:
        """Quiesce the mailbox: no more puts, queued mails can still be drained."""
        self._mailbox.quiesce()

    def has_mail(self) -> bool:
        return self._mailbox.has_mail()

    def resume_default_action(self) -> None:
        """Make the default action available again if it is suspended; otherwise nothing.

        For mails whose news may let the default action go on (more input, room downstream):
        the same as resuming the current suspension, without keeping its handle.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        self._check_is_mailbox_thread("resume_default_action")
        suspension = self._suspended_default_action
        if suspension is not None:
            self._resume_default_action(suspension)

    # -- any thread ---------------------------------------------------------------------------

    def suspend(self) -> None:
        """Make :meth:`run_mailbox_loop` return soon; calling it again continues the loop.

        Like :meth:`all_actions_completed` the request is a control mail put first; queued
        mails stay for the next run. Does nothing once the mailbox is not open.
        """

        def suspend_loop() -> None:
            self._suspended = True

        self._send_poison_mail(suspend_loop, "suspend mailbox loop")

    def all_actions_completed(self) -> None:
        """End the loop for good; call when the task has nothing left to do.

        The request is a control mail put first, so it runs next: right away on the mailbox
        thread, or from another thread after the batch the loop already holds. Mails still
        queued are not run by the loop; run them with :meth:`prepare_close` then :meth:`drain`,
        or drop them (and cancel their futures) with :meth:`close`.
        """

        def finish_loop() -> None:
            self._mailbox_loop_running = False
            self._suspended = True

        self._send_poison_mail(finish_loop, "all actions completed")

    def report_throwable(self, exc: BaseException) -> None:
        """Make the loop raise :class:`ReportedThrowableError` (``exc`` chained) on its thread.

        Raises:
            MailboxClosedException: the mailbox no longer accepts mail.
        """

        def rethrow() -> None:
            raise ReportedThrowableError(exc)

        self._send_control_mail(rethrow, "report throwable %r", exc)

    def get_mailbox_executor(self, priority: int) -> MailboxExecutor:
        """An executor putting mails at ``priority``; its ``yield_`` takes mails of at least it."""
        return MailboxExecutor(self._mailbox, priority, self)

    def get_main_mailbox_executor(self) -> MailboxExecutor:
        """The executor at the main priority (:data:`MIN_PRIORITY` unless configured)."""
        return self._main_executor

    def is_mailbox_loop_running(self) -> bool:
        """False once :meth:`all_actions_completed` has taken effect."""
        return self._mailbox_loop_running

    def is_default_action_available(self) -> bool:
        """False while the default action is suspended."""
        return self._suspended_default_action is None

    def is_mailbox_thread(self) -> bool:
        return self._mailbox.is_mailbox_thread()

    def check_mailbox_thread(self, what: str) -> None:
        """Return on the mailbox thread, raise on any other (see
        :meth:`TaskMailbox.check_mailbox_thread`).

        Raises:
            IllegalThreadError: naming ``what``, the mailbox thread and the calling thread.
        """
        self._mailbox.check_mailbox_thread(what)

    def metrics(self) -> MailboxMetrics:
        return self._metrics.snapshot(time.perf_counter())

    def close(self) -> None:
        """Close the mailbox; the futures of the mails it dropped are cancelled."""
        self._mailbox.close()

    def __enter__(self) -> MailboxProcessor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _process_mails_non_blocking(self, mailbox: TaskMailbox, single_step: bool) -> bool:
        processed = False
        while not self._suspended:
            mail = mailbox.try_take_from_batch()
            if mail is None:
                break
            processed = True
            self._run_mail(mail)
            if single_step:
                break
        return processed

    def _process_mails_when_default_action_unavailable(self, mailbox: TaskMailbox) -> None:
        while self._suspended_default_action is not None and not self._suspended:
            mail = mailbox.try_take_from_batch()
            if mail is None:
                if mailbox.create_batch():
                    continue
                deadline = self._resume_deadline
                if deadline is None:
                    mail = mailbox.take(MIN_PRIORITY)  # blocks until mail or close
                else:
                    mail = mailbox.poll(MIN_PRIORITY, deadline - time.monotonic())
                    if mail is None:  # the suspension's timeout
                        suspension = self._suspended_default_action
                        if suspension is not None:
                            self._resume_default_action(suspension)
                        continue
            self._run_mail(mail)

    def _run_mail(self, mail: Mail) -> None:
        self._metrics.record_mail(mail.put_time, time.perf_counter())
        mail.run()

    def _suspend_default_action(self, resume_after: float | None) -> _DefaultActionSuspension:
        self._check_is_mailbox_thread("suspend_default_action")
        suspension = self._suspended_default_action
        if suspension is None:
            suspension = self._suspended_default_action = _DefaultActionSuspension(self)
            self._metrics.suspension_started(time.perf_counter())
        if resume_after is not None:
            deadline = time.monotonic() + resume_after
            if self._resume_deadline is None or deadline < self._resume_deadline:
                self._resume_deadline = deadline
        return suspension

    def _resume_default_action(self, suspension: _DefaultActionSuspension) -> None:
        if self._suspended_default_action is suspension:
            self._suspended_default_action = None
            self._resume_deadline = None
            self._metrics.suspension_ended(time.perf_counter())

    def _send_poison_mail(self, action: Callable[[], None], description: str) -> None:
        mailbox = self._mailbox

        def put_if_open() -> None:
            # State check and put under one lock hold: a close cannot slip in between.
            if mailbox.state is MailboxState.OPEN:
                self._send_control_mail(action, description)

        mailbox.run_exclusively(put_if_open)

    def _send_control_mail(
        self, action: Callable[[], None], description: str, *args: object
    ) -> None:
        self._mailbox.put_first(Mail(action, MAX_PRIORITY, description, *args))

    def _check_is_mailbox_thread(self, method: str) -> None:
        if not self._mailbox.is_mailbox_thread():  # the name is made only for the error
            self._mailbox.check_mailbox_thread(f"MailboxProcessor.{method}()")


class _MailboxController(MailboxDefaultAction.Controller):
    __slots__ = ("_processor",)

    def __init__(self, processor: MailboxProcessor) -> None:
        self._processor = processor

    def suspend_default_action(
        self, resume_after: float | None = None
    ) -> MailboxDefaultAction.Suspension:
        return self._processor._suspend_default_action(resume_after)

    def all_actions_completed(self) -> None:
        self._processor.all_actions_completed()


class _DefaultActionSuspension(MailboxDefaultAction.Suspension):
    __slots__ = ("_processor",)

    def __init__(self, processor: MailboxProcessor) -> None:
        self._processor = processor

    def resume(self) -> None:
        processor = self._processor
        if processor.is_mailbox_thread():
            processor._resume_default_action(self)
            return

        def resume_on_mailbox_thread() -> None:
            processor._resume_default_action(self)

        with contextlib.suppress(MailboxClosedException):  # closed: nothing left to resume
            processor._send_control_mail(resume_on_mailbox_thread, "resume default action")
