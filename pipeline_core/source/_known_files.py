"""What became of the files a watcher tracks, scan by scan.

Each scan reconciles what a source's globs find with its tracked files:

* a known inode that still starts with its signature bytes is the same file (a rename keeps it);
* a known inode whose first bytes changed was truncated or reused: its tracked file is DETACHED
  (its copy is looked for: ``_copy_adoption``) and the inode is treated as new;
* a known inode that kept its first bytes but is now shorter than what was read of it, or whose
  bytes just before the read offset changed, was cut below its offset: what was read of it
  stays read (its tracked file is DONE at its read offset) and the bytes after the cut are a
  new *generation* of the file, tracked under a new fingerprint from the cut on, so no byte is
  read twice and no event id is used twice. The cut is found by comparing the file with the
  last bytes read; a cut further back than those is taken to be at the file's size, with a
  warning naming the bytes that could not be checked;
* a tracked file whose inode is no longer at any path was renamed away or deleted: it is ROTATED
  and read to its end through its open descriptor. Released (``_descriptor_budget``), it is
  looked for in its folder by inode (a rename off the paths is read to its end); else it is
  DONE.
"""

from __future__ import annotations

import logging

from pipeline_core._file_names import shown_path
from pipeline_core.source._content_change import ContentChange, content_change, kept_length
from pipeline_core.source._copy_adoption import CopyAdoption
from pipeline_core.source._descriptor_budget import DescriptorBudget, reopen
from pipeline_core.source._discovery import Inode, siblings
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_registry import FileRegistry
from pipeline_core.source._fingerprint import new_fingerprint
from pipeline_core.source._scan_scope import ScanScope
from pipeline_core.source._tracked_file import TrackedFile

log = logging.getLogger("pipeline_core.source._watcher")
"""The watcher's logger: what becomes of a file is the watcher's to say."""


class KnownFiles:
    """The known side of a :class:`FileWatcher`'s scans: the tracked files looked at again,
    each found the same, moved, truncated (DETACHED), cut (a new generation) or gone.

    Threading model: owned by the watcher, on the collector's mailbox thread; not
    thread-safe.
    """

    def __init__(
        self,
        files: FileRegistry,
        budget: DescriptorBudget,
        copies: CopyAdoption,
        host: str,
        signature_bytes: int,
    ) -> None:
        self._files = files
        self._budget = budget
        self._copies = copies
        self._host = host
        self._signature_bytes = signature_bytes

    def reconcile(
        self,
        source: str,
        found: dict[Inode, tuple[str, int]],
        now: float,
        scope: ScanScope | None = None,
    ) -> list[Inode]:
        """Look at the tracked files of ``source`` (those in ``scope``'s folders, and those
        whose inode was found, when a scan is limited to them); the inodes found that no
        tracked file claims are returned, to be looked at as new."""
        claimed: set[Inode] = set()
        for tracked in list(self._files.files):
            if tracked.source != source or tracked.state in (FileState.DONE, FileState.DETACHED):
                continue
            inode = (tracked.dev, tracked.ino)
            if scope is not None and inode not in found and not scope.holds(tracked):
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
        (:class:`NewFiles`). A released file that changed is opened again, by identity,
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
            tracked.found_at(path)
            return True
        was_open = tracked.fd is not None
        if tracked.released:
            if not reopen(tracked, path):
                return True  # claimed as it was: looked at again at the next scan
        elif tracked.fd is None or tracked.path != path:
            tracked.open(path)
        change = self._follow_change(tracked)
        if change is ContentChange.REPLACED:
            return False
        if change is ContentChange.SAME:
            tracked.move_to(FileState.LIVE)
            self._budget.looked_at(tracked, size, now)
            if not was_open:
                self._budget.keep_within_bound(tracked, now)
        return True

    def _start_generation(self, tracked: TrackedFile) -> None:
        """``tracked`` was cut below its read offset with its first bytes kept: it ends where
        it was read to; the bytes from the cut on are a new generation under a new
        fingerprint (same inode, same descriptor)."""
        kept = kept_length(tracked)
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
        generation.take_descriptor(tracked)
        tracked.move_to(FileState.DONE)
        self._files.add(generation)

    def _find_renamed(self, tracked: TrackedFile) -> bool:
        """After a restart, find a file renamed out of the source's paths by its inode (its
        old folder only), so the lines written before the rename are not lost."""
        for path, info in siblings(tracked.path):
            if (info.st_dev, info.st_ino) == (tracked.dev, tracked.ino):
                if tracked.open(path) and tracked.still_same_file(self._signature_bytes):
                    return True
                tracked.close()
        return False

    def look_again(self, tracked: TrackedFile, now: float) -> bool:
        """Look at a LIVE file (opened again if released) as a scan looks at a file that
        changed: True if it was truncated or cut meanwhile (DETACHED, or DONE with a new
        generation); False if it is still the file read (its end is then compared with a
        lookalike's) or cannot be opened now."""
        if not reopen(tracked):
            return False
        if self._follow_change(tracked) is not ContentChange.SAME:
            return True
        self._budget.looked_at(tracked, tracked.size(), now)
        return False

    def _follow_change(self, tracked: TrackedFile) -> ContentChange:
        """What became of the open file's content, acted on: REPLACED (truncated or reused)
        detaches it to wait for its copy, CUT starts a new generation; SAME is left to the
        caller."""
        change = content_change(tracked, self._signature_bytes)
        if change is ContentChange.REPLACED:
            log.info("%s was truncated or replaced; waiting for its copy", shown_path(tracked.path))
            self._copies.detached(tracked)
        elif change is ContentChange.CUT:
            self._start_generation(tracked)
        return change
