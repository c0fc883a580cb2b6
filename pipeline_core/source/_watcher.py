"""Discovery and the rotation state machine for all files of one pipeline.

Each scan globs every source's paths and reconciles what it finds with the tracked files:

* a known inode that still starts with its signature bytes is the same file (a rename keeps it);
  one whose first bytes changed was truncated or reused (DETACHED); one cut below what was read
  of it goes on as a new *generation*; a tracked file whose inode is at no path any more was
  renamed away or deleted (ROTATED, read to its end): ``_known_files``;
* a new inode whose first bytes match a DETACHED file is that file's copy (copytruncate): it takes
  over the fingerprint and the offset, so the lines written just before the truncation are read.
  When the original was read past the copy's end (the writer appended between the copy and
  the truncation, and the collector read it first), the copy holds nothing unread: it is
  COPIED, claimed at its path and never read. Bytes of the original seen but not read before
  the truncation are gone with it: a warning names them (``_new_files``, ``_copy_adoption``);
* a DETACHED file whose copy does not turn up within ``COPY_WAIT_S`` is DONE (a warning
  names the bytes it held beyond what was read, if any); its copy is looked for off the paths
  too, in its folder, once the copies at the paths were adopted (``_copy_adoption``);
* a new inode whose first bytes match a file still live elsewhere is a copy in the making: it is
  left alone until the original is truncated (``_new_files``); any other new inode is tracked.

The descriptors the files hold are kept within ``max_open_files``, and closed for files idle
for ``close_idle_after`` (``_descriptor_budget``). A scan looks again only at the files whose
size or path changed, or that were read, since it last looked; a scan that file events ask for
may keep to the folders they name (:meth:`FileWatcher.scan`, ``_scan_scope``).

Paths that are not regular files (folders, FIFOs, dangling or looping symlinks) are passed over;
so are paths through a symlink, unless the source follows them (``_discovery``'s symlink
policy); under ``**`` each real folder is walked once, so symlink loops cannot make a scan
endless. A file is opened only if it is still, at its opening, the regular file the scan found.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from pipeline_core._file_names import shown_path
from pipeline_core.config import SourceConfig
from pipeline_core.source._copy_adoption import CopyAdoption
from pipeline_core.source._descriptor_budget import DescriptorBudget, reopen
from pipeline_core.source._discovery import find_files
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_record import FileRecord
from pipeline_core.source._file_registry import FileRegistry
from pipeline_core.source._known_files import KnownFiles
from pipeline_core.source._multiline import EventFraming
from pipeline_core.source._new_files import NewFiles
from pipeline_core.source._scan_scope import limited_scope
from pipeline_core.source._tracked_file import TrackedFile, last_close

log = logging.getLogger(__name__)


class FileWatcher:
    """Finds a pipeline's files and follows them through rotation.

    The scan is its own; what became of the known files is :class:`KnownFiles`' to tell,
    what a new one is :class:`NewFiles`', the descriptors held are :class:`DescriptorBudget`'s,
    and the copies of truncated files :class:`CopyAdoption`'s: helpers it owns (the first three
    share its :class:`FileRegistry`).

    Threading model: owned by the collector's mailbox thread; not thread-safe (nor are the
    helpers it owns).
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
        self._forget_after = forget_done_after
        self._readable: list[TrackedFile] | None = None
        """:meth:`readable`, as it was when last asked, while no descriptor was closed since
        (:func:`last_close`) and no copy among them was read to its end (KEPT)."""
        self._readable_at = 0
        self._readable_copies: list[TrackedFile] = []
        self.last_scan_seconds = 0.0
        """How long the last scan took (wall time)."""
        self._sources = list(sources)
        self._clock = clock
        records = list(records)
        self._files = FileRegistry([TrackedFile.from_record(r) for r in records])
        now, wall = clock(), time.time()
        for record, tracked in zip(records, self._files.files, strict=True):
            if record.state is FileState.DONE and record.updated_at is not None:
                tracked.done_at = now - max(0.0, wall - record.updated_at.timestamp())
        following = {source.name for source in self._sources if source.follow_symlinks}
        for tracked in self._files.files:
            tracked.follow_symlinks = tracked.source in following
        self._copies = CopyAdoption(
            signature_bytes,
            clock,
            {source.name: EventFraming.of_source(source) for source in self._sources},
            [f for f in self._files.files if f.state is FileState.DETACHED],
        )
        self._budget = DescriptorBudget(
            self._files,
            signature_bytes,
            max_open_files=max_open_files,
            close_idle_after=close_idle_after,
        )
        self._known = KnownFiles(self._files, self._budget, self._copies, host, signature_bytes)
        self._new = NewFiles(
            self._files,
            self._budget,
            self._copies,
            self._known,
            host,
            signature_bytes,
            clock,
            first_scan=not self._files.files,
        )
        self.scans = 0
        """Scans so far: a reader's "caught up" holds only for the files of the last one."""
        self.generation = 0
        """Bumped by the owner after anything that may change what its files show (offsets,
        states, paths, sizes, the files themselves): see :meth:`note_change`."""

    def note_change(self) -> None:
        """What the files show may have changed: a read, a seal, a scan, a file event naming
        them (their sizes). Called by the owner after the change, so that a reader on another
        thread that saw the new :attr:`generation` sees the change too; a reader that keeps
        what it made of the files while the generation stays the same (the metrics snapshot)
        need not look at them again."""
        self.generation += 1

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
        return self._files.files

    @property
    def waiting(self) -> bool:
        """At the last scan, some released file had whole lines unread and waited for a
        descriptor (the pipeline is at its ``max_open_files``): the next scan hands it one if a
        file read to its end can give its own up."""
        return self._budget.waiting

    @property
    def open_files(self) -> int:
        """How many of the tracked files hold a descriptor now."""
        return self._budget.open_files

    def readable(self) -> list[TrackedFile]:
        """The files the reader reads: open, LIVE, ROTATED or COPIED, and not held back for a
        truncated file's copy (in the order they were first seen; not to be changed by the
        caller). A reader asks at every turn, and reads every file once a round: the list is
        kept until a scan, a descriptor closed (here, or where the reader finishes a rotated
        file) or a copy read to its end (KEPT)."""
        if (
            self._readable is None
            or self._readable_at != last_close()
            or any(f.state is not FileState.COPIED for f in self._readable_copies)
        ):
            self._readable_at = last_close()
            self._readable = [
                f
                for f in self._files.files
                if f.fd is not None and f.state.read and not f.awaits_copy
            ]
            self._readable_copies = [f for f in self._readable if f.state is FileState.COPIED]
        return self._readable

    def released_files(self) -> list[TrackedFile]:
        """The LIVE files whose descriptor is closed for now (``_descriptor_budget``)."""
        return [f for f in self._files.files if f.released and f.state is FileState.LIVE]

    def close(self) -> None:
        for tracked in self._files.files:
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
        for tracked in self._files.files:
            if tracked.state is not FileState.DONE or tracked.sealed_offset < tracked.read_offset:
                tracked.done_at = None
            elif tracked.done_at is None:
                tracked.done_at = now
            elif now - tracked.done_at >= self._forget_after and tracked.fd is None:
                forgotten.append(tracked)
        if not forgotten:
            return []
        self._files.forget(forgotten)
        self._readable = None
        self.note_change()
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
        if not self._budget.room_for(tracked, self._clock()) or not reopen(tracked):
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
        scope = None if within is None else limited_scope(self._sources, within)
        self._copies.settling = False
        self._copies.new_scan()
        self.scans += 1
        self._new.start_scan()
        now = self._clock()
        self._budget.start_scan()
        try:
            for source in self._sources:
                found = find_files(source) if scope is None else scope.find_files(source)
                unclaimed = self._known.reconcile(source.name, found, now, scope)
                for inode in unclaimed:
                    self._new.look_at(source, found[inode], inode, now)
                # A copy at the source's paths was adopted above; only then look off them.
                for tracked in self._files.files:
                    if (
                        tracked.source == source.name
                        and tracked.state is FileState.DETACHED
                        and (scope is None or scope.holds(tracked))
                    ):
                        known = {
                            (f.dev, f.ino)
                            for f in self._files.files
                            if f is not tracked and f.state.claims_inode
                        }
                        self._copies.find_off_paths(tracked, found, known)
                        self._copies.give_up_if_due(tracked)
            if scope is None:
                self._new.end_whole_scan()
            self._budget.settle(now)
        finally:
            self._copies.end_scan(whole=scope is None)
            self._readable = None
            self._budget.end_scan()
            self.last_scan_seconds = time.perf_counter() - started
            self.note_change()
