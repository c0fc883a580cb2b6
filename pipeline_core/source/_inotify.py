"""File events from Linux inotify (through ``inotify_simple``), on one thread."""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from inotify_simple import INotify
from inotify_simple import flags as inotify_flags

from pipeline_core.mailbox import DescriptorSource
from pipeline_core.source._file_events import FileChange, FileChanges, FileEvents
from pipeline_core.source._filesystems import remote_filesystem
from pipeline_core.source._watch_targets import WatchTarget

__all__ = ["InotifyFileEvents"]

log = logging.getLogger(__name__)

_READ_EVENTS = inotify_flags.MODIFY | inotify_flags.CLOSE_WRITE
_SCAN_EVENTS = (
    inotify_flags.CREATE
    | inotify_flags.MOVED_FROM
    | inotify_flags.MOVED_TO
    | inotify_flags.DELETE
    | inotify_flags.ATTRIB
)
_FOLDER_GONE = inotify_flags.DELETE_SELF | inotify_flags.MOVE_SELF | inotify_flags.IGNORED
WATCH_MASK = _READ_EVENTS | _SCAN_EVENTS | _FOLDER_GONE | inotify_flags.ONLYDIR
"""What a folder is watched for (``IN_Q_OVERFLOW`` always comes)."""

_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES})
"""``inotify_add_watch`` errors that mean the folder is not there to watch (yet)."""


_READ = FileChange.READ.value
_READ_AND_SCAN = (FileChange.READ | FileChange.SCAN).value
_SCAN = FileChange.SCAN.value


@dataclass
class _Pending:
    change: int = 0
    """``FileChange`` bits: the events of a busy folder are recorded one by one, an ``int``'s
    ``|`` is a machine operation where a ``Flag``'s is three calls."""
    written: set[str] = field(default_factory=set)
    folders: set[str] | None = field(default_factory=set)
    """Folders whose entries changed (None: not known which)."""


@dataclass
class _Watch:
    """One inotify watch (one folder inode), and every key's target on it by the folder's
    spelling (two spellings can lead to one folder)."""

    wd: int
    remote: str | None = None
    """The network or FUSE filesystem the folder is on (its files change without events)."""
    targets: dict[tuple[str, str], WatchTarget] = field(default_factory=dict)
    """``(key, folder as spelt)`` -> the key's target."""
    paths: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    """``(key, folder as spelt, name)`` -> the path a file event of the name records for the
    key, None if the target does not concern it: a busy file's events look it up instead of
    matching the target's patterns and joining and normalising its path each time. Emptied
    when a target changes, and when it holds :data:`_PATHS_KEPT`."""

    def set_target(self, key: str, folder: str, target: WatchTarget | None) -> None:
        """Set (None: remove) the key's target of the folder."""
        if target is None:
            self.targets.pop((key, folder), None)
        else:
            self.targets[(key, folder)] = target
        self.paths.clear()

    def path_of(self, key: str, folder: str, target: WatchTarget, name: str) -> str | None:
        """The path an event of file ``name`` records for the key, None if not concerned."""
        entry = (key, folder, name)
        try:
            return self.paths[entry]
        except KeyError:
            pass
        path = os.path.normpath(os.path.join(folder, name)) if target.concerns(name) else None
        if len(self.paths) >= _PATHS_KEPT:
            self.paths.clear()
        self.paths[entry] = path
        return path


_PATHS_KEPT = 4096
"""Entries of a watch's path cache (names seen in its folder) before it is emptied."""


