"""``TaskMailbox``: the locked mailbox (its mails in a ``MailQueue``) owned by one thread."""

from __future__ import annotations

import contextlib
import enum
import math
import os
import select
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from ._descriptor_source import DescriptorSource
from ._exceptions import IllegalThreadError, MailboxClosedException
from ._mail import Mail
from ._mail_queue import MailQueue

__all__ = ["TaskMailbox"]

_T = TypeVar("_T")


class MailboxState(enum.Enum):
    """Lifecycle of a :class:`TaskMailbox`: ``OPEN`` → ``QUIESCED`` → ``CLOSED``, only forward.

    ``OPEN`` accepts puts and takes. ``QUIESCED`` (:meth:`TaskMailbox.quiesce`) refuses puts
    with :class:`MailboxClosedException` but still hands out the mails already in. ``CLOSED``
    (:meth:`TaskMailbox.close`) drops every mail, cancels their futures and makes every put and
    take raise :class:`MailboxClosedException`, including a take that was blocked.
    """

    OPEN = "open"
    QUIESCED = "quiesced"
    CLOSED = "closed"

    def is_accepting_mails(self) -> bool:
        return self is MailboxState.OPEN


class TaskMailbox:
    """A mailbox of :class:`Mail` with many producers and one consumer, the mailbox thread.

    Mails are kept in put order in a :class:`MailQueue` guarded by one lock; the mailbox thread
    moves them in bulk into its *batch* (:meth:`create_batch`) and then pops them from the batch
    without the lock (:meth:`try_take_from_batch`). A ``has_new_mail`` flag, written under the
    lock and read without it, lets the mailbox thread see that nothing arrived without locking.

    Threading model:
        The owner (mailbox) thread is fixed at construction: ``owner_thread``, or the
        constructing thread. These methods check the caller and raise
        :class:`IllegalThreadError` from any other thread: :meth:`take`, :meth:`try_take`,
        :meth:`create_batch`, :meth:`try_take_from_batch`, :meth:`has_mail`, :meth:`drain` and
        :meth:`quiesce`. These may be called from any thread: :meth:`put`, :meth:`wake`,
        :meth:`put_first` (which behaves differently on the owner thread, see there),
        :meth:`run_exclusively`, :meth:`size`, :attr:`state`, :attr:`has_new_mail`,
        :meth:`is_mailbox_thread`, :meth:`check_mailbox_thread` and :meth:`close`. ``close``
        is allowed off the owner thread because Python cannot interrupt a blocked thread:
        closing is how another thread wakes a mailbox thread blocked in :meth:`take`.

        Guarded by the (re-entrant) lock: the queue, the state, the waiting-taker count.
        Owner-thread only: the batch (``close`` and ``put_first`` also touch it, see
        :class:`MailQueue`).

    Lifecycle: see :class:`MailboxState`.
    """

    def __init__(self, owner_thread: threading.Thread | None = None) -> None:
        self._owner_thread = (
            owner_thread if owner_thread is not None else threading.current_thread()
        )
        self._owner_ident = self._owner_thread.ident
        """The owner's identity while it runs (None before it starts): what the checks on
        every call compare with, one built-in call instead of finding the current thread's
        object (they come some fifty times a wake-up)."""
        self._lock = threading.RLock()
        self._not_empty = threading.Condition(self._lock)
        self._mails = MailQueue()  # its queue guarded by _lock, its batch the owner's
        self._state = MailboxState.OPEN  # guarded by _lock (read without it)
        self._takers_waiting = 0  # guarded by _lock
        self._source: DescriptorSource | None = None  # the owner's
        self._wake_pipe: tuple[int, int] | None = None  # made by attach_source
        self._poller: select.poll | None = None  # the owner's: the wake pipe and the source's
        self._polled: int | None = None  # the source's descriptor registered in _poller
        self._polling = False  # guarded by _lock: the owner waits in poll, not on _not_empty

    # -- any thread ---------------------------------------------------------------------------

    @property
    def owner_thread(self) -> threading.Thread:
        return self._owner_thread

    @property
    def state(self) -> MailboxState:
        return self._state

    @property
    def has_new_mail(self) -> bool:
        """True when mail is in the queue (not the batch); read without the lock, may be stale."""
        return self._mails.has_new_mail

    @property
    def has_urgent_mail(self) -> bool:
        """True when a mail of :data:`MAX_PRIORITY` was put since the mailbox thread last made
        a batch; read without the lock, may be stale. A long default action ends its turn
        early for it (a checkpoint waits for no read slice)."""
        return self._mails.has_urgent_mail

    def is_mailbox_thread(self) -> bool:
        """True when called on the owner thread."""
        if threading.get_ident() == self._owner_ident:
            return True
        self._owner_ident = self._owner_thread.ident  # started since, or another thread
        return threading.current_thread() is self._owner_thread

    def check_mailbox_thread(self, what: str) -> None:
        """Return when called on the owner thread; raise on any other.

        For code whose state belongs to the mailbox thread: a mail handler calls it first, so
        a handler called directly from another thread fails at once instead of racing.

        Raises:
            IllegalThreadError: naming ``what``, the owner thread and the calling thread.
        """
        if threading.get_ident() != self._owner_ident:
            self._owner_ident = self._owner_thread.ident  # started since, or another thread
            _require_thread(self._owner_thread, what)

    def put(self, mail: Mail, *, wake: bool = True) -> None:
        """Append ``mail`` to the queue and wake the mailbox thread if it waits.

        With ``wake=False`` a waiting mailbox thread is left asleep: the mail runs, in its
        order, when the thread next looks at its mailbox (woken by another mail or
        :meth:`wake`, at the end of a timed wait, or between two turns of its default action).
        News that only needs to be taken in before the next decision (acks) is put so: a mail
        that woke the thread for each would cost more than the work it brings.

        Raises:
            MailboxClosedException: the mailbox is ``QUIESCED`` or ``CLOSED``.
        """
        mail.put_time = time.perf_counter()
        with self._lock:
            self._check_put_allowed()
            self._mails.put(mail)
            if wake and self._takers_waiting:
                self._notify()

    def wake(self) -> None:
        """Wake the mailbox thread if it waits (for mail put without waking it)."""
        with self._lock:
            if self._takers_waiting and self._mails.has_new_mail:
                self._notify()

    def put_first(self, mail: Mail) -> None:
        """Put ``mail`` ahead of everything not yet taken that it can overtake.

        On the mailbox thread the mail goes to the head of the current batch, so it is the
        very next mail taken. From another thread it goes to the head of the queue (behind the
        batch the mailbox thread already holds) and wakes the mailbox thread.

        Raises:
            MailboxClosedException: the mailbox is ``QUIESCED`` or ``CLOSED``.
        """
        mail.put_time = time.perf_counter()
        with self._lock:
            self._check_put_allowed()
            if self.is_mailbox_thread():
                self._mails.put_first_in_batch(mail)
            else:
                self._mails.put_first_in_queue(mail)
                if self._takers_waiting:
                    self._notify()

    def run_exclusively(self, action: Callable[[], _T]) -> _T:
        """Run ``action`` holding the mailbox lock and return its result.

        No put, take or lifecycle change can interleave with it, so it can check the state and
        put atomically. The lock is re-entrant: ``action`` may call :meth:`put`/:meth:`put_first`.
        """
        with self._lock:
            return action()

    def size(self) -> int:
        """Mails not yet taken, in the queue and the batch."""
        with self._lock:
            return self._mails.queued + self._mails.batched

    def close(self) -> list[Mail]:
        """Close the mailbox; return the dropped mails, in run order, with futures cancelled.

        Wakes a mailbox thread blocked in :meth:`take` (it raises
        :class:`MailboxClosedException`). Idempotent: a second call returns an empty list.
        """
        with self._lock:
            if self._state is MailboxState.CLOSED:
                return []
            dropped = self._mails.drain()
            self._state = MailboxState.CLOSED
            self._not_empty.notify_all()
            if self._polling:
                self._notify()
        for mail in dropped:
            mail.try_cancel()
        return dropped

    # -- owner thread -------------------------------------------------------------------------

    def attach_source(self, source: DescriptorSource) -> None:
        """Wait on ``source``'s descriptor too whenever waiting for mail (see
        :class:`DescriptorSource`); one source at most, for the mailbox's life. Wake-ups from
        other threads then go through a pipe instead of the condition.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            ValueError: a source is attached already.
        """
        self._check_is_mailbox_thread("attach_source")
        if self._source is not None:
            raise ValueError("a descriptor source is attached already")
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._wake_pipe = (read, write)
        self._poller = select.poll()
        self._poller.register(read, select.POLLIN)
        self._polled = None
        self._source = source

    def detach_source(self) -> None:
        """Stop waiting on the attached source (if any) and close the wake pipe.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        self._check_is_mailbox_thread("detach_source")
        with self._lock:
            pipe, self._wake_pipe, self._source = self._wake_pipe, None, None
            self._poller = self._polled = None
        if pipe is not None:
            for end in pipe:
                os.close(end)

    def take(self, priority: int) -> Mail:
        """Take the first mail whose priority is at least ``priority``, waiting for one.

        The batch is searched before the queue. Waiting releases the lock.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is (or becomes, while waiting) ``CLOSED``.
        """
        self._check_is_mailbox_thread("take")
        mail = self._wait_for_mail(priority, None)
        assert mail is not None  # without a deadline it only returns with a mail
        return mail

    def poll(self, priority: int, timeout: float) -> Mail | None:
        """Like :meth:`take` but give up after ``timeout`` seconds and return ``None``.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is (or becomes, while waiting) ``CLOSED``.
        """
        self._check_is_mailbox_thread("poll")
        return self._wait_for_mail(priority, time.monotonic() + timeout)

    def _wait_for_mail(self, priority: int, deadline: float | None) -> Mail | None:
        """The first qualifying mail, waiting for one until ``deadline`` (monotonic; ``None``:
        forever); ``None`` once the deadline passed."""
        while True:
            with self._lock:
                if self._state is MailboxState.CLOSED:
                    raise _closed_to_takes()
                mail = self._mails.take(priority)
                if mail is not None:
                    return mail
                now = time.monotonic()
                remaining = None if deadline is None else deadline - now
                if remaining is not None and remaining <= 0:
                    return None
                if self._source is None:
                    self._takers_waiting += 1
                    try:
                        self._not_empty.wait(remaining)
                    finally:
                        self._takers_waiting -= 1
                    continue
                descriptor, ask_again = self._source.wait_descriptor(now)
                if ask_again is not None:
                    until = max(ask_again - now, 0.0)
                    remaining = until if remaining is None else min(remaining, until)
                self._takers_waiting += 1
                self._polling = True
            self._poll(descriptor, remaining)

    def _poll(self, descriptor: int | None, timeout: float | None) -> None:
        """Wait, without the lock, for the wake pipe, ``descriptor`` or ``timeout``; serve
        the source if its descriptor is readable."""
        pipe, poller = self._wake_pipe, self._poller
        assert pipe is not None and poller is not None
        if descriptor != self._polled:  # registered once, not at every wait
            if self._polled is not None:
                poller.unregister(self._polled)
            if descriptor is not None:
                poller.register(descriptor, select.POLLIN)
            self._polled = descriptor
        try:
            ready = poller.poll(None if timeout is None else math.ceil(max(timeout, 0.0) * 1000))
        finally:
            with self._lock:
                self._takers_waiting -= 1
                self._polling = False
        readable = False
        for fd, _ in ready:
            if fd == pipe[0]:
                with contextlib.suppress(BlockingIOError):
                    os.read(pipe[0], 4096)
            else:
                readable = True
        if readable and self._source is not None:
            self._source.on_readable()

    def try_take(self, priority: int) -> Mail | None:
        """Like :meth:`take` but return ``None`` at once when no mail qualifies.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is ``CLOSED``.
        """
        self._check_is_mailbox_thread("try_take")
        if self._state is MailboxState.CLOSED:
            raise _closed_to_takes()
        if not self._mails.has_batch() and not self._mails.has_new_mail:
            return None
        with self._lock:
            if self.state is MailboxState.CLOSED:  # read again: closed meanwhile
                raise _closed_to_takes()
            return self._mails.take(priority)

    def has_mail(self) -> bool:
        """True when any mail is waiting, in the batch or the queue (no lock taken).

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        self._check_is_mailbox_thread("has_mail")
        return self._mails.has_batch() or self._mails.has_new_mail

    def create_batch(self) -> bool:
        """Move every queued mail to the end of the batch; true if the batch is not empty.

        Takes the lock only when ``has_new_mail`` is set, so the call is lock-free while
        nothing arrives.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is ``CLOSED`` (so a busy loop notices a
                ``close()`` from another thread after its current default action).
        """
        self._check_is_mailbox_thread("create_batch")
        if self._state is MailboxState.CLOSED:
            raise _closed_to_takes()
        if not self._mails.has_new_mail:
            return self._mails.has_batch()
        with self._lock:
            self._mails.create_batch()
        return self._mails.has_batch()

    def try_take_from_batch(self) -> Mail | None:
        """Pop the head of the batch without the lock; ``None`` when the batch is empty.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
            MailboxClosedException: the mailbox is ``CLOSED``.
        """
        self._check_is_mailbox_thread("try_take_from_batch")
        if self._state is MailboxState.CLOSED:
            raise _closed_to_takes()
        return self._mails.take_from_batch()

    def drain(self) -> list[Mail]:
        """Remove and return every mail (batch first, then queue) without running them.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        self._check_is_mailbox_thread("drain")
        with self._lock:
            return self._mails.drain()

    def quiesce(self) -> None:
        """Refuse further puts; mails already in can still be taken. No-op unless ``OPEN``.

        Raises:
            IllegalThreadError: not called on the mailbox thread.
        """
        self._check_is_mailbox_thread("quiesce")
        with self._lock:
            if self._state is MailboxState.OPEN:
                self._state = MailboxState.QUIESCED

    # -- internals ----------------------------------------------------------------------------

    def _notify(self) -> None:
        """Wake the owner waiting for mail (under the lock)."""
        if self._polling and self._wake_pipe is not None:
            with contextlib.suppress(BlockingIOError):  # full of wake-ups already
                os.write(self._wake_pipe[1], b"m")
        else:
            self._not_empty.notify()

    def _check_put_allowed(self) -> None:
        state = self._state
        if state is not MailboxState.OPEN:
            raise MailboxClosedException(f"mailbox is {state.name}: it accepts no more mail")

    def _check_is_mailbox_thread(self, method: str) -> None:
        if threading.get_ident() != self._owner_ident:
            self.check_mailbox_thread(f"TaskMailbox.{method}()")

    def __repr__(self) -> str:
        return (
            f"TaskMailbox(state={self._state.name}, owner={self._owner_thread.name!r}, "
            f"queued={self._mails.queued}, batch={self._mails.batched})"
        )


def _require_thread(owner: threading.Thread, what: str) -> None:
    current = threading.current_thread()
    if current is not owner:
        raise IllegalThreadError(
            f"{what} must be called on the mailbox thread {owner.name!r}, not on {current.name!r}"
        )


def _closed_to_takes() -> MailboxClosedException:
    """What a take raises once the mailbox is ``CLOSED`` (each take tests the state itself: the
    test alone is cheaper than a call, and comes at every take)."""
    return MailboxClosedException("mailbox is CLOSED: no mail can be taken")
