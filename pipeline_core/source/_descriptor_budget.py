"""The descriptors a pipeline's tracked files hold: which are closed for now, which reopened.

With ``close_idle_after`` a LIVE file neither read nor grown for that long is *released*: its
descriptor is closed, its identity (device, inode, first bytes) and offsets are kept. With
``max_open_files`` at most that many of the pipeline's files are open after a scan: beyond it
the files read to their end and idle longest are released first, and a file found with nothing
open for it waits, released, for a descriptor (a file read to its end gives its own up for one
with unread bytes). A released file is opened again by identity when a scan finds it changed
(another size or path) or a descriptor is free for its unread bytes, or at once when it is
written (:meth:`FileWatcher.wake`, on a file event); the scan then compares its first bytes and
the bytes before its read offset, as for any file, so a rename, a copytruncate or a cut while
it was closed is told as the watcher's rules say (``_known_files``), and it is read on from its
read offset. Never released: a ROTATED or COPIED file (they are read, or claimed, through their
descriptor) and a multiline file holding an event back (it is handed on at its
``flush_after``). :meth:`DescriptorBudget.looked_at` remembers each look, so that a scan looks
again only at the files whose size or path changed, or that were read, since.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os

from pipeline_core._file_names import shown_path
from pipeline_core.source._content_change import ContentChange, content_change
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_registry import FileRegistry
from pipeline_core.source._tracked_file import HEAD_BYTES, TrackedFile, open_regular

log = logging.getLogger("pipeline_core.source._tracked_file")
"""The tracked file's logger: what reopening a file says is said of the file."""

_LINE_LOOK_BYTES = 64 * 1024
"""How far past its read offset a file being released is looked at for a line's end (more
unread bytes than this are taken to hold one: see :attr:`TrackedFile.waiting`)."""
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EMFILE, errno.ENFILE})
"""Why a released file cannot be opened again that is no news: gone, a symlink now (the scan
says so), or no descriptor free for now."""


class DescriptorBudget:
    """Keeps a pipeline's open descriptors within ``max_open_files`` and closes those of files
    idle for ``close_idle_after`` (see the module's docstring); neither set: it only remembers
    the watcher's looks at its files.

    During a scan (between :meth:`start_scan` and :meth:`settle`) it counts the descriptors
    open, as far as the bound is concerned, and gives the file read to its end and idle
    longest up for each file the scan opens beyond the bound.

    Threading model: owned by the :class:`FileWatcher`, on the collector's mailbox thread;
    not thread-safe.
    """

    def __init__(
        self,
        files: FileRegistry,
        signature_bytes: int,
        *,
        max_open_files: int | None = None,
        close_idle_after: float | None = None,
    ) -> None:
        self._files = files
        self._signature_bytes = signature_bytes
        self._max_open = max_open_files
        self._idle_after = close_idle_after
        self._opened = 0
        """While a scan runs: the descriptors open, as far as the bound is concerned."""
        self._pool: list[TrackedFile] | None = None
        """While a scan runs: the files that may give their descriptor up (:meth:`_make_room`)."""
        self.waiting = False
        """At the last scan, some released file had whole lines unread and waited for a
        descriptor: the next scan hands it one if a file read to its end can give its own up."""

    @property
    def open_files(self) -> int:
        """How many of the tracked files hold a descriptor now."""
        return sum(1 for f in self._files.files if f.fd is not None)

    def start_scan(self) -> None:
        """A scan begins: count the descriptors open."""
        self._opened = self.open_files if self._max_open is not None else 0

    def end_scan(self) -> None:
        """A scan ended (or failed): its pool of files to release is dropped."""
        self._pool = None

    def looked_at(self, tracked: TrackedFile, size: int, now: float) -> None:
        """``tracked`` was found still this file, ``size`` bytes: remember it as checked, and
        when it was last active: now if it grew (or is new here); read since the last look
        without growing, as of that look (what it read was there then: it has been idle
        since, as far as its writer goes)."""
        if tracked.active_at is None or size != tracked.checked_size:
            tracked.active_at = now
        elif tracked.read_offset != tracked.checked_offset and tracked.checked_at is not None:
            tracked.active_at = max(tracked.active_at, tracked.checked_at)
        tracked.checked_size = size
        tracked.checked_offset = tracked.read_offset
        tracked.checked_at = now
        if not tracked.head and tracked.fd is not None:
            with contextlib.suppress(OSError):
                tracked.head = os.pread(tracked.fd, HEAD_BYTES, 0)

    def room_for_probe(self, now: float) -> None:
        """During a scan, at ``max_open_files``: make room for a probe of a new file (whose
        descriptor is the new file's if it is one), if a file can give its own up."""
        if self._max_open is not None and self._opened >= self._max_open:
            self._make_room(now)

    def keep_within_bound(self, tracked: TrackedFile, now: float) -> None:
        """``tracked`` was just opened by this scan: at ``max_open_files``, the file read to
        its end and idle longest gives its descriptor up for it; if none can, ``tracked`` is
        released at once (with unread bytes, it waits for a descriptor: see :meth:`settle`)."""
        if self._max_open is None or tracked.fd is None or not releasable(tracked):
            return
        if self._opened < self._max_open or self._make_room(now, exclude=tracked):
            self._opened += 1
        else:
            self._release(tracked)
            self.waiting = self.waiting or tracked.waiting

    def room_for(self, tracked: TrackedFile, now: float) -> bool:
        """Outside a scan: a descriptor for ``tracked`` (released, written) to be opened with:
        at ``max_open_files`` the file read to its end (its size now, not at its last read)
        and idle longest gives its own up; False if none can."""
        if self._max_open is None or self.open_files < self._max_open:
            return True
        for victim in self._victims(now, exclude=tracked):
            # Its sizes are those of its last read: it may have been written since (its event
            # taken a moment ago). Released with lines unread, it would wait for the next
            # whole scan (file_events_fallback_s) with nothing to hand it a descriptor.
            try:
                size = victim.size()
            except OSError:
                continue
            if victim.read_offset < size:
                continue
            release_descriptor(victim, size)
            return True
        return False

    def settle(self, now: float) -> None:
        """After a scan: release the files idle for ``close_idle_after``; then, within
        ``max_open_files``, give the released files that wait with unread bytes the free
        descriptors and those of open files read to their end (idle longest first); then
        say whether a file still waits (:attr:`waiting`)."""
        self._balance(now)
        self.waiting = any(waits(f) for f in self._files.files)

    def _balance(self, now: float) -> None:
        if self._idle_after is not None:
            for tracked in self._files.files:
                if (
                    tracked.fd is not None
                    and releasable(tracked)
                    and tracked.active_at is not None
                    and now - tracked.active_at >= self._idle_after
                ):
                    self._release(tracked)
        if self._max_open is None:
            return
        opened = self.open_files
        victims = self._victims(now)
        while opened > self._max_open and victims:
            self._release(victims.pop(0))
            opened -= 1
        for tracked in [f for f in self._files.files if waits(f)]:
            if opened >= self._max_open:
                if not victims:
                    break
                self._release(victims.pop(0))
                opened -= 1
            if not reopen(tracked):
                continue
            opened += 1
            tracked.active_at = now
            if content_change(tracked, self._signature_bytes) is not ContentChange.SAME:
                tracked.checked_size = -1  # changed after all: the next scan looks at it

    def _make_room(self, now: float, exclude: TrackedFile | None = None) -> bool:
        """During a scan, at ``max_open_files``: release the file read to its end and idle
        longest (from the scan's pool of them, made at its first need); False if there is
        none."""
        if self._pool is None:
            self._pool = self._victims(now)
            self._pool.reverse()  # popped from the end: idle longest first
        while self._pool:
            victim = self._pool.pop()
            if (
                victim is not exclude
                and victim.fd is not None
                and releasable(victim)
                and victim.read_offset >= max(victim.checked_size, victim.seen_size)
            ):
                self._release(victim)
                self._opened -= 1
                return True
        return False

    def _release(self, tracked: TrackedFile) -> None:
        size = tracked.checked_size if tracked.checked_size >= 0 else tracked.size()
        release_descriptor(tracked, size)

    def _victims(self, now: float, exclude: TrackedFile | None = None) -> list[TrackedFile]:
        """The open LIVE files that may give their descriptor up for a file with unread bytes:
        read to their end, not active at this very look, idle longest first."""
        victims = [
            f
            for f in self._files.files
            if f.fd is not None
            and f is not exclude
            and releasable(f)
            and f.read_offset >= max(f.checked_size, f.seen_size)
            and f.active_at is not None
            and f.active_at < now
        ]
        victims.sort(key=lambda f: f.active_at or 0.0)
        return victims


