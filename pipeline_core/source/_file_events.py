"""File events: being told that a pipeline's files changed instead of looking every so often.

::

    kernel (inotify) --events--> one thread per collector, blocked on the inotify descriptor
        --coalesced per pipeline: READ (a file was written), SCAN (files came, moved, went)-->
        on_changes() (at most once until the next take) --the collector mails itself-->
        mailbox thread: take() -> resume reading the pipelines written to; scan the others soon

A :class:`FileEvents` watches folders for keys (a collector's pipeline names). When something
happens to a watched entry it records a :class:`FileChanges` for each key concerned, and calls
``on_changes`` if nothing was waiting yet; the owner then calls :meth:`FileEvents.take` (on its
own thread) to get and clear everything recorded. However many writes there are, at most one
``on_changes`` is outstanding at a time, and each key has one record.

:func:`open_file_events` gives :class:`~pipeline_core.source.InotifyFileEvents` on Linux, or
:class:`PollingFileEvents` (no events: the owner polls) where inotify is missing or its limits
are reached, with one warning.
"""

from __future__ import annotations

import logging
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Flag, auto

from pipeline_core.mailbox import DescriptorSource
from pipeline_core.source._watch_targets import WatchTarget

__all__ = ["FileChange", "FileChanges", "FileEvents", "PollingFileEvents", "open_file_events"]

log = logging.getLogger(__name__)


class FileChange(Flag):
    """What a key's watched folders saw."""

    NONE = 0
    READ = auto()
    """A watched file was written or truncated: there may be something to read."""
    SCAN = auto()
    """Entries appeared, were renamed, removed or changed their attributes (or events were
    lost): the key's files should be discovered again."""


@dataclass(frozen=True, slots=True)
class FileChanges:
    """Everything recorded for one key since the last take."""

    change: FileChange
    written: frozenset[str]
    """Paths (``os.path.normpath`` of folder and name) of the files written."""
    folders: frozenset[str] | None = frozenset()
    """With SCAN: the folders (``os.path.normpath``) whose entries changed, or that appeared
    or went; None when it is not known which (events were lost): every folder may have."""


class FileEvents(ABC):
    """A source of file events for a collector.

    Threading model: :meth:`watch`, :meth:`unwatch`, :meth:`take` and :meth:`close` are for
    the owner's thread (the collector's mailbox thread). ``on_changes``, given at creation, is
    called on the implementation's own thread: it must only hand over (send a mail), never
    call back into the pipelines.

    Lifecycle: created running; :meth:`close` stops it for good (idempotent), after which
    ``on_changes`` is not called again.
    """

    @abstractmethod
    def watch(self, key: str, targets: Sequence[WatchTarget]) -> bool:
        """Watch ``targets`` for ``key``, instead of what it watched before.

        Folders that do not exist are skipped (watch again once they do). Returns whether
        events cover ``key``: False when a folder could not be watched for another reason
        (limits reached) or events are not available at all; the owner must then poll.
        """

    def missing(self, key: str) -> int:
        """How many folders of ``key``'s last :meth:`watch` were not there to watch (or not
        readable): what appears in them raises no event, only a glob finds it."""
        return 0

    @abstractmethod
    def unwatch(self, key: str) -> None:
        """Stop watching for ``key`` and drop what was recorded for it."""

    @abstractmethod
    def take(self) -> dict[str, FileChanges]:
        """What was recorded since the last take, by key, and clear it; the next event after
        this calls ``on_changes`` again."""

    @abstractmethod
    def close(self) -> None:
        """Stop watching and release the kernel's resources."""

    def descriptor_source(self) -> DescriptorSource | None:
        """What the owner's mailbox waits on for these events when they have no thread of
        their own (``open_file_events(..., threaded=False)``); None when they need none."""
        return None


class PollingFileEvents(FileEvents):
    """No events at all: every key must be polled."""

    def watch(self, key: str, targets: Sequence[WatchTarget]) -> bool:
        return False

    def unwatch(self, key: str) -> None:
        pass

    def take(self) -> dict[str, FileChanges]:
        return {}

    def close(self) -> None:
        pass


def open_file_events(
    on_changes: Callable[[], None], *, settle: float = 0.0, threaded: bool = True
) -> FileEvents:
    """Inotify-driven events where the platform has them, else :class:`PollingFileEvents`
    (one warning saying why). ``settle`` and ``threaded``: see
    :class:`~pipeline_core.source.InotifyFileEvents`."""
    if not sys.platform.startswith("linux"):
        log.warning("file events need Linux inotify (this is %s): polling files", sys.platform)
        return PollingFileEvents()
    try:
        from pipeline_core.source._inotify import InotifyFileEvents

        return InotifyFileEvents(on_changes, settle=settle, threaded=threaded)
    except (ImportError, OSError, AttributeError) as exc:
        # EMFILE: the user's max_user_instances are taken; ENOSYS: no inotify in the kernel.
        log.warning("inotify is not available (%s): polling files", exc)
        return PollingFileEvents()
