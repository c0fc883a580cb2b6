"""Handing a truncated file's fingerprint and offsets to its copytruncate copy.

A DETACHED file (its first bytes changed: truncated) waits for its copy: at the source's paths
the watcher's adoption finds it; off them :meth:`CopyAdoption.find_off_paths` looks in the
file's folder, more warily. A copy that does not turn up within :data:`COPY_WAIT_S` is given
up, with the bytes it held beyond what was read named.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping

from pipeline_core._file_names import shown_path
from pipeline_core.source._discovery import Inode, siblings
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._multiline import EventFraming
from pipeline_core.source._tracked_file import CopyEnd, TrackedFile, probe_file

log = logging.getLogger("pipeline_core.source._watcher")

LEAD_LINE_BYTES = 64 * 1024
"""How far back from a copy's end its last line is looked for (:attr:`TrackedFile.lead_line`)."""
_KEPT_LEADS = 256
"""Copies' last lines kept for truncated files that have not been written again yet."""
HELD_SUCCESSOR_SCANS = 2
"""How many whole scans begun after a truncation was seen a file written into the truncated
file's inode is held back for (not read) while the truncated file waits for its copy: a copy
at the paths is in the first's listing (logrotate makes it before it truncates), one off them
keeps its size from the first to the second and is adopted there."""
COPY_WAIT_S = 30.0
"""How long a DETACHED file waits for its copy. logrotate makes the copy before it truncates,
so a copy that is not there by then is elsewhere (``olddir`` off the paths), already
compressed and deleted, or there is none (the file was emptied)."""


