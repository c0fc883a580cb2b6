"""What a file newly found at a source's paths is: a new file, a copy, or a copy being made.

A file at the paths that no tracked file claims by its inode is compared with the tracked files
whose first bytes it shares (:meth:`FileRegistry.near`):

* a new inode whose first bytes match a DETACHED file is that file's copy (copytruncate): it
  takes over the fingerprint and the offset (``_copy_adoption``), so the lines written just
  before the truncation are read;
* a new inode whose first bytes match a file still live elsewhere is a copy in the making: it is
  left alone until the original is truncated (or forever, if it never is); so is a new inode
  shorter than a live file's signature that holds exactly that file's first bytes (a copy
  caught in its first write), a released file's told by its first bytes kept. The log says so
  when it is first seen, and warns once it has waited longer than a copytruncate takes;
* any other file is tracked as new, from its first byte (or, at the first scan of a source
  that starts at the end, from after its last whole line).

An error no one expected while looking at a new file passes that file over until the next scan
(a warning names it); the other files are tracked and read.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from pipeline_core._file_names import shown_path
from pipeline_core.config import SourceConfig, StartPosition
from pipeline_core.source._copy_adoption import COPY_WAIT_S, CopyAdoption
from pipeline_core.source._copy_detection import (
    after_last_newline,
    copy_in_the_making,
    match_signature,
    same_bytes_at_end,
)
from pipeline_core.source._descriptor_budget import DescriptorBudget, reopen
from pipeline_core.source._discovery import Inode
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_registry import FileRegistry
from pipeline_core.source._fingerprint import new_fingerprint, read_signature
from pipeline_core.source._known_files import KnownFiles
from pipeline_core.source._tracked_file import HEAD_BYTES, TrackedFile, probe_file

log = logging.getLogger("pipeline_core.source._watcher")
"""The watcher's logger: what a new file is taken for is the watcher's to say."""


class NewFiles:
    """The new side of a :class:`FileWatcher`'s scans: each file found at the paths that no
    tracked file claims is adopted as a copy, held back as a copy being made, or tracked.

    Threading model: owned by the watcher, on the collector's mailbox thread; not
    thread-safe.
    """

    def __init__(
        self,
        files: FileRegistry,
        budget: DescriptorBudget,
        copies: CopyAdoption,
        known: KnownFiles,
        host: str,
        signature_bytes: int,
        clock: Callable[[], float],
        *,
        first_scan: bool,
    ) -> None:
        self._files = files
        self._budget = budget
        self._copies = copies
        self._known = known
        self._host = host
        self._signature_bytes = signature_bytes
        self._clock = clock
        self.first_scan = first_scan
        """No whole scan has ended yet, and no file was tracked before: a source that starts
        at the end starts its files there."""
        self._held: dict[Inode, tuple[float, bool]] = {}
        """Files at the paths held back as live files' copies: since when (by ``clock``) each
        has not changed, and whether a warning said so."""
        self._held_now: set[Inode] = set()

    def start_scan(self) -> None:
        """A scan begins: the files held back are counted again."""
        self._held_now = set()

    def end_whole_scan(self) -> None:
        """A scan of every folder ended: the files held back it did not see are forgotten."""
        self._held = {inode: held for inode, held in self._held.items() if inode in self._held_now}
        self.first_scan = False

    def look_at(
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

    def _adopt_or_add(
        self, source: SourceConfig, entry: tuple[str, int], inode: Inode, now: float
    ) -> None:
        """What the file at ``entry`` (its path and size) is: a DETACHED file's copy (adopted),
        a live file's copy being made (held back), or a file tracked from now on."""
        path, size = entry
        if size == 0:
            return
        self._budget.room_for_probe(now)
        probe = probe_file(source.name, path, inode, follow_symlinks=source.follow_symlinks)
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
                and self._known.look_again(original, now)
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
            start = size if self.first_scan and source.start_at is StartPosition.END else 0
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
            tracked.take_descriptor(probe)
            tracked.head = head
            tracked.seen_size = size  # the reader tells a file read to its end by it
            if not start:
                self._copies.tracked_new(tracked)
            self._files.add(tracked)
            log.info(
                "tracking %s as %s from offset %d", shown_path(path), tracked.fingerprint, start
            )
            self._budget.looked_at(tracked, size, now)
            self._budget.keep_within_bound(tracked, now)
        finally:
            probe.close()

    def _candidates(self, source: str, inode: Inode, head: bytes) -> list[TrackedFile]:
        """The files of ``source`` a new file at ``inode`` starting with ``head`` may be a copy
        of, DETACHED first: a file whose first bytes are known and differ from the new file's
        (over their common length) is none. Looked up by their first bytes
        (:meth:`FileRegistry.near`)."""
        return sorted(
            (
                f
                for f in self._files.near(head)
                if f.source == source
                and f.state is not FileState.DONE
                # a truncated file is not the copy of itself
                and not (f.state is FileState.DETACHED and (f.dev, f.ino) == inode)
                and f.head[: len(head)] == head[: len(f.head)]
            ),
            key=lambda f: f.state is not FileState.DETACHED,
        )

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
            reopen(tracked)  # for copy_in_the_making to compare
        return False

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
