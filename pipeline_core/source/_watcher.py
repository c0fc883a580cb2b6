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

Paths that are not regular files (folders, FIFOs, dangling or looping symlinks) are passed over;
so are paths through a symlink, unless the source follows them (``_discovery``'s symlink
policy); under ``**`` each real folder is walked once, so symlink loops cannot make a scan
endless. A file is opened only if it is still, at its opening, the regular file the scan found.
"""

from __future__ import annotations

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
from pipeline_core.source._file_record import FileRecord, FileState
from pipeline_core.source._fingerprint import new_fingerprint, read_signature
from pipeline_core.source._read_memory import ContentChange
from pipeline_core.source._tracked_file import TrackedFile

log = logging.getLogger(__name__)


_CLAIMING_STATES = (FileState.LIVE, FileState.ROTATED, FileState.COPIED)
"""States whose inode belongs to the tracked file: another file found there is not new."""


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
    ) -> None:
        self._sources = list(sources)
        self._host = host
        self._signature_bytes = signature_bytes
        self._clock = clock
        self._files: list[TrackedFile] = [TrackedFile.from_record(r) for r in records]
        following = {source.name for source in self._sources if source.follow_symlinks}
        for tracked in self._files:
            tracked.follow_symlinks = tracked.source in following
        self._first_scan = not self._files
        self._copies = CopyAdoption(signature_bytes, clock)
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

    def readable(self) -> list[TrackedFile]:
        return [
            f
            for f in self._files
            if f.fd is not None and f.state is not FileState.DONE and not f.finished
        ]

    def close(self) -> None:
        for tracked in self._files:
            tracked.close()

    def scan(self) -> None:
        """Glob every source and reconcile the result with the tracked files."""
        self._copies.settling = False
        self.scans += 1
        self._held_now = set()
        for source in self._sources:
            found = find_files(source)
            unclaimed = self._reconcile_known(source.name, found)
            for inode in unclaimed:
                self._look_at(source, found[inode], inode)
            # A copy at the source's paths was adopted above; only then look off them.
            for tracked in self._files:
                if tracked.source == source.name and tracked.state is FileState.DETACHED:
                    known = {
                        (f.dev, f.ino)
                        for f in self._files
                        if f is not tracked and f.state in _CLAIMING_STATES
                    }
                    self._copies.find_off_paths(tracked, found, known)
                    self._copies.give_up_if_due(tracked)
        self._held = {inode: held for inode, held in self._held.items() if inode in self._held_now}
        self._first_scan = False

    # -- scan steps --------------------------------------------------------------------------

    def _reconcile_known(self, source: str, found: dict[Inode, tuple[str, int]]) -> list[Inode]:
        claimed: set[Inode] = set()
        for tracked in list(self._files):
            if tracked.source != source or tracked.state in (FileState.DONE, FileState.DETACHED):
                continue
            inode = (tracked.dev, tracked.ino)
            if inode in found:
                if self._recheck(tracked, found[inode]):
                    claimed.add(inode)  # by the file or the generation that took it over
            elif tracked.state is FileState.COPIED:
                # Renamed off the paths or deleted: read what is left through the descriptor.
                if tracked.fd is None:
                    tracked.state = FileState.DONE
                else:
                    tracked.finished = False
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
            elif tracked.fd is None:
                log.warning(
                    "%s is gone; bytes after offset %d could not be read",
                    shown_path(tracked.path),
                    tracked.read_offset,
                )
                tracked.state = FileState.DONE
        return [inode for inode in found if inode not in claimed]

    def _recheck(self, tracked: TrackedFile, entry: tuple[str, int]) -> bool:
        """A tracked file whose inode is still at a path: same, replaced, or cut. Returns
        whether the inode is still tracked (False: it holds a new file now)."""
        path, size = entry
        if tracked.state is FileState.COPIED:
            # Kept open, so that its inode cannot be handed to another file (the next copy)
            # while it is claimed; after a restart, opened again and, if not all of it was
            # sealed, read on.
            if tracked.fd is None:
                if not tracked.open(path) or not tracked.still_same_file(self._signature_bytes):
                    tracked.close()
                    tracked.state = FileState.DONE  # another file has the inode now
                    return False
                tracked.finished = size <= tracked.read_offset
            tracked.path = path
            return True
        if tracked.fd is None or tracked.path != path:
            tracked.open(path)
        change = tracked.inspect(self._signature_bytes)
        if change is ContentChange.REPLACED:
            log.info("%s was truncated or replaced; waiting for its copy", shown_path(tracked.path))
            self._copies.detached(tracked)
            return False
        if change is ContentChange.CUT:
            self._start_generation(tracked)
        else:
            tracked.state = FileState.LIVE
        return True

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
        generation.fd, tracked.fd = tracked.fd, None
        tracked.state = FileState.DONE
        self._files.append(generation)

    def _find_renamed(self, tracked: TrackedFile) -> bool:
        """After a restart, find a file renamed out of the source's paths by its inode (its
        old folder only), so the lines written before the rename are not lost."""
        for path, info in siblings(tracked.path):
            if (info.st_dev, info.st_ino) == (tracked.dev, tracked.ino):
                if tracked.open(path) and tracked.still_same_file(self._signature_bytes):
                    return True
                tracked.close()
        return False

    def _adopt_or_add(self, source: SourceConfig, entry: tuple[str, int], inode: Inode) -> None:
        path, size = entry
        if size == 0:
            return
        probe = TrackedFile.probe(source.name, path, inode, follow_symlinks=source.follow_symlinks)
        if not probe.open(path):
            return
        assert probe.fd is not None
        try:
            candidates = sorted(
                (
                    f
                    for f in self._files
                    if f.source == source.name
                    and f.state is not FileState.DONE
                    # a truncated file is not the copy of itself
                    and not (f.state is FileState.DETACHED and (f.dev, f.ino) == inode)
                ),
                key=lambda f: f.state is not FileState.DETACHED,
            )
            original = match_signature(probe.fd, candidates)
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
            self._files.append(tracked)
            log.info(
                "tracking %s as %s from offset %d", shown_path(path), tracked.fingerprint, start
            )
        finally:
            probe.close()

    def _look_at(self, source: SourceConfig, entry: tuple[str, int], inode: Inode) -> None:
        """:meth:`_adopt_or_add` one file found at the paths. An error no one expected there is
        that file's alone: it is named in a warning and passed over until the next scan, and
        the other files are tracked and read (a file only enters at its adoption, so one
        passed over holds nothing of a batch yet)."""
        try:
            self._adopt_or_add(source, entry, inode)
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
