"""The default action's contract: what the loop runs when no mail is waiting."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["DefaultAction", "MailboxDefaultAction"]


class MailboxDefaultAction(ABC):
    """The work a :class:`MailboxProcessor` repeats between mails (e.g. one read time slice).

    Any callable taking a :class:`MailboxDefaultAction.Controller` is a default action; this
    class is the named form of that contract (subclass it and implement
    :meth:`run_default_action`) and the home of the nested ``Controller`` and ``Suspension``
    interfaces.

    One call should do a bounded amount of work (a time slice) and return: mails, including
    checkpoint requests, only run between two calls. It must not block waiting for input;
    when there is nothing to do it suspends itself through the controller and returns, and
    whoever notices new input calls :meth:`Suspension.resume`.
    """

    class Suspension(ABC):
        """Handle of one suspension of the default action."""

        @abstractmethod
        def resume(self) -> None:
            """Make the default action available again; callable from any thread.

            On the mailbox thread it takes effect at once. From another thread it is sent as a
            control mail put first, so it wakes a loop blocked waiting for mail. Resuming a
            suspension that is no longer the current one, or after the mailbox closed, does
            nothing.
            """

    class Controller(ABC):
        """What a running default action may ask of its processor (mailbox thread only)."""

        @abstractmethod
        def suspend_default_action(
            self, resume_after: float | None = None
        ) -> MailboxDefaultAction.Suspension:
            """Stop calling the default action until the returned suspension is resumed, or
            (``resume_after``) that many seconds have passed, whichever comes first.

            While suspended the loop blocks waiting for mail instead of spinning; the timeout
            is that wait's, so it costs no timer thread. Calling it again while suspended
            returns the same suspension (with the earlier of the two timeouts).

            Raises:
                IllegalThreadError: not called on the mailbox thread.
            """

        @abstractmethod
        def all_actions_completed(self) -> None:
            """Finish the loop for good (see ``MailboxProcessor.all_actions_completed``).

            Sent as a control mail put first; does nothing once the mailbox is not open.
            """

    @abstractmethod
    def run_default_action(self, controller: MailboxDefaultAction.Controller) -> None:
        """Do one bounded unit of work; may suspend itself or finish through ``controller``."""

    def __call__(self, controller: MailboxDefaultAction.Controller) -> None:
        self.run_default_action(controller)


DefaultAction: TypeAlias = Callable[[MailboxDefaultAction.Controller], None]
"""What ``MailboxProcessor`` accepts as its default action: a :class:`MailboxDefaultAction`
instance or any function of the controller."""