class CopyAdoption:
    """The copy side of a :class:`FileWatcher`'s scans.

    Threading model: owned by the watcher, on the collector's mailbox thread.
    """

    def __init__(
        self,
        signature_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        framings: Mapping[str, EventFraming | None] | None = None,
        detached: Iterable[TrackedFile] = (),
    ) -> None:
        self._signature_bytes = signature_bytes
        self._framings = framings or {}
        """How each source's lines join into events (multiline sources only)."""
        self._clock = clock
        self._sizes: dict[Inode, int] = {}
        """Sizes of the files off the paths looked at as copies, at the last scan."""
        self.settling = False
        """The last scan saw a possible copy off the paths that the next scan may adopt (it
        must keep its size from one scan to the next): scan again before finishing."""
        self.truncated_unread_bytes = 0
        """Bytes seen in files that a truncation destroyed before they were read (a lower
        bound: bytes written after the last look are not known)."""
        self._fresh: dict[Inode, TrackedFile] = {}
        """The files first tracked in this scan, from their first byte, by inode."""
        self._leads: dict[Inode, tuple[bytes, CopyEnd]] = {}
        """Truncated files' copies' last lines, by the truncated file's inode, until a file
        written there is tracked."""
        self._detached: dict[Inode, tuple[TrackedFile, int]] = {
            (f.dev, f.ino): (f, 0) for f in detached
        }
        """The files that were DETACHED (waiting for their copies), by inode, with the number
        of the scan that saw the truncation; one no longer DETACHED is passed over where
        looked up."""
        self._held: dict[Inode, tuple[TrackedFile, int]] = {}
        """Files written into a DETACHED file's inode, held back until its copy is found (or
        :data:`HELD_SUCCESSOR_SCANS` whole scans did not find it), with the number of the scan
        that saw the truncation."""
        self._scans = 0
        self._whole_scans_begun: list[int] = []

    def new_scan(self) -> None:
        """A scan begins: files tracked before it may have been read."""
        self._fresh.clear()
        self._scans += 1

    def end_scan(self, *, whole: bool) -> None:
        """A scan ended (``whole``: of every folder): a held-back file whose truncated file no
        longer waits for a copy, or whose truncated file's copy :data:`HELD_SUCCESSOR_SCANS`
        whole scans begun after the truncation was seen did not find, is read from now on
        (without a lead: the truncation had no copy, or one too far to find). While any is
        held, the next scan is soon (:attr:`settling`)."""
        if whole:
            self._whole_scans_begun.append(self._scans)
            del self._whole_scans_begun[:-HELD_SUCCESSOR_SCANS]
        for inode, (successor, truncated_in) in list(self._held.items()):
            after = sum(1 for scan in self._whole_scans_begun if scan > truncated_in)
            if self._waiting_at(inode) is None or after >= HELD_SUCCESSOR_SCANS:
                del self._held[inode]
                successor.awaits_copy = False
        if self._held:
            self.settling = True

    def _waiting_at(self, inode: Inode) -> tuple[TrackedFile, int] | None:
        """The DETACHED file at ``inode`` waiting for its copy, if any, and the number of the
        scan that saw it truncated."""
        detached = self._detached.get(inode)
        if detached is not None and detached[0].state is not FileState.DETACHED:
            del self._detached[inode]
            return None
        return detached

    def tracked_new(self, tracked: TrackedFile) -> None:
        """``tracked`` was first tracked in this scan, from its first byte, not read yet: if a
        truncated file at its inode had a copy, it continues the copy's last line. If the
        truncated file still waits for its copy, ``tracked`` is held back (not read) until the
        copy is found: the scan that saw the truncation may have listed the folder before
        the copy was made, and what is read first must be judged after the copy's last line."""
        inode = (tracked.dev, tracked.ino)
        lead = self._leads.pop(inode, None)
        if lead is not None:
            tracked.lead_line, tracked.lead_of = lead
        elif (waiting := self._waiting_at(inode)) is not None:
            tracked.awaits_copy = True
            self._held[inode] = (tracked, waiting[1])
        else:
            self._fresh[inode] = tracked

    def _lead_the_successor(
        self, original: TrackedFile, copy_fd: int, size: int, copy_path: str
    ) -> None:
        """What the program writes into ``original``'s truncated file follows its copy's last
        line: the file tracked at that inode in this scan (or the next one tracked there) is
        read after it (a file held back for it, :meth:`tracked_new`, is read from now on). If
        the file tracked in this scan begins with the rest of that line's
        event, the copy's last event is cut (:attr:`TrackedFile.cut_mid_event`)."""
        truncated = (original.dev, original.ino)
        lead = _last_line(copy_fd, size)
        if not lead:
            return
        successor = self._fresh.pop(truncated, None)
        held = self._held.pop(truncated, None)
        if held is not None:
            successor = held[0]
            successor.awaits_copy = False
        if successor is not None and successor.read_offset == 0 and successor.fd is not None:
            successor.lead_line = lead
            framing = self._framings.get(original.source)
            if framing is not None and not original.cut_mid_event:
                try:
                    first = os.pread(successor.fd, LEAD_LINE_BYTES, 0)
                except OSError:
                    first = b""
                original.cut_mid_event = framing.continues(lead, first)
            successor.lead_of = CopyEnd(copy_path, size, original.cut_mid_event)
            return
        self._leads[truncated] = (lead, CopyEnd(copy_path, size, original.cut_mid_event))
        while len(self._leads) > _KEPT_LEADS:
            del self._leads[next(iter(self._leads))]

    def detached(self, tracked: TrackedFile) -> None:
        """``tracked`` was truncated (its first bytes changed): it waits for its copy."""
        tracked.close()
        tracked.move_to(FileState.DETACHED)
        tracked.detached_at = self._clock()
        self._detached[(tracked.dev, tracked.ino)] = (tracked, self._scans)

    def give_up_if_due(self, tracked: TrackedFile) -> None:
        """A DETACHED file whose copy has not turned up within :data:`COPY_WAIT_S` is DONE."""
        if tracked.state is not FileState.DETACHED:
            return
        now = self._clock()
        if tracked.detached_at is None:
            tracked.detached_at = now  # remembered DETACHED across a restart
        if now - tracked.detached_at < COPY_WAIT_S:
            return
        tracked.move_to(FileState.DONE)
        if tracked.seen_size > tracked.read_offset:
            self.truncated_unread_bytes += tracked.seen_size - tracked.read_offset
            log.warning(
                "%s: no copy of it turned up after its truncation; bytes [%d, %d) it held "
                "were not read and are gone",
                shown_path(tracked.path),
                tracked.read_offset,
                tracked.seen_size,
            )
        else:
            log.info("%s was emptied after everything in it was read", shown_path(tracked.path))

    def find_off_paths(
        self, tracked: TrackedFile, found: dict[Inode, tuple[str, int]], known: set[Inode]
    ) -> None:
        """A DETACHED file's copy may lie outside the source's paths (``access.log.1`` when only
        ``access.log`` is read): look for it in the file's folder. Off the paths, any file may
        share the first bytes (a second log of the same server), so a sibling must also hold
        the last bytes read where they were read, and have kept its size since the previous
        scan (a copy is not written to; a log beside it is). ``known``: the inodes other
        tracked files claim."""
        sizes, self._sizes = self._sizes, {}
        for path, info in siblings(tracked.path):
            inode = (info.st_dev, info.st_ino)
            if inode in known or inode in found or info.st_size < tracked.signature.size:
                continue  # at the source's paths: the adoption at the paths handled it
            self._sizes[inode] = info.st_size
            if sizes.get(inode) != info.st_size:
                self.settling = True
                continue
            candidate = probe_file(tracked.source, path, inode, tracked.signature)
            if (
                candidate.open(path)
                and candidate.still_same_file(self._signature_bytes)
                and candidate.fd is not None
                and tracked.memory.holds_what_was_read(candidate.fd)
            ):
                self.adopt(tracked, candidate, rotated=True)
                return
            candidate.close()

    def adopt(self, original: TrackedFile, copy: TrackedFile, *, rotated: bool) -> None:
        """``copy`` (an open probe) is ``original``'s copytruncate copy: the original's
        fingerprint and offsets move to it. ``rotated``: the copy lies off the source's paths."""
        size = copy.size()
        lost_from = max(size, original.read_offset)
        if original.seen_size > lost_from:
            self.truncated_unread_bytes += original.seen_size - lost_from
            log.warning(
                "%s: bytes [%d, %d) written after its copy %s was made were truncated away "
                "before they were read",
                shown_path(original.path),
                lost_from,
                original.seen_size,
                shown_path(copy.path),
            )
        # An event held back at the read offset (it might still grow) was being written when
        # the original was truncated: the copy's last event may lack its rest.
        original.cut_mid_event = original.held_since is not None
        self._detached.pop((original.dev, original.ino), None)
        assert copy.fd is not None
        self._lead_the_successor(original, copy.fd, size, copy.path)
        original.follow_to(copy)
        original.detached_at = None
        original.still_same_file(self._signature_bytes)
        if rotated:
            original.mark_rotated()  # off the paths: read to its end, then done
        else:
            original.move_to(FileState.COPIED)
        if size <= original.read_offset:
            log.info(
                "%s is the copy of %s, which was read to offset %d past the copy's end: "
                "nothing in it is left to read",
                shown_path(copy.path),
                original.fingerprint,
                original.read_offset,
            )
            if rotated:
                original.close()
                original.move_to(FileState.DONE)
            else:
                original.move_to(FileState.KEPT)  # kept open: its inode stays its own
            return
        log.info(
            "%s is the copy of %s; resuming at %d",
            shown_path(copy.path),
            original.fingerprint,
            original.read_offset,
        )


def _last_line(fd: int, size: int) -> bytes:
    """The last line of the file at ``fd`` (``size`` bytes), with its newline; empty if the file
    does not end with one or the line is longer than :data:`LEAD_LINE_BYTES`."""
    if size <= 0:
        return b""
    start = max(0, size - LEAD_LINE_BYTES)
    try:
        tail = os.pread(fd, size - start, start)
    except OSError:
        return b""
    if not tail.endswith(b"\n"):
        return b""
    newline = tail.rfind(b"\n", 0, len(tail) - 1)
    if newline < 0 and start > 0:
        return b""
    return tail[newline + 1 :]
