"""``Mail``: one action for the mailbox thread, with its priority and description."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

__all__ = ["MAX_PRIORITY", "MIN_PRIORITY", "Mail"]

MIN_PRIORITY: Final[int] = -1
"""The lowest priority: ``take(MIN_PRIORITY)`` accepts every mail. Used by the main executor."""

MAX_PRIORITY: Final[int] = sys.maxsize
"""The largest priority (checkpoint requests, control mails)."""


class Mail:
    """An action to run on the mailbox thread: a callable, a priority and a description.

    A mail is a value: its action, priority, description and future never change. The only
    mutable field is the put timestamp the mailbox stamps for the latency metric.

    Priority does not reorder the mailbox. Mails run in the order they were put (``put_first``
    excepted); the priority only decides which mails a ``take(priority)`` or a
    ``MailboxExecutor.yield_()`` may pick, so that a mail running on the mailbox thread can let
    more important mails through without running less important ones.

    Args:
        action: called with no arguments by :meth:`run`.
        priority: between :data:`MIN_PRIORITY` and :data:`MAX_PRIORITY`.
        description_format: ``%``-style format, rendered lazily by ``str(mail)``.
        *description_args: arguments for ``description_format``.
        future: when given, :meth:`run` completes it with the action's result or exception
            (the exception is not raised to the loop), and :meth:`try_cancel` cancels it.

    Attributes:
        put_time: ``time.perf_counter()`` when a mailbox last accepted the mail (0.0 before);
            written by the mailbox, read by the processor's latency metric.

    Raises:
        ValueError: the priority is out of range.
    """

    __slots__ = (
        "_action",
        "_description_args",
        "_description_format",
        "_future",
        "_priority",
        "put_time",
    )

    def __init__(
        self,
        action: Callable[[], object],
        priority: int,
        description_format: str,
        *description_args: object,
        future: Future[Any] | None = None,
    ) -> None:
        if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
            raise ValueError(
                f"mail priority {priority} is outside [{MIN_PRIORITY}, {MAX_PRIORITY}]"
            )
        self._action = action
        self._priority = priority
        self._description_format = description_format
        self._description_args = description_args
        self._future = future
        self.put_time: float = 0.0

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def future(self) -> Future[Any] | None:
        """The future this mail completes, if it was created by ``submit``."""
        return self._future

    def run(self) -> None:
        """Run the action on the calling thread (the mailbox thread, in normal use).

        Without a future, exceptions propagate to the caller. With a future, the future is set
        running (the action is skipped if it was cancelled) and then receives the result or
        the exception; only non-``Exception`` errors (``KeyboardInterrupt``, ``SystemExit``) are
        re-raised after being stored.
        """
        future = self._future
        if future is None:
            self._action()
            return
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = self._action()
        except Exception as exc:
            future.set_exception(exc)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(result)

    def try_cancel(self) -> bool:
        """Cancel the mail's future; true if it is now cancelled. Mails without one: false."""
        future = self._future
        return future is not None and future.cancel()

    def __str__(self) -> str:
        if not self._description_args:
            return self._description_format
        try:
            return self._description_format % self._description_args
        except (TypeError, ValueError, KeyError):
            args = ", ".join(repr(arg) for arg in self._description_args)
            return f"{self._description_format} ({args})"

    def __repr__(self) -> str:
        return f"Mail({str(self)!r}, priority={self._priority})"