def releasable(tracked: TrackedFile) -> bool:
    """Whether the watcher may close ``tracked``'s descriptor for now: a LIVE file (a ROTATED
    file is read through it, a COPIED one claimed by it) holding no multiline event back."""
    return tracked.state is FileState.LIVE and tracked.held_since is None


def waits(tracked: TrackedFile) -> bool:
    """A released LIVE file with whole lines unread: it waits for a descriptor."""
    return tracked.released and tracked.waiting and tracked.state is FileState.LIVE


def release_descriptor(tracked: TrackedFile, size: int) -> None:
    """Close the descriptor of a LIVE file that the pipeline does not read now (idle, or
    beyond its bound), keeping what its reopening needs: its identity and offsets stay,
    ``size`` (its size now) is the one it is checked against, and its first bytes are kept
    as :attr:`TrackedFile.head`. Its place is its read offset: nothing is lost by closing
    it."""
    if tracked.fd is None:
        return
    unread = size - tracked.read_offset
    try:
        if len(tracked.head) < min(HEAD_BYTES, tracked.signature.size):
            tracked.head = os.pread(tracked.fd, min(HEAD_BYTES, tracked.signature.size), 0)
        waiting = unread > 0 and (
            unread > _LINE_LOOK_BYTES or b"\n" in os.pread(tracked.fd, unread, tracked.read_offset)
        )
    except OSError:
        waiting = unread > 0
    tracked.checked_size = size
    tracked.checked_offset = tracked.read_offset
    tracked.release(waiting=waiting)


def reopen(tracked: TrackedFile, path: str | None = None) -> bool:
    """Open a released file again at ``path`` (default: where it was), if the regular file
    there is still this one by device and inode (:func:`open_regular`); whether its first
    bytes and the last bytes read are still there is for :func:`content_change` or the
    next read to tell. False, quietly, when it is not there or not this file any more (a scan
    decides what became of it), or when no descriptor can be had now (``EMFILE``: tried again
    later)."""
    if tracked.fd is not None:
        return True
    where = tracked.path if path is None else path
    inode = (tracked.dev, tracked.ino)
    try:
        fd = open_regular(where, inode, follow_symlinks=tracked.follow_symlinks)
    except OSError as exc:
        if exc.errno not in _NOT_THERE:
            log.warning("cannot open %s again: %s", shown_path(where), exc)
        return False
    if fd is None:
        return False
    tracked.attach(fd, where)
    return True