class InotifyFileEvents(FileEvents):
    """Watches folders with one inotify descriptor and one thread, or none.

    The thread blocks in ``poll`` on the inotify descriptor and on a pipe that :meth:`close`
    writes to (with a ``wait_timeout`` so that it never blocks for good); it reads every
    event waiting, records them per key, and calls ``on_changes`` if nothing was recorded
    before. With ``settle`` it then waits that long before reading again, so that the
    writes of a busy file meanwhile come as one event (the kernel merges an event with the
    same one unread before it). With ``threaded=False`` there is no thread: the owner's
    mailbox waits on the descriptor (:meth:`descriptor_source`) and :meth:`on_readable` does
    the same on the owner's thread (``on_changes`` then runs there too).

    Events: ``IN_MODIFY``/``IN_CLOSE_WRITE`` of a concerned name record READ and the path;
    ``IN_CREATE``, ``IN_MOVED_FROM``/``IN_MOVED_TO``, ``IN_DELETE``, ``IN_ATTRIB`` record
    SCAN (and READ); so do folders appearing or going in a target with ``subfolders``. A
    watched folder deleted or moved away records SCAN for its keys and drops the watch (the
    owner watches it again once it is back). ``IN_Q_OVERFLOW`` (events were lost) records
    READ and SCAN for every key.

    A folder on a network or FUSE filesystem (:func:`remote_filesystem`) is watched but does
    not cover its keys (:meth:`watch` returns False, with one warning per filesystem): other
    machines' writes there raise no event.

    Threading model: :class:`FileEvents`'. The watch tables and what is recorded are guarded
    by one lock; a watch is added and entered in the tables under it, so the thread never
    sees an event of a watch it does not know yet.

    Raises:
        OSError: the inotify descriptor cannot be made (``EMFILE``: the user's
            ``max_user_instances`` are taken).
    """

    def __init__(
        self,
        on_changes: Callable[[], None],
        *,
        settle: float = 0.0,
        wait_timeout: float = 1.0,
        threaded: bool = True,
    ) -> None:
        self._on_changes = on_changes
        self._settle = settle
        self._wait_timeout = wait_timeout
        self._settled_at = 0.0  # without a thread: when the descriptor is waited on again
        self._inotify = INotify(nonblocking=True)
        self._stop_read, self._stop_write = os.pipe()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        # Guarded by _lock:
        self._watches: dict[int, _Watch] = {}  # by watch descriptor
        self._keys: dict[str, dict[str, tuple[int, WatchTarget]]] = {}  # key -> folder -> wd
        self._failed = False  # the thread ended on an error: every key is polled
        self._pending: dict[str, _Pending] = {}
        self._missing: dict[str, int] = {}  # key -> folders not there at its last watch
        self._remote_warned: set[str] = set()
        self._notified = False  # on_changes was called and nothing was taken since
        self._warned = False
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(
                target=self._run, name="sluice-file-events", daemon=True
            )
            self._thread.start()

    # -- without a thread: a source of the owner's mailbox -------------------------------------

    def descriptor_source(self) -> DescriptorSource | None:
        return self if self._thread is None else None

    def wait_descriptor(self, now: float) -> tuple[int | None, float | None]:
        """Without a thread (``threaded=False``): the inotify descriptor for the owner's
        mailbox to wait on, or none until ``settle`` has passed since the last events were
        taken in (:class:`~pipeline_core.mailbox.DescriptorSource`)."""
        if self._stopped.is_set() or self._failed:
            return None, None
        if now < self._settled_at:
            return None, self._settled_at
        return self._inotify.fileno(), None

    def on_readable(self) -> None:
        """Without a thread: read and record the events waiting, call ``on_changes`` as the
        thread would, and wait ``settle`` before looking at the descriptor again."""
        try:
            self._read_events()
        except Exception:
            self._fail()
        self._settled_at = time.monotonic() + self._settle

    # -- owner's thread ------------------------------------------------------------------------

    def watch(self, key: str, targets: Sequence[WatchTarget]) -> bool:
        with self._lock:
            if self._stopped.is_set() or self._failed:
                return False
            watched = self._keys.setdefault(key, {})
            wanted = {target.folder: target for target in targets}
            for folder in [f for f in watched if f not in wanted]:
                self._release(key, folder)
            covered = True
            missing = 0
            for folder, target in wanted.items():
                known = watched.get(folder)
                if known is not None and known[0] in self._watches:
                    if known[1] != target:
                        watched[folder] = (known[0], target)
                        self._watches[known[0]].set_target(key, folder, target)
                    if self._watches[known[0]].remote is not None:
                        covered = False
                    continue
                try:
                    wd = self._inotify.add_watch(folder, WATCH_MASK)
                except OSError as exc:
                    watched.pop(folder, None)
                    if exc.errno in _MISSING:
                        missing += 1
                    else:
                        covered = False
                        self._warn_once(folder, exc)
                    continue
                watch = self._watches.get(wd)
                if watch is None:
                    watch = self._watches[wd] = _Watch(wd, remote_filesystem(folder))
                    if watch.remote is not None:
                        self._warn_remote(folder, watch.remote)
                watch.set_target(key, folder, target)
                watched[folder] = (wd, target)
                if watch.remote is not None:
                    covered = False
            self._missing[key] = missing
            return covered

    def missing(self, key: str) -> int:
        with self._lock:
            return self._missing.get(key, 0)

    def unwatch(self, key: str) -> None:
        with self._lock:
            for folder in list(self._keys.get(key, {})):
                self._release(key, folder)
            self._keys.pop(key, None)
            self._pending.pop(key, None)
            self._missing.pop(key, None)

    def take(self) -> dict[str, FileChanges]:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._notified = False
        return {
            key: FileChanges(
                FileChange(item.change),
                frozenset(item.written),
                None if item.folders is None else frozenset(item.folders),
            )
            for key, item in pending.items()
        }

    def close(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b"x")
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            self._watches.clear()
            self._keys.clear()
            self._pending.clear()
        for fd in (self._stop_read, self._stop_write):
            os.close(fd)
        self._inotify.close()

    # -- internals (under the lock) ------------------------------------------------------------

    def _release(self, key: str, folder: str) -> None:
        wd, _ = self._keys[key].pop(folder)
        watch = self._watches.get(wd)
        if watch is None:
            return
        watch.set_target(key, folder, None)
        if not watch.targets:
            del self._watches[wd]
            with contextlib.suppress(OSError):  # the folder is gone: its watch is too
                self._inotify.rm_watch(wd)

    def _warn_remote(self, folder: str, filesystem: str) -> None:
        if filesystem in self._remote_warned:
            return
        self._remote_warned.add(filesystem)
        log.warning(
            "%s is on a %s filesystem, whose files other machines (or a daemon) change "
            "without file events: its pipelines' files are polled (read every 0.2 s, globbed "
            "every discovery_interval_s; said once per filesystem)",
            folder,
            filesystem,
        )

    def _warn_once(self, folder: str, exc: OSError) -> None:
        if self._warned:
            return
        self._warned = True
        limit = exc.errno in (errno.ENOSPC, errno.ENOMEM)
        hint = " (the inotify watch limit: raise fs.inotify.max_user_watches)" if limit else ""
        log.warning(
            "cannot watch %s for file events: %s%s; the folders not watched are polled: "
            "their pipelines' files are read every 0.2 s and globbed every "
            "discovery_interval_s, while the folders watched still wake reading at once "
            "(said once)",
            folder,
            exc,
            hint,
        )

    def _record(
        self,
        key: str,
        change: int,
        path: str | None = None,
        *,
        folder: str | None = None,
    ) -> None:
        """Record ``change`` (``FileChange`` bits) for ``key``: ``path`` written; with SCAN, the
        entries of ``folder`` changed (None: of any folder)."""
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending()
        pending.change |= change
        if path is not None:
            pending.written.add(path)
        if change & _SCAN and pending.folders is not None:
            if folder is None:
                pending.folders = None
            else:
                pending.folders.add(os.path.normpath(folder))

    def _dispatch(self, wd: int, mask: int, name: str) -> None:
        if mask & inotify_flags.Q_OVERFLOW:
            for key in self._keys:
                self._record(key, _READ_AND_SCAN)
            return
        watch = self._watches.get(wd)
        if watch is None:
            return  # a watch released meanwhile
        if mask & _FOLDER_GONE:
            for key, folder in list(watch.targets):
                self._record(key, _READ_AND_SCAN, folder=folder)
                self._keys[key].pop(folder, None)
            del self._watches[wd]
            if not mask & inotify_flags.IGNORED:
                with contextlib.suppress(OSError):  # moved away: events no longer fit its path
                    self._inotify.rm_watch(wd)
            return
        for (key, folder), target in watch.targets.items():
            if mask & inotify_flags.ISDIR:
                if target.subfolders and mask & _SCAN_EVENTS:
                    below = os.path.join(folder, name)  # the folder that came, moved or went
                    self._record(key, _READ_AND_SCAN, folder=below)
            elif (path := watch.path_of(key, folder, target, name)) is not None:
                if mask & _SCAN_EVENTS:
                    self._record(key, _READ_AND_SCAN, folder=folder)
                if mask & _READ_EVENTS:
                    self._record(key, _READ, path)

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._inotify.fileno(), select.POLLIN)
        poller.register(self._stop_read, select.POLLIN)
        timeout_ms = int(self._wait_timeout * 1000)
        # The settling wait watches the stop pipe alone: one system call, where an Event's
        # timed wait takes several and a lock made for it.
        settling = select.poll()
        settling.register(self._stop_read, select.POLLIN)
        settle_ms = math.ceil(self._settle * 1000)
        try:
            while not self._stopped.is_set():
                if not poller.poll(timeout_ms) or self._stopped.is_set():
                    continue
                if self._read_events() and settle_ms > 0:
                    settling.poll(settle_ms)
        except Exception:
            self._fail()

    def _read_events(self) -> bool:
        """Read and record every event waiting; call ``on_changes`` if nothing was waiting
        to be taken. False when there was no event."""
        events = self._inotify.read(timeout=0)
        if not events:
            return False
        with self._lock:
            if self._stopped.is_set():
                return True
            for event in events:
                self._dispatch(event.wd, event.mask, event.name)
            notify = bool(self._pending) and not self._notified
            if notify:
                self._notified = True
        if notify:
            self._notify()
        return True

    def _fail(self) -> None:
        """Events can no longer be read: every key is to be polled, and is scanned now."""
        log.exception("file events stopped; every pipeline is polled from now on")
        with self._lock:
            self._failed = True
            for key in self._keys:
                self._record(key, _READ_AND_SCAN)
            self._notified = True
        self._notify()

    def _notify(self) -> None:
        try:
            self._on_changes()
        except Exception:
            log.exception("file events: the owner could not be told of changes")
