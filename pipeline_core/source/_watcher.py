"""Discovery and the rotation state machine for all files of one pipeline.

Each scan globs every source's paths and reconciles what it finds with the tracked files:

* a known inode that still starts with its signature bytes is the same file (a rename keeps it);
* a known inode whose first bytes changed was truncated or reused: its tracked file is DETACHED
  and the inode is treated as new;
* a known inode that kept its first bytes but is now shorter than what was read of it, or whose
  bytes just before the read offset changed, was cut below its offset: what was read of it
  stays read (its tracked file is DONE at its read offset) and the bytes after the cut are a
  new *generation* of the file, tracked under a new fingerprint from the cut on, so no byte is
  read twice and no event id is used twice. The cut is found by comparing the file with the
  last bytes read; a cut further back than those is taken to be at the file's size, with a
  warning naming the bytes that could not be checked;
* a new inode whose first bytes match a DETACHED file is that file's copy (copytruncate): it takes
  over the fingerprint and the offset, so the lines written just before the truncation are read.
  When the original was read past the copy's end (the writer appended between the copy and
  the truncation, and the collector read it first), the copy holds nothing unread: it is
  COPIED, claimed at its path and never read. Bytes of the original seen but not read before
  the truncation are gone with it: a warning names them;
* a DETACHED file whose copy does not turn up within :data:`COPY_WAIT_S` is DONE (a warning
  names the bytes it held beyond what was read, if any);
* a new inode whose first bytes match a file still live elsewhere is a copy in the making: it is
  left alone until the original is truncated (or forever, if it never is); so is a new inode
  shorter than a live file's signature that holds exactly that file's first bytes (a copy
  caught in its first write). The log says so when it is first seen, and warns once it has
  waited longer than a copytruncate takes;
* a tracked file whose inode is no longer at any path was renamed away or deleted: it is ROTATED
  and read to its end through its open descriptor.

An error no one expected while looking at a new file passes that file over until the next scan
(a warning names it); the other files are tracked and read.

**Descriptors.** With ``close_idle_after`` a LIVE file neither read nor grown for that long is
*released*: its descriptor is closed, its identity (device, inode, first bytes) and offsets are
kept. With ``max_open_files`` at most that many of the pipeline's files are open after a scan:
beyond it the files read to their end and idle longest are released first, and a file found
with nothing open for it waits, released, for a descriptor (a file read to its end gives its
own up for one with unread bytes). A released file is opened again by identity when a scan
finds it changed (another size or path) or a descriptor is free for its unread bytes, or at
once when it is written (:meth:`FileWatcher.wake`, on a file event); the scan then compares
its first bytes and the bytes before its read offset, as for any file, so a rename, a
copytruncate or a cut while it was closed is told as the rules above say, and it is read on
from its read offset. Gone from the paths while released, it is looked for in its folder by
inode (a rename off the paths is read to its end); else it is DONE. Never released: a ROTATED
or COPIED file (they are read, or claimed, through their descriptor) and a multiline file
holding an event back (it is handed on at its ``flush_after``). A scan looks again only at
the files whose size or path changed, or that were read, since it last looked; a scan that
file events ask for may keep to the folders they name (:meth:`FileWatcher.scan`).

Paths that are not regular files (folders, FIFOs, dangling or looping symlinks) are passed over;
so are paths through a symlink, unless the source follows them (``_discovery``'s symlink
policy); under ``**`` each real folder is walked once, so symlink loops cannot make a scan
endless. A file is opened only if it is still, at its opening, the regular file the scan found.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import logging
import os
import time
from collections.abc import Callable, Iterable

from pipeline_core._file_names import shown_path
from pipeline_core.config import SourceConfig, StartPosition
from pipeline_core.source._copy_adoption import COPY_WAIT_S, CopyAdoption
from pipeline_core.source._copy_detection import (
    after_last_newline,
    copy_in_the_making,
    match_signature,
    same_bytes_at_end,
)
from pipeline_core.source._discovery import Inode, find_files, siblings
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_record import FileRecord
from pipeline_core.source._fingerprint import new_fingerprint, read_signature
from pipeline_core.source._multiline import EventFraming
from pipeline_core.source._read_memory import ContentChange
from pipeline_core.source._tracked_file import HEAD_BYTES, TrackedFile, last_close

log = logging.getLogger(__name__)


class FileWatcher:
    """Finds a pipeline's files and follows them through rotation.

    Threading model: owned by the collector's mailbox thread; not thread-safe.
    """

    def __init__(
        self,
        sources: Iterable[SourceConfig],
        host: str,
        signature_bytes: int,
        records: Iterable[FileRecord] = (),
        clock: Callable[[], float] = time.monotonic,
        *,
        max_open_files: int | None = None,
        close_idle_after: float | None = None,
        forget_done_after: float | None = None,
    ) -> None:
        self._max_open = max_open_files
        self._idle_after = close_idle_after
        self._forget_after = forget_done_after
        self._opened = 0
        """While a scan runs: the descriptors open, as far as the bound is concerned."""
        self._heads: dict[bytes | None, list[TrackedFile]] | None = None
        """While a scan runs: the tracked files by their first bytes (:meth:`_heads_index`)."""
        self._pool: list[TrackedFile] | None = None
        """While a scan runs: the files that may give their descriptor up (:meth:`_make_room`)."""
        self._readable: list[TrackedFile] | None = None
        """:meth:`readable`, as it was when last asked, while no descriptor was closed since
        (:func:`last_close`) and no copy among them was read to its end (KEPT)."""
        self._readable_at = 0
        self._readable_copies: list[TrackedFile] = []
        self._waiting = False
        self.last_scan_seconds = 0.0
        """How long the last scan took (wall time)."""
        self._sources = list(sources)
        self._host = host
        self._signature_bytes = signature_bytes
        self._clock = clock
        records = list(records)
        self._files: list[TrackedFile] = [TrackedFile.from_record(r) for r in records]
        now, wall = clock(), time.time()
        for record, tracked in zip(records, self._files, strict=True):
            if record.state is FileState.DONE and record.updated_at is not None:
                tracked.done_at = now - max(0.0, wall - record.updated_at.timestamp())
        following = {source.name for source in self._sources if source.follow_symlinks}
        for tracked in self._files:
            tracked.follow_symlinks = tracked.source in following
        self._first_scan = not self._files
        self._copies = CopyAdoption(
            signature_bytes,
            clock,
            {source.name: EventFraming.of_source(source) for source in self._sources},
        )
        self._held: dict[Inode, tuple[float, bool]] = {}
        """Files at the paths held back as live files' copies: since when (by ``clock``) each
        has not changed, and whether a warning said so."""
        self._held_now: set[Inode] = set()
        self.scans = 0
        """Scans so far: a reader's "caught up" holds only for the files of the last one."""

    @property
    def sources(self) -> list[SourceConfig]:
        """The sources whose files this watcher follows."""
        return self._sources

    @property
    def settling(self) -> bool:
        """The last scan saw a possible copy off the paths: scan again before finishing."""
        return self._copies.settling

    @property
    def truncated_unread_bytes(self) -> int:
        """Bytes seen in files that a truncation destroyed before they were read."""
        return self._copies.truncated_unread_bytes

    @property
    def files(self) -> list[TrackedFile]:
        """Every tracked file, in the order they were first seen."""
        return self._files

    @property
    def waiting(self) -> bool:
        """At the last scan, some released file had whole lines unread and waited for a
        descriptor (the pipeline is at its ``max_open_files``): the next scan hands it one if a
        file read to its end can give its own up."""
        return self._waiting

    @property
    def open_files(self) -> int:
        """How many of the tracked files hold a descriptor now."""
        return sum(1 for f in self._files if f.fd is not None)

    def readable(self) -> list[TrackedFile]:
        """The files the reader reads: open, LIVE, ROTATED or COPIED (in the order they were
        first seen; not to be changed by the caller). A reader asks at every turn, and reads
        every file once a round: the list is kept until a scan, a descriptor closed (here, or
        where the reader finishes a rotated file) or a copy read to its end (KEPT)."""
        if (
            self._readable is None
            or self._readable_at != last_close()
            or any(f.state is not FileState.COPIED for f in self._readable_copies)
        ):
            self._readable_at = last_close()
            self._readable = [f for f in self._files if f.fd is not None and f.state.read]
            self._readable_copies = [f for f in self._readable if f.state is FileState.COPIED]
        return self._readable

    def released_files(self) -> list[TrackedFile]:
        """The LIVE files whose descriptor is closed for now (see "Descriptors" above)."""
        return [f for f in self._files if f.released and f.state is FileState.LIVE]

    def close(self) -> None:
        for tracked in self._files:
            tracked.close()
        self._readable = None

    def forget_done(self) -> list[str]:
        """Stop tracking the files DONE (rotated away or deleted, read to their end) whose
        every byte read has been sealed for ``forget_done_after``; returns their fingerprints,
        whose rows the next seal deletes. Without this a host whose logs rotate to new names
        (``dateext``) keeps a row, and a tracked file in memory, for every file it ever read.

        A file is DONE only once it is off the source's paths, so no scan looks at it again;
        the one thing its record still did is make a file that turns up again with the same
        first bytes on the same inode, within that time, be taken for it."""
        if self._forget_after is None:
            return []
        now = self._clock()
        forgotten: list[TrackedFile] = []
        for tracked in self._files:
            if tracked.state is not FileState.DONE or tracked.sealed_offset < tracked.read_offset:
                tracked.done_at = None
            elif tracked.done_at is None:
                tracked.done_at = now
            elif now - tracked.done_at >= self._forget_after and tracked.fd is None:
                forgotten.append(tracked)
        if not forgotten:
            return []
        gone = {id(tracked) for tracked in forgotten}
        self._files = [f for f in self._files if id(f) not in gone]
        self._readable = None
        self._heads = None
        for tracked in forgotten:
            log.info(
                "forgetting %s (%s): rotated away and sealed to its end, offset %d",
                tracked.fingerprint,
                shown_path(tracked.path),
                tracked.sealed_offset,
            )
        return [tracked.fingerprint for tracked in forgotten]

    def wake(self, tracked: TrackedFile) -> bool:
        """``tracked``, released, was written: open it again by identity now, so it is read
        without waiting for a scan (at the pipeline's ``max_open_files``, the file read to its
        end and idle longest gives its descriptor up for it). False if it cannot be: not at
        its path any more, another file there, or no descriptor to be had: a scan decides."""
        if tracked.fd is not None:
            return True
        if not tracked.released or tracked.state is not FileState.LIVE:
            return False
        if self._max_open is not None and self.open_files >= self._max_open:
            victims = self._victims(self._clock(), exclude=tracked)
            if not victims:
                return False
            self._release(victims[0])
        if not tracked.reopen():
            return False
        tracked.active_at = self._clock()
        self._readable = None
        return True

    def scan(self, within: Iterable[str] | None = None) -> None:
        """Glob every source and reconcile the result with the tracked files.

        ``within``: only the entries of these folders changed (as file events say): the
        sources' globs are matched in them alone, and only the files tracked there (and any
        found there that a file tracked elsewhere claims) are looked at. A scan so limited
        is a whole one when a source's globs cannot be matched folder by folder (``**``, a
        pattern in more than the last folder's name, a source following symlinks, a folder
        that is a symlink)."""
        started = time.perf_counter()
        limited = None if within is None else self._limited(within)
        scope = None if limited is None else limited[0]
        self._copies.settling = False
        self._copies.new_scan()
        self.scans += 1
        self._held_now = set()
        now = self._clock()
        self._opened = self.open_files if self._max_open is not None else 0
        try:
            for source in self._sources:
                if limited is None:
                    found = find_files(source)
                else:
                    narrowed = limited[1].get(source.name)
                    found = {} if narrowed is None else find_files(narrowed)
                unclaimed = self._reconcile_known(source.name, found, now, scope)
                for inode in unclaimed:
                    self._look_at(source, found[inode], inode, now)
                # A copy at the source's paths was adopted above; only then look off them.
                for tracked in self._files:
                    if (
                        tracked.source == source.name
                        and tracked.state is FileState.DETACHED
                        and (scope is None or _folder_of(tracked) in scope)
                    ):
                        known = {
                            (f.dev, f.ino)
                            for f in self._files
                            if f is not tracked and f.state.claims_inode
                        }
                        self._copies.find_off_paths(tracked, found, known)
                        self._copies.give_up_if_due(tracked)
            if scope is None:
                self._held = {
                    inode: held for inode, held in self._held.items() if inode in self._held_now
                }
                self._first_scan = False
            self._balance_descriptors(now)
            self._waiting = any(_waits(f) for f in self._files)
        finally:
            self._readable = None
            self._heads = None
            self._pool = None
            self.last_scan_seconds = time.perf_counter() - started

    def _limited(self, within: Iterable[str]) -> tuple[set[str], dict[str, SourceConfig]] | None:
        """For a scan within ``within``: the folders (normalised), and per source the same
        source globbing them alone (a source none of whose globs match there is left out);
        None when some source cannot be matched folder by folder (see :meth:`scan`)."""
        folders = {os.path.normpath(folder) for folder in within}
        narrowed: dict[str, SourceConfig] = {}
        for source in self._sources:
            if source.follow_symlinks:
                return None
            paths: list[str] = []
            for pattern in source.paths:
                folder, name = os.path.split(pattern)
                shape = _folder_shape(folder)
                if shape is None:
                    return None
                fixed, last = shape
                for changed in folders:
                    if not _in_folder_shape(changed, fixed, last):
                        continue
                    if os.path.islink(changed):
                        return None  # the source's own glob decides what a symlink is
                    paths.append(os.path.join(glob.escape(changed), name))
            if paths:
                narrowed[source.name] = source.model_copy(update={"paths": paths})
        return folders, narrowed

    # -- scan steps --------------------------------------------------------------------------

    def _reconcile_known(
        self,
        source: str,
        found: dict[Inode, tuple[str, int]],
        now: float,
        scope: set[str] | None = None,
    ) -> list[Inode]:
        """Look at the tracked files of ``source`` (those in ``scope``'s folders, and those
        whose inode was found, when a scan is limited to them); the inodes found that no
        tracked file claims are returned, to be looked at as new."""
        claimed: set[Inode] = set()
        for tracked in list(self._files):
            if tracked.source != source or tracked.state in (FileState.DONE, FileState.DETACHED):
                continue
            inode = (tracked.dev, tracked.ino)
            if scope is not None and inode not in found and _folder_of(tracked) not in scope:
                continue  # not where the scan looked
            if inode in found:
                if self._recheck(tracked, found[inode], now):
                    claimed.add(inode)  # by the file or the generation that took it over
            elif tracked.state in (FileState.COPIED, FileState.KEPT):
                # Renamed off the paths or deleted: read what is left through the descriptor.
                if tracked.fd is None:
                    tracked.move_to(FileState.DONE)
                else:
                    tracked.mark_rotated()
            elif tracked.fd is None and self._find_renamed(tracked):
                log.info(
                    "%s was renamed to %s; reading it to its end",
                    tracked.fingerprint,
                    shown_path(tracked.path),
                )
                tracked.mark_rotated()
            elif tracked.state is FileState.LIVE and tracked.fd is not None:
                log.info("%s was rotated away; reading it to its end", shown_path(tracked.path))
                tracked.mark_rotated()
            elif tracked.released and not tracked.waiting:
                log.info(
                    "%s is gone (deleted, or moved off the paths and its folder) while its "
                    "descriptor was closed, idle; it had been read to its end, offset %d",
                    shown_path(tracked.path),
                    tracked.read_offset,
                )
                tracked.move_to(FileState.DONE)
            elif tracked.fd is None:
                log.warning(
                    "%s is gone; bytes after offset %d could not be read",
                    shown_path(tracked.path),
                    tracked.read_offset,
                )
                tracked.move_to(FileState.DONE)
        return [inode for inode in found if inode not in claimed]

    def _recheck(self, tracked: TrackedFile, entry: tuple[str, int], now: float) -> bool:
        """A tracked file whose inode is still at a path: same, replaced, or cut. Returns
        whether the inode is still tracked (False: it holds a new file now).

        A LIVE file found where it was, as long as it was at the last look, and not read
        since, is left as it is, open or released: what a look compares (its first bytes, the
        bytes before its read offset) could only have changed if it was written again to
        exactly that size, which it is looked at for when it grows, when its file event says
        it no longer starts as it did, or when a new file with its first bytes turns up
        (:meth:`_adopt_or_add`). A released file that changed is opened again, by identity,
        and looked at as any file; if it cannot be now, it stays released and claimed until
        the next scan."""
        path, size = entry
        if (
            tracked.state is FileState.LIVE
            and (tracked.fd is not None or tracked.released)
            and path == tracked.path
            and size == tracked.checked_size
            and tracked.read_offset == tracked.checked_offset
        ):
            return True
        if tracked.state in (FileState.COPIED, FileState.KEPT):
            # Kept open, so that its inode cannot be handed to another file (the next copy)
            # while it is claimed; after a restart, opened again and, if not all of it was
            # sealed, read on.
            if tracked.fd is None:
                if not tracked.open(path) or not tracked.still_same_file(self._signature_bytes):
                    tracked.close()
                    tracked.move_to(FileState.DONE)  # another file has the inode now
                    return False
                if size <= tracked.read_offset:
                    tracked.move_to(FileState.KEPT)
            tracked.path = path
            return True
        was_open = tracked.fd is not None
        if tracked.released:
            if not tracked.reopen(path):
                return True  # claimed as it was: looked at again at the next scan
        elif tracked.fd is None or tracked.path != path:
            tracked.open(path)
        change = tracked.inspect(self._signature_bytes)
        if change is ContentChange.REPLACED:
            log.info("%s was truncated or replaced; waiting for its copy", shown_path(tracked.path))
            self._copies.detached(tracked)
            return False
        if change is ContentChange.CUT:
            self._start_generation(tracked)
        else:
            tracked.move_to(FileState.LIVE)
            self._looked_at(tracked, size, now)
            if not was_open:
                self._keep_within_bound(tracked, now)
        return True

    # -- descriptors -------------------------------------------------------------------------

    def _looked_at(self, tracked: TrackedFile, size: int, now: float) -> None:
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

    def _keep_within_bound(self, tracked: TrackedFile, now: float) -> None:
        """``tracked`` was just opened by this scan: at ``max_open_files``, the file read to
        its end and idle longest gives its descriptor up for it; if none can, ``tracked`` is
        released at once (with unread bytes, it waits for a descriptor: see
        :meth:`_balance_descriptors`)."""
        if self._max_open is None or tracked.fd is None or not _releasable(tracked):
            return
        if self._opened < self._max_open or self._make_room(now, exclude=tracked):
            self._opened += 1
        else:
            self._release(tracked)
            self._waiting = self._waiting or tracked.waiting

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
                and _releasable(victim)
                and victim.read_offset >= max(victim.checked_size, victim.seen_size)
            ):
                self._release(victim)
                self._opened -= 1
                return True
        return False

    def _release(self, tracked: TrackedFile) -> None:
        tracked.release(tracked.checked_size if tracked.checked_size >= 0 else tracked.size())
        self._readable = None

    def _victims(self, now: float, exclude: TrackedFile | None = None) -> list[TrackedFile]:
        """The open LIVE files that may give their descriptor up for a file with unread bytes:
        read to their end, not active at this very look, idle longest first."""
        victims = [
            f
            for f in self._files
            if f.fd is not None
            and f is not exclude
            and _releasable(f)
            and f.read_offset >= max(f.checked_size, f.seen_size)
            and f.active_at is not None
            and f.active_at < now
        ]
        victims.sort(key=lambda f: f.active_at or 0.0)
        return victims

    def _balance_descriptors(self, now: float) -> None:
        """After a scan: release the files idle for ``close_idle_after``; then, within
        ``max_open_files``, give the released files that wait with unread bytes the free
        descriptors and those of open files read to their end (idle longest first)."""
        if self._idle_after is not None:
            for tracked in self._files:
                if (
                    tracked.fd is not None
                    and _releasable(tracked)
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
        for tracked in [f for f in self._files if _waits(f)]:
            if opened >= self._max_open:
                if not victims:
                    break
                self._release(victims.pop(0))
                opened -= 1
            if not tracked.reopen():
                continue
            opened += 1
            tracked.active_at = now
            if tracked.inspect(self._signature_bytes) is not ContentChange.SAME:
                tracked.checked_size = -1  # changed after all: the next scan looks at it

    def _start_generation(self, tracked: TrackedFile) -> None:
        """``tracked`` was cut below its read offset with its first bytes kept: it ends where
        it was read to; the bytes from the cut on are a new generation under a new
        fingerprint (same inode, same descriptor)."""
        kept = tracked.kept_length()
        if kept.verified:
            log.warning(
                "%s was cut below offset %d: its first %d bytes are the ones read; reading on "
                "from there as a new generation",
                shown_path(tracked.path),
                tracked.read_offset,
                kept.offset,
            )
        else:
            log.warning(
                "%s was cut to %d bytes, below offset %d, further back than the last bytes "
                "read that are kept to compare: bytes [0, %d) are taken as the ones already "
                "read; lines written after the cut within them, if any, are not read",
                shown_path(tracked.path),
                kept.offset,
                tracked.read_offset,
                kept.offset,
            )
        generation = TrackedFile(
            source=tracked.source,
            fingerprint=new_fingerprint(self._host, tracked.dev, tracked.ino, tracked.signature),
            path=tracked.path,
            dev=tracked.dev,
            ino=tracked.ino,
            signature=tracked.signature,
            sealed_offset=kept.offset,
            state=FileState.LIVE,
            follow_symlinks=tracked.follow_symlinks,
        )
        generation.seen_size = tracked.size()
        generation.fd, tracked.fd = tracked.fd, None
        tracked.move_to(FileState.DONE)
        self._files.append(generation)
        self._index_head(generation)

    def _find_renamed(self, tracked: TrackedFile) -> bool:
        """After a restart, find a file renamed out of the source's paths by its inode (its
        old folder only), so the lines written before the rename are not lost."""
        for path, info in siblings(tracked.path):
            if (info.st_dev, info.st_ino) == (tracked.dev, tracked.ino):
                if tracked.open(path) and tracked.still_same_file(self._signature_bytes):
                    return True
                tracked.close()
        return False

    def _adopt_or_add(
        self, source: SourceConfig, entry: tuple[str, int], inode: Inode, now: float
    ) -> None:
        path, size = entry
        if size == 0:
            return
        if self._max_open is not None and self._opened >= self._max_open:
            self._make_room(now)  # for the probe, whose descriptor is the new file's if it is one
        probe = TrackedFile.probe(source.name, path, inode, follow_symlinks=source.follow_symlinks)
        if not probe.open(path):
            return
        assert probe.fd is not None
        try:
            head = os.pread(probe.fd, HEAD_BYTES, 0)
            candidates = self._candidates(source.name, inode, head)
            original = match_signature(probe.fd, candidates)
            if (
                original is not None
                and original.state is FileState.LIVE
                and self._look_again(original, now)
            ):
                # Truncated (or cut) since it was looked at: its copy may be this file.
                candidates = self._candidates(source.name, inode, head)
                original = match_signature(probe.fd, candidates)
            if original is None and self._copy_of_released(probe.fd, size, candidates):
                self._hold_back(path, inode, None, probe.fd)  # too short yet: look again
                return
            if original is None and copy_in_the_making(probe.fd, size, candidates):
                self._hold_back(path, inode, None, probe.fd)  # too short yet: look again
                return
            if original is not None and original.state is FileState.DETACHED:
                self._copies.adopt(original, probe, rotated=False)
                return
            if original is not None and same_bytes_at_end(probe.fd, original, size):
                self._hold_back(path, inode, original, probe.fd)  # wait for the truncation
                return
            signature = read_signature(probe.fd, self._signature_bytes)
            start = size if self._first_scan and source.start_at is StartPosition.END else 0
            if start:
                start = after_last_newline(probe.fd, start)
            tracked = TrackedFile(
                source=source.name,
                fingerprint=new_fingerprint(self._host, inode[0], inode[1], signature),
                path=path,
                dev=inode[0],
                ino=inode[1],
                signature=signature,
                sealed_offset=start,
                state=FileState.LIVE,
                follow_symlinks=source.follow_symlinks,
            )
            tracked.fd, probe.fd = probe.fd, None
            tracked.head = head
            tracked.seen_size = size  # the reader tells a file read to its end by it
            if not start:
                self._copies.tracked_new(tracked)
            self._files.append(tracked)
            self._index_head(tracked)
            log.info(
                "tracking %s as %s from offset %d", shown_path(path), tracked.fingerprint, start
            )
            self._looked_at(tracked, size, now)
            self._keep_within_bound(tracked, now)
        finally:
            probe.close()

    def _candidates(self, source: str, inode: Inode, head: bytes) -> list[TrackedFile]:
        """The files of ``source`` a new file at ``inode`` starting with ``head`` may be a copy
        of, DETACHED first: a file whose first bytes are known and differ from the new file's
        (over their common length) is none. Looked up by their first bytes (:attr:`_heads`):
        a scan finding ten thousand new files must not compare each with all the others."""
        if len(head) >= _KEY_BYTES:
            heads = self._heads_index()
            near = [*heads.get(head[:_KEY_BYTES], ()), *heads.get(None, ())]
        else:
            near = self._files
        return sorted(
            (
                f
                for f in near
                if f.source == source
                and f.state is not FileState.DONE
                # a truncated file is not the copy of itself
                and not (f.state is FileState.DETACHED and (f.dev, f.ino) == inode)
                and f.head[: len(head)] == head[: len(f.head)]
            ),
            key=lambda f: f.state is not FileState.DETACHED,
        )

    def _heads_index(self) -> dict[bytes | None, list[TrackedFile]]:
        """The tracked files by their first :data:`_KEY_BYTES` bytes (None: fewer known), made
        at a scan's first new file and kept up to date until the scan ends."""
        if self._heads is None:
            self._heads = {}
            for tracked in self._files:
                self._index_head(tracked)
        return self._heads

    def _index_head(self, tracked: TrackedFile) -> None:
        if self._heads is not None:
            key = tracked.head[:_KEY_BYTES] if len(tracked.head) >= _KEY_BYTES else None
            self._heads.setdefault(key, []).append(tracked)

    def _look_again(self, tracked: TrackedFile, now: float) -> bool:
        """Look at a LIVE file (opened again if released) as a scan looks at a file that
        changed: True if it was truncated or cut meanwhile (DETACHED, or DONE with a new
        generation); False if it is still the file read (its end is then compared with a
        lookalike's) or cannot be opened now."""
        if not tracked.reopen():
            return False
        change = tracked.inspect(self._signature_bytes)
        if change is ContentChange.REPLACED:
            log.info("%s was truncated or replaced; waiting for its copy", shown_path(tracked.path))
            self._copies.detached(tracked)
            return True
        if change is ContentChange.CUT:
            self._start_generation(tracked)
            return True
        self._looked_at(tracked, tracked.size(), now)
        return False

    def _copy_of_released(self, fd: int, size: int, candidates: list[TrackedFile]) -> bool:
        """Whether the new file at ``fd`` (``size`` bytes) holds exactly the first bytes of a
        released file whose signature is longer: a copy caught while being made, as
        :func:`copy_in_the_making` tells for open files. Told from the released file's
        :attr:`~TrackedFile.head` when the new file is no longer than it; otherwise a released
        file whose head the new file starts with is opened again, so that
        :func:`copy_in_the_making` compares it."""
        head: bytes | None = None
        for tracked in candidates:
            if not tracked.released or size >= tracked.signature.size or not tracked.head:
                continue
            if head is None:
                head = os.pread(fd, min(size, HEAD_BYTES), 0)
            if not tracked.head.startswith(head[: len(tracked.head)]):
                continue
            if size <= len(tracked.head):
                return tracked.head[:size] == head
            tracked.reopen()  # for copy_in_the_making to compare
        return False

    def _look_at(
        self, source: SourceConfig, entry: tuple[str, int], inode: Inode, now: float
    ) -> None:
        """:meth:`_adopt_or_add` one file found at the paths. An error no one expected there is
        that file's alone: it is named in a warning and passed over until the next scan, and
        the other files are tracked and read (a file only enters at its adoption, so one
        passed over holds nothing of a batch yet)."""
        try:
            self._adopt_or_add(source, entry, inode, now)
        except Exception as exc:
            log.warning(
                "passing over %s until the next scan: %r",
                shown_path(entry[0]),
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )

    def _hold_back(self, path: str, inode: Inode, original: TrackedFile | None, fd: int) -> None:
        """The file at ``path`` (open at ``fd``) holds what ``original`` (a live file; None: one
        of them) holds so far: taken for its copytruncate copy in the making, it is not read
        until the original is truncated (then it is adopted, not read again). Said when it is
        first seen; a warning once it has not changed for longer than a copytruncate takes
        (counted from its last change, so a one-shot run warns of an old one at once)."""
        now = self._clock()
        self._held_now.add(inode)
        of = "a live file" if original is None else shown_path(original.path)
        held = self._held.get(inode)
        if held is None:
            try:
                unchanged = max(0.0, time.time() - os.fstat(fd).st_ctime)
            except OSError:
                unchanged = 0.0
            held = (now - unchanged, False)
            if unchanged < COPY_WAIT_S:
                log.info(
                    "%s holds what %s holds: taken for its copy being made (copytruncate), it "
                    "is read only once that file is truncated",
                    shown_path(path),
                    of,
                )
        since, warned = held
        if not warned and now - since >= COPY_WAIT_S:
            warned = True
            log.warning(
                "%s has held just what %s holds for %.0f s: it is taken for a copy of it "
                "(copytruncate) and is not read unless that file is truncated",
                shown_path(path),
                of,
                now - since,
            )
        self._held[inode] = (since, warned)


_KEY_BYTES = 16
"""How many first bytes index the tracked files for a new file's look-up."""


def _folder_of(tracked: TrackedFile) -> str:
    return os.path.dirname(os.path.normpath(tracked.path)) or os.curdir


def _folder_shape(folder: str) -> tuple[str, str | None] | None:
    """A glob's folder as its fixed part and the pattern of its last folder's name (None: no
    pattern at all); None when another part of it is a pattern, or it has ``**``."""
    parts = folder.split(os.sep)
    magic = [index for index, part in enumerate(parts) if glob.has_magic(part)]
    if not magic:
        return os.path.normpath(folder or os.curdir), None
    if magic != [len(parts) - 1] or parts[-1] == "**":
        return None
    return os.path.normpath(os.sep.join(parts[:-1]) or os.curdir), parts[-1]


def _in_folder_shape(folder: str, fixed: str, last: str | None) -> bool:
    """Whether ``folder`` (normalised) is one a glob of that shape matches, as ``glob`` would
    (a hidden folder only by a pattern that starts with a dot)."""
    if last is None:
        return folder == fixed
    parent, name = os.path.split(folder)
    if (parent or os.curdir) != fixed or not fnmatch.fnmatchcase(name, last):
        return False
    return not name.startswith(".") or last.startswith(".")


def _releasable(tracked: TrackedFile) -> bool:
    """Whether the watcher may close ``tracked``'s descriptor for now: a LIVE file (a ROTATED
    file is read through it, a COPIED one claimed by it) holding no multiline event back."""
    return tracked.state is FileState.LIVE and tracked.held_since is None


def _waits(tracked: TrackedFile) -> bool:
    """A released LIVE file with whole lines unread: it waits for a descriptor."""
    return tracked.released and tracked.waiting and tracked.state is FileState.LIVE
