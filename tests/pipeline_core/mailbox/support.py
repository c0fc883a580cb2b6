"""Stubs shared by the mailbox tests: worker threads, scripted default actions, lock holders."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

from pipeline_core.mailbox import MIN_PRIORITY, Mail, MailboxDefaultAction, TaskMailbox

JOIN_TIMEOUT = 10.0

_T = TypeVar("_T")


class Worker(Generic[_T]):
    """A thread running ``target`` that keeps its result or exception for :meth:`join`.

    The thread object exists before :meth:`start`, so it can be given to
    ``TaskMailbox(owner_thread=worker.thread)`` first.
    """

    def __init__(self, target: Callable[[], _T], name: str = "worker") -> None:
        self._target = target
        self._result: _T | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            self._result = self._target()
        except BaseException as exc:
            self._error = exc

    def start(self) -> Worker[_T]:
        self.thread.start()
        return self

    def join(self, timeout: float = JOIN_TIMEOUT) -> _T:
        """Wait for the thread; re-raise its exception or return its result."""
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.thread.name} still running after {timeout}s"
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def join_error(self, timeout: float = JOIN_TIMEOUT) -> BaseException:
        """Wait for the thread and return the exception it raised (fails if none)."""
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.thread.name} still running after {timeout}s"
        assert self._error is not None, f"{self.thread.name} returned {self._result!r}"
        return self._error


def after(delay: float, action: Callable[[], object], name: str = "later") -> Worker[None]:
    """Start a thread that sleeps ``delay`` seconds, then calls ``action``."""

    def sleep_then_act() -> None:
        time.sleep(delay)
        action()

    return Worker(sleep_then_act, name=name).start()


def run_on_other_thread(target: Callable[[], _T]) -> _T:
    """Run ``target`` on a fresh thread, wait, and return its result (or raise its error)."""
    return Worker(target, name="other").start().join()


def mail(
    action: Callable[[], object] = lambda: None,
    priority: int = MIN_PRIORITY,
    description: str = "test mail",
) -> Mail:
    return Mail(action, priority, description)


def logging_mail(log: list[object], value: object, priority: int = MIN_PRIORITY) -> Mail:
    """A mail that appends ``value`` to ``log`` when run; its description is ``str(value)``."""
    return Mail(lambda: log.append(value), priority, "%s", value)


Step = Callable[[MailboxDefaultAction.Controller], None]
"""One scripted call of a default action."""


class ScriptedAction(MailboxDefaultAction):
    """A default action counting its calls and running ``script[n]`` on call ``n`` (if any).

    After the script runs out it calls ``otherwise`` (default: do nothing). With ``log``, each
    call appends ``"action#<n>"`` to it, so tests can interleave it with mails.
    """

    def __init__(
        self,
        *script: Step,
        otherwise: Step | None = None,
        log: list[object] | None = None,
    ) -> None:
        self.script = list(script)
        self.otherwise = otherwise
        self.log = log
        self.calls = 0

    def run_default_action(self, controller: MailboxDefaultAction.Controller) -> None:
        call = self.calls
        self.calls += 1
        if self.log is not None:
            self.log.append(f"action#{call}")
        if call < len(self.script):
            self.script[call](controller)
        elif self.otherwise is not None:
            self.otherwise(controller)


def noop(controller: MailboxDefaultAction.Controller) -> None:
    pass


def suspend(controller: MailboxDefaultAction.Controller) -> None:
    controller.suspend_default_action()


def complete(controller: MailboxDefaultAction.Controller) -> None:
    controller.all_actions_completed()


class LockHolder:
    """Holds ``mailbox``'s lock on another thread (through ``run_exclusively``) while open.

    Code that must not take the lock keeps running; code that takes it blocks until exit.
    """

    def __init__(self, mailbox: TaskMailbox) -> None:
        self._mailbox = mailbox
        self._holding = threading.Event()
        self._release = threading.Event()
        self._worker = Worker(self._hold, name="lock-holder")

    def _hold(self) -> None:
        def hold() -> None:
            self._holding.set()
            self._release.wait(JOIN_TIMEOUT)

        self._mailbox.run_exclusively(hold)

    def __enter__(self) -> LockHolder:
        self._worker.start()
        assert self._holding.wait(JOIN_TIMEOUT)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release.set()
        self._worker.join()
