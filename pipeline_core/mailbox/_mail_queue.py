"""``MailQueue``: the mails of a :class:`TaskMailbox` not yet taken, in its queue and its batch."""

from __future__ import annotations

from collections import deque

from ._mail import MAX_PRIORITY, MIN_PRIORITY, Mail

__all__ = ["MailQueue"]


class MailQueue:
    """The mails not yet taken, in run order: first the *batch*, the mails the mailbox thread
    moved out of the queue (:meth:`create_batch`) to pop them without the lock, then the
    *queue*, in put order. ``has_new_mail`` says whether the queue holds any.

    Threading model:
        It has no lock of its own: its :class:`TaskMailbox` holds the mailbox lock around every
        call but :meth:`take_from_batch`, :meth:`has_batch` and reads of ``has_new_mail``
        (written under the lock, read without it: it may be stale), which the mailbox thread
        makes without it. The queue is touched only under the lock. The batch belongs to the
        mailbox thread; other threads touch it (``close`` drains it, ``put_first``) only under
        the lock and with single atomic deque operations, so each mail is either taken by the
        mailbox thread or dropped by ``close``, never both.
    """

    def __init__(self) -> None:
        self._queue: deque[Mail] = deque()
        self._batch: deque[Mail] = deque()
        self.has_new_mail = False
        """``bool`` of the queue (not the batch)."""
        self.has_urgent_mail = False
        """A mail of :data:`MAX_PRIORITY` was put in the queue since the last batch was made."""

    @property
    def queued(self) -> int:
        """Mails in the queue."""
        return len(self._queue)

    @property
    def batched(self) -> int:
        """Mails in the batch."""
        return len(self._batch)

    def has_batch(self) -> bool:
        return bool(self._batch)

    def put(self, mail: Mail) -> None:
        """Append ``mail`` to the queue."""
        self._queue.append(mail)
        self.has_new_mail = True
        if mail.priority == MAX_PRIORITY:
            self.has_urgent_mail = True

    def put_first_in_queue(self, mail: Mail) -> None:
        """Put ``mail`` at the head of the queue (behind the batch)."""
        self._queue.appendleft(mail)
        self.has_new_mail = True

    def put_first_in_batch(self, mail: Mail) -> None:
        """Put ``mail`` at the head of the batch: the very next mail taken."""
        self._batch.appendleft(mail)

    def create_batch(self) -> None:
        """Move every queued mail to the end of the batch."""
        self._batch.extend(self._queue)
        self._queue.clear()
        self.has_new_mail = False
        self.has_urgent_mail = False

    def take_from_batch(self) -> Mail | None:
        """Pop the head of the batch; ``None`` when the batch is empty."""
        try:
            return self._batch.popleft()
        except IndexError:
            return None

    def take(self, priority: int) -> Mail | None:
        """Remove and return the first mail of at least ``priority``, the batch searched before
        the queue; ``None`` when none qualifies."""
        mail = _take_or_none(self._batch, priority)
        if mail is None:
            mail = _take_or_none(self._queue, priority)
            if mail is not None:
                self.has_new_mail = bool(self._queue)
        return mail

    def drain(self) -> list[Mail]:
        """Remove and return every mail, batch first, then queue."""
        drained: list[Mail] = []
        batch = self._batch
        while batch:  # one atomic pop at a time: the owner may pop concurrently
            try:
                drained.append(batch.popleft())
            except IndexError:
                break
        drained.extend(self._queue)
        self._queue.clear()
        self.has_new_mail = False
        self.has_urgent_mail = False
        return drained


def _take_or_none(mails: deque[Mail], priority: int) -> Mail | None:
    """Remove and return the first mail of at least ``priority`` from ``mails``, if any."""
    if not mails:
        return None
    if priority <= MIN_PRIORITY:
        return mails.popleft()
    for index, mail in enumerate(mails):
        if mail.priority >= priority:
            del mails[index]
            return mail
    return None
