"""``MailboxExecutor``: the facade other code uses to hand work to the mailbox thread."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from ._exceptions import MailboxClosedException, RejectedExecutionError
from ._mail import MAX_PRIORITY, MIN_PRIORITY, Mail
from ._task_mailbox import TaskMailbox

if TYPE_CHECKING:
    from ._processor import MailboxProcessor

__all__ = ["MailboxExecutor"]

_T = TypeVar("_T")


class MailboxExecutor:
    """Puts commands into a mailbox as mails of one priority, and lets mails yield to others.

    Obtain one from ``MailboxProcessor.get_mailbox_executor(priority)`` or
    ``get_main_mailbox_executor()``; executors are cheap and stateless beyond their priority.

    Threading model:
        :meth:`execute`, :meth:`submit` and :meth:`wake` may be called from any
        thread. :meth:`yield_`,
        :meth:`try_yield`, :meth:`should_interrupt` and :meth:`is_idle` are for code already
        running on the mailbox thread (inside a mail or the default action) and raise
        :class:`IllegalThreadError` elsewhere.

    Lifecycle:
        Follows the mailbox: once it is ``QUIESCED`` or ``CLOSED``, :meth:`execute` and
        :meth:`submit` raise :class:`RejectedExecutionError`.

    Args:
        mailbox: where the mails go.
        priority: the priority of every mail put, and the least priority :meth:`yield_` takes.
        processor: the processor serving ``mailbox``; needed by :meth:`is_idle`, and lets
            yielded mails count in its metrics.
    """

    __slots__ = ("_mailbox", "_priority", "_processor")

    def __init__(
        self, mailbox: TaskMailbox, priority: int, processor: MailboxProcessor | None = None
    ) -> None:
        if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
            raise ValueError(
                f"executor priority {priority} is outside [{MIN_PRIORITY}, {MAX_PRIORITY}]"
            )
        self._mailbox = mailbox
        self._priority = priority
        self._processor = processor

    @property
    def priority(self) -> int:
        return self._priority

    def execute(
        self,
        command: Callable[[], object],
        description: str,
        *description_args: object,
        wake: bool = True,
    ) -> None:
        """Run ``command`` later on the mailbox thread; its exceptions propagate from the loop.

        Args:
            command: called with no arguments.
            description: ``%``-style format naming the command (for logs and errors).
            *description_args: arguments of ``description``, rendered only when needed.
            wake: False to leave a waiting mailbox thread asleep (see ``TaskMailbox.put``);
                :meth:`wake` wakes it later.

        Raises:
            RejectedExecutionError: the mailbox is not open.
        """
        self._put(Mail(command, self._priority, description, *description_args), wake=wake)

    def wake(self) -> None:
        """Wake the mailbox thread if it waits with mail put without waking it (any thread)."""
        self._mailbox.wake()

    def submit(
        self, task: Callable[[], _T], description: str, *description_args: object
    ) -> Future[_T]:
        """Run ``task`` later on the mailbox thread; the future gets its result or exception.

        An exception of ``task`` goes to the future only, not to the loop. The future is
        cancelled if the mailbox is closed before the task runs.

        Raises:
            RejectedExecutionError: the mailbox is not open.
        """
        future: Future[_T] = Future()
        self._put(Mail(task, self._priority, description, *description_args, future=future))
        return future

    def yield_(self) -> None:
        """Run one mail of at least this executor's priority, waiting for one to arrive.

        Lets a long action on the mailbox thread (a mail, the default action) give way to
        mails as important as its own.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is (or becomes, while waiting) closed.
            Exception: whatever the mail raised.
        """
        self._run(self._mailbox.take(self._priority))

    def try_yield(self) -> bool:
        """Run one mail of at least this executor's priority if one is waiting; true if so.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is closed.
            Exception: whatever the mail raised.
        """
        mail = self._mailbox.try_take(self._priority)
        if mail is None:
            return False
        self._run(mail)
        return True

    def should_interrupt(self) -> bool:
        """True when any mail is waiting, so a long action should return or yield soon.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        return self._mailbox.has_mail()

    def is_idle(self) -> bool:
        """True when the default action is suspended, no mail waits and the mailbox is open.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            RuntimeError: the executor was created without a processor.
        """
        processor = self._processor
        if processor is None:
            raise RuntimeError("is_idle() needs an executor obtained from a MailboxProcessor")
        has_mail = self._mailbox.has_mail()  # checks the thread
        return (
            not processor.is_default_action_available()
            and not has_mail
            and self._mailbox.state.is_accepting_mails()
        )

    def _put(self, mail: Mail, *, wake: bool = True) -> None:
        try:
            self._mailbox.put(mail, wake=wake)
        except MailboxClosedException as exc:
            raise RejectedExecutionError(f"mailbox rejected {mail}: {exc}") from exc

    def _run(self, mail: Mail) -> None:
        if self._processor is not None:
            self._processor._run_mail(mail)
        else:
            mail.run()

    def __repr__(self) -> str:
        return f"MailboxExecutor(priority={self._priority}, mailbox={self._mailbox!r})"
