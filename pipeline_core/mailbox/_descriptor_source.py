"""``DescriptorSource``: a kernel descriptor the mailbox thread waits on beside its mail."""

from __future__ import annotations

from typing import Protocol

__all__ = ["DescriptorSource"]


class DescriptorSource(Protocol):
    """Something whose news is a readable descriptor (an inotify descriptor), served on the
    mailbox thread instead of by a thread of its own that would mail each piece of news.

    While waiting for mail, a :class:`TaskMailbox` with a source attached waits in ``poll`` on
    the source's descriptor too; when it is readable, :meth:`on_readable` runs on the mailbox
    thread and may put mails (they are taken next). One thread's wake-up is saved per piece of
    news: on a file written steadily, the file events' own thread cost a quarter of tailing's
    CPU.
    """

    def wait_descriptor(self, now: float) -> tuple[int | None, float | None]:
        """What to wait on now: the descriptor (None: none for now) and the
        ``time.monotonic()`` at which to ask again (None: not before the next wake-up)."""
        ...

    def on_readable(self) -> None:
        """The descriptor is readable (the mailbox thread): take what it says."""
        ...
