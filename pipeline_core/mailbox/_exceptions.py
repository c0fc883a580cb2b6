"""The mailbox's error taxonomy: one named type per meaning, causes chained."""

from __future__ import annotations

__all__ = [
    "IllegalThreadError",
    "MailboxClosedException",
    "MailboxError",
    "RejectedExecutionError",
    "ReportedThrowableError",
]


class MailboxError(Exception):
    """Base class of every error raised by :mod:`pipeline_core.mailbox`."""


class MailboxClosedException(MailboxError):
    """The mailbox's lifecycle state forbids the operation.

    Raised by ``put``/``put_first`` once the mailbox is ``QUIESCED`` or ``CLOSED``, and by every
    take once it is ``CLOSED`` (including a take that was blocked when ``close()`` happened).
    """


class RejectedExecutionError(MailboxError):
    """A :class:`MailboxExecutor` could not enqueue a command because the mailbox is not open.

    The :class:`MailboxClosedException` that caused the rejection is kept as ``__cause__``.
    """


class IllegalThreadError(MailboxError):
    """A method reserved for the mailbox (owner) thread was called from another thread.

    The message names the method, the owner thread and the calling thread. This is always a
    programming error: the caller should send a mail instead.
    """


class ReportedThrowableError(MailboxError):
    """An exception reported with ``MailboxProcessor.report_throwable`` from some thread.

    Raised on the mailbox thread, out of ``run_mailbox_loop`` (or out of a ``yield_`` that ran the
    report). The reported exception is ``__cause__`` and also available as :attr:`reported`.
    """

    def __init__(self, reported: BaseException) -> None:
        super().__init__(f"error reported to the mailbox thread: {reported!r}")
        self.reported = reported
        self.__cause__ = reported
