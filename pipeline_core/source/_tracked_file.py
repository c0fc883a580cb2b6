"""One file being tailed: its identity, its open descriptor and its offsets."""

from __future__ import annotations

import dataclasses
import errno
import itertools
import logging
import os
import stat
import time
from dataclasses import dataclass, field

from pipeline_core._file_names import shown_path
from pipeline_core.source._chunk import Chunk, LongLine, count_lines
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_record import FileRecord
from pipeline_core.source._fingerprint import Signature, read_signature, signature_matches
from pipeline_core.source._line_digest import LineDigest
from pipeline_core.source._long_line import LongLineScan, first_long_line, prefix_bytes
from pipeline_core.source._multiline import EventFraming
from pipeline_core.source._read_memory import (
    TAIL_WINDOW_BYTES,
    ContentChange,
    KeptLength,
    ReadMemory,
)
from pipeline_core.staging_contract import NO_EVENTS, EventCut, EventRuns, EventSpan

log = logging.getLogger(__name__)

_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)  # a terminal swapped in never becomes a controlling one
)
"""A FIFO opens at once with ``O_NONBLOCK`` (then is refused, not read); a regular file
ignores it."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EMFILE, errno.ENFILE})
"""Why a released file cannot be opened again that is no news: gone, a symlink now (the scan
says so), or no descriptor free for now."""

HEAD_BYTES = 64
"""How many first bytes a tracked file keeps (see :attr:`TrackedFile.head`)."""
_CLOSES = itertools.count(1)
_last_close = 0


def last_close() -> int:
    """A number that changes whenever a tracked file's descriptor is closed (in any thread):
    what was open before may not be any more."""
    return _last_close


_LINE_LOOK_BYTES = 64 * 1024
"""How far past its read offset a file being released is looked at for a line's end (more
unread bytes than this are taken to hold one: see :attr:`TrackedFile.waiting`)."""


def open_regular(path: str, inode: tuple[int, int], *, follow_symlinks: bool) -> int | None:
    """A descriptor for reading ``path`` if it is the regular file ``inode`` (device and
    inode) found by the scan; None if something else is there now (another file, a FIFO, a
    device), the descriptor closed unread. Never blocks. Without ``follow_symlinks`` a
    symlink at ``path`` is not opened (``ELOOP``).

    Raises:
        OSError: ``path`` cannot be opened.
    """
    fd = os.open(path, _READ_FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != inode:
        os.close(fd)
        return None
    return fd


@dataclass
class TrackedFile:
    """A file a pipeline reads, owned by the collector's mailbox thread.

    Offsets, in bytes from the start of the file:

    * ``read_offset``: everything before it has been read and handed to the ring;
    * ``barrier_offset``: the read offset when the last checkpoint barrier was injected;
    * ``sealed_offset``: everything before it belongs to a sealed batch.

    ``sealed_offset <= barrier_offset <= read_offset`` always holds. Reading goes through the
    open descriptor, so a renamed or deleted file is still read to its end.

    The last :data:`TAIL_WINDOW_BYTES` bytes read are kept (with the offset they end at), so a
    file cut below its read offset can be compared with what was read of it; ``seen_size`` is
    the largest size the file was seen to have, so bytes a truncation destroyed before they
    were read can be named.
    """

    source: str
    fingerprint: str
    path: str
    dev: int
    ino: int
    signature: Signature
    sealed_offset: int
    state: FileState
    read_offset: int = 0
    barrier_offset: int = 0
    lines_since_barrier: int = 0
    rotated_at: float | None = None
    """When the reader first found the file ROTATED (by the reader's clock)."""
    detached_at: float | None = None
    """When the watcher found the file DETACHED (monotonic clock)."""
    done_at: float | None = None
    """When the watcher first found the file DONE with every byte read sealed (its clock):
    it is forgotten ``forget_done_after`` later (:meth:`FileWatcher.forget_done`)."""
    seen_size: int = 0
    follow_symlinks: bool = field(default=False, repr=False)
    """Whether ``path`` may be opened through a symlink (the source's ``follow_symlinks``)."""
    memory: ReadMemory = field(default_factory=ReadMemory, repr=False)
    """What it remembers of the bytes read, to tell a cut from a file that grew."""
    fd: int | None = field(default=None, repr=False)
    _long_line: LongLineScan | None = field(default=None, repr=False)
    """The over-long line at (or last at) ``read_offset``, while its end is looked for."""
    held_since: float | None = None
    """Multiline sources: since when (the reader's clock) the event at ``read_offset`` has
    been held back, not handed on because it may still grow; None when nothing is held."""
    cut_mid_event: bool = False
    """Multiline sources: the file is a copytruncate copy whose original was truncated while
    an event at the read offset was held back (it might have grown): the copy's last event is
    marked ``truncated``."""
    lead_line: bytes = b""
    """Multiline sources: the line (with its newline) before the file's first byte where it was
    written: the file is what a program wrote into its log after copytruncate truncated it,
    and the line is its copy's last. The first line read is judged as following it (the rest
    of an event the copy holds the head of is ``headless``). Empty: none known."""
    _recorded: tuple[object, ...] | None = field(default=None, repr=False)
    """What :meth:`record_if_moved` last recorded the file as."""
    flush_at: float | None = None
    """Multiline sources: when (the reader's clock) the event held back is due to be handed
    on if the file does not grow before (None: nothing held)."""
    released: bool = False
    """Its descriptor was closed by the watcher while it is LIVE (idle, or beyond the
    pipeline's ``max_open_files``): it is opened again by identity (:meth:`reopen`) when it
    is written, grows, moves, or a descriptor is free for its unread bytes."""
    checked_size: int = -1
    """Its size when the watcher last made sure it is still this file (or released it); -1:
    not since it was found. A scan that finds it at the same path, with this size and nothing
    read since, has nothing to look at again."""
    checked_offset: int = -1
    """``read_offset`` at that moment."""
    checked_at: float | None = None
    """That moment (the watcher's clock)."""
    active_at: float | None = None
    """When (the watcher's clock) it was last seen to grow or be read (None: not looked at
    yet): the file idle longest is the first released."""
    head: bytes = field(default=b"", repr=False)
    """Its first bytes (at most :data:`HEAD_BYTES`; empty until the watcher looked): a new file
    is compared with them before it is compared with the file itself, so ten thousand files
    are not read for each new one, and a copy being made of a released file is recognised
    without opening it."""
    waiting: bool = False
    """Released with whole lines left to read (the pipeline was at its bound, or could not
    read on): it waits for a descriptor. A file released with nothing after its read offset
    but the start of a line waits for that line's end, that is, to grow."""
    quiet: bool = False
    """Read to its end while file events name every file that changes: the reader leaves it
    out of its rounds until an event names it or a scan looks at the files again (see
    :attr:`TimeSlicedReader.event_driven`)."""

    def __post_init__(self) -> None:
        self.read_offset = max(self.read_offset, self.sealed_offset)
        self.barrier_offset = max(self.barrier_offset, self.sealed_offset)

    @classmethod
    def from_record(cls, record: FileRecord) -> TrackedFile:
        return cls(
            source=record.source,
            fingerprint=record.fingerprint,
            path=record.path,
            dev=record.dev,
            ino=record.ino,
            signature=Signature(record.sig_size, record.sig_crc),
            sealed_offset=record.sealed_offset,
            state=record.state,
            memory=ReadMemory(LineDigest.decode(record.tail_digest)),
        )

    @classmethod
    def probe(
        cls,
        source: str,
        path: str,
        inode: tuple[int, int],
        signature: Signature | None = None,
        *,
        follow_symlinks: bool = False,
    ) -> TrackedFile:
        """A file at ``path`` looked at before it is known what it is (nothing is read of it
        under this name): open it, compare it, then hand its descriptor on or close it."""
        known = signature if signature is not None else Signature(0, 0)
        return cls(
            source,
            "",
            path,
            inode[0],
            inode[1],
            known,
            0,
            FileState.LIVE,
            follow_symlinks=follow_symlinks,
        )

    def record_if_moved(self, offset: int) -> FileRecord | None:
        """:meth:`record` at ``offset``, or None if it would be the same as the last one this
        method returned (no offset, state, name or signature changed): a checkpoint records
        the files that moved, not every file the pipeline follows."""
        key = (offset, self.state.persisted, self.path, self.dev, self.ino, self.signature)
        if key == self._recorded:
            return None
        self._recorded = key
        return self.record(offset)

    def record(self, offset: int) -> FileRecord:
        """This file as the metastore stores it, sealed up to ``offset`` (with the digest of
        the last lines before it, taken from the last bytes read)."""
        digest = self.memory.digest_at(offset)
        return FileRecord(
            source=self.source,
            fingerprint=self.fingerprint,
            path=self.path,
            dev=self.dev,
            ino=self.ino,
            sig_size=self.signature.size,
            sig_crc=self.signature.crc,
            sealed_offset=offset,
            state=self.state.persisted,
            tail_digest=None if digest is None else digest.encode(),
        )

    # -- offsets: every move of them is one of these ---------------------------------------

    def unread(self, chunk: Chunk) -> None:
        """``chunk``, just read, was refused downstream: it will be read again."""
        self.read_offset = chunk.start
        self.lines_since_barrier -= chunk.lines

    def cut_barrier(self) -> tuple[int, int, int] | None:
        """A checkpoint barrier goes in now: the range read since the previous one, as
        ``(start, end, lines)`` (None if nothing was read), and the barrier moves to the read
        offset."""
        if self.read_offset <= self.barrier_offset:
            return None
        cut = (self.barrier_offset, self.read_offset, self.lines_since_barrier)
        self.barrier_offset = self.read_offset
        self.lines_since_barrier = 0
        return cut

    def mark_sealed(self, offset: int) -> None:
        """Everything before ``offset`` belongs to a sealed batch now."""
        self.sealed_offset = offset

    def with_descriptor(self) -> int | None:
        """To read a range again (a re-delivery): the open descriptor, or one opened on the
        file at its path while that is still this file (the caller closes it when it is not
        :attr:`fd`); None if the file is gone (something else is at its path)."""
        if self.fd is not None:
            return self.fd
        inode = (self.dev, self.ino)
        return open_regular(self.path, inode, follow_symlinks=self.follow_symlinks)

    # -- descriptor --------------------------------------------------------------------------

    def open(self, path: str) -> bool:
        """Open ``path`` for reading, if it is still this file (:func:`open_regular`: the
        regular file of this device and inode, reached through a symlink only when
        :attr:`follow_symlinks`); False (and a warning) if it cannot be opened or is not this
        file, and the descriptor open before, if any, is kept."""
        try:
            fd = open_regular(path, (self.dev, self.ino), follow_symlinks=self.follow_symlinks)
        except OSError as exc:
            if exc.errno == errno.ELOOP and not self.follow_symlinks:
                why = "is a symlink now: not read (the source does not follow them)"
                log.warning("%s %s", shown_path(path), why)
            else:
                log.warning("cannot open %s: %s", shown_path(path), exc)
            return False
        if fd is None:
            why = "is no longer the regular file found at the scan: not read"
            log.warning("%s %s", shown_path(path), why)
            return False
        self.close()
        self.fd = fd
        self.path = path
        self.released = self.waiting = False
        return True

    def move_to(self, state: FileState) -> None:
        """Move the file to ``state``; every change of its state is one of these.

        Raises:
            IllegalFileTransitionError: the file lifecycle does not allow the move.
        """
        self.state.check_transition(self.fingerprint, state)
        self.state = state

    def mark_rotated(self) -> None:
        """Renamed away from the paths, or deleted: read to its end through the descriptor,
        after the reader's grace period (counted from now on)."""
        self.move_to(FileState.ROTATED)
        self.rotated_at = None

    def close(self) -> None:
        global _last_close
        if self.fd is not None:
            try:
                os.close(self.fd)
            finally:
                self.fd = None
                _last_close = next(_CLOSES)

    def release(self, size: int) -> None:
        """Close the descriptor of a LIVE file that the pipeline does not read now (idle, or
        beyond its bound), keeping what its reopening needs: its identity and offsets stay,
        ``size`` (its size now) is the one it is checked against, and its first bytes are kept
        as :attr:`head`. Its place is its read offset: nothing is lost by closing it."""
        if self.fd is None:
            return
        unread = size - self.read_offset
        try:
            if len(self.head) < min(HEAD_BYTES, self.signature.size):
                self.head = os.pread(self.fd, min(HEAD_BYTES, self.signature.size), 0)
            self.waiting = unread > 0 and (
                unread > _LINE_LOOK_BYTES or b"\n" in os.pread(self.fd, unread, self.read_offset)
            )
        except OSError:
            self.waiting = unread > 0
        self.checked_size = size
        self.checked_offset = self.read_offset
        self.close()
        self.released = True

    def reopen(self, path: str | None = None) -> bool:
        """Open a released file again at ``path`` (default: where it was), if the regular file
        there is still this one by device and inode (:func:`open_regular`); whether its first
        bytes and the last bytes read are still there is for :meth:`inspect` or the next read
        to tell. False, quietly, when it is not there or not this file any more (a scan
        decides what became of it), or when no descriptor can be had now (``EMFILE``:
        tried again later)."""
        if self.fd is not None:
            return True
        where = self.path if path is None else path
        try:
            fd = open_regular(where, (self.dev, self.ino), follow_symlinks=self.follow_symlinks)
        except OSError as exc:
            if exc.errno not in _NOT_THERE:
                log.warning("cannot open %s again: %s", shown_path(where), exc)
            return False
        if fd is None:
            return False
        self.fd = fd
        self.path = where
        self.released = self.waiting = False
        return True

    def still_same_file(self, signature_bytes: int) -> bool:
        """True if the open file still starts with its signature bytes; grows the signature
        (up to ``signature_bytes``) while the file is shorter than that."""
        if self.fd is None:
            return False
        try:
            if not signature_matches(self.fd, self.signature):
                return False
            if self.signature.size < signature_bytes:
                grown = read_signature(self.fd, signature_bytes)
                if grown.size > self.signature.size:
                    self.signature = grown
        except OSError:
            return False
        return True

    def size(self) -> int:
        """The open file's size (0 when closed). Changes nothing: safe from any thread."""
        if self.fd is None:
            return 0
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return 0

    # -- truncation --------------------------------------------------------------------------

    def inspect(self, signature_bytes: int) -> ContentChange:
        """What became of the open file: still the same, replaced, or cut below what was read.
        Grows the signature while the file is shorter than ``signature_bytes``."""
        if not self.still_same_file(signature_bytes):
            return ContentChange.REPLACED
        size = self.size()
        if size < self.read_offset or not self._tail_intact():
            # Seen after the signature was checked: a copytruncate between the two looks like
            # a cut, so it is one only if the file still starts as it did now.
            try:
                if self.fd is None or not signature_matches(self.fd, self.signature):
                    return ContentChange.REPLACED
            except OSError:
                return ContentChange.REPLACED
            return ContentChange.CUT
        self.seen_size = max(self.seen_size, size)
        return ContentChange.SAME

    def kept_length(self) -> KeptLength:
        """Where the file, cut below its read offset with its first bytes kept, stops holding
        the lines that were read (:meth:`ReadMemory.kept_length`)."""
        return self.memory.kept_length(self.fd, self.size())

    def holds_what_was_read(self, fd: int) -> bool:
        """Whether the file at ``fd`` holds the last bytes read of this one where they were
        read: what a copy of this file does."""
        return self.memory.holds_what_was_read(fd)

    def _tail_intact(self) -> bool:
        return self.fd is None or self.memory.intact(self.fd, self.read_offset)

    # -- reading -----------------------------------------------------------------------------

    def read_chunk(
        self,
        chunk_bytes: int,
        max_line_bytes: int,
        final: bool,
        framing: EventFraming | None = None,
        *,
        now: float = 0.0,
        flush: bool = False,
    ) -> Chunk | None:
        """Read whole lines from ``read_offset`` (at most about ``chunk_bytes``).

        A last line without its newline waits for it, unless ``final`` is set (the file will not
        grow: a rotated file at its end). A line longer than ``max_line_bytes`` is one chunk of
        its own, holding only its prefix (``Chunk.long_line``): it is skipped to its end without
        being held, and waited for while its end is not written yet. Returns None when there is
        nothing whole to read yet.

        With a ``framing`` (a multiline source) the chunk ends after a whole event: the last
        event read stays unread (:attr:`held_since`) while it may still grow, until a line that
        begins another event follows it, a bound closes it, or the read reaches the file's end
        and the file will not grow (``final``) or has not grown for ``framing.flush_after``
        seconds by ``now`` (``flush``: at once, as a one-shot run does).
        """
        if self.fd is None:
            return None
        try:
            data = _pread(self.fd, chunk_bytes, self.read_offset)
            if data and data.rfind(b"\n") < 0 and len(data) == chunk_bytes:
                # One long line: look as far as its newline could be without a cut.
                wanted = max(chunk_bytes, max_line_bytes + 1)
                data = _pread(self.fd, wanted, self.read_offset)
            # Checked after reading: a file truncated and written again (copytruncate) before
            # the watcher's next scan would otherwise hand its new lines out under this name
            # and offset, and the copy that takes this name over would skip them.
            if data and not signature_matches(self.fd, self.signature):
                log.info(
                    "%s no longer starts as it did; leaving it to the next scan",
                    shown_path(self.path),
                )
                return None
            # Likewise a file cut below the read offset and written again past it: its new
            # bytes belong to a new generation that the next scan starts where the cut was.
            if data and not self._tail_intact():
                log.info(
                    "%s was cut below offset %d; leaving it to the next scan",
                    shown_path(self.path),
                    self.read_offset,
                )
                return None
        except OSError as exc:
            log.warning("cannot read %s at %d: %s", shown_path(self.path), self.read_offset, exc)
            return None
        if not data:
            self.held_since = self.flush_at = None
            return None
        read = len(data)
        self.seen_size = max(self.seen_size, self.read_offset + read)
        cut = data.rfind(b"\n")
        too_long = cut < 0 and len(data) > max_line_bytes
        before_long_line = False
        if cut >= 0:
            del data[cut + 1 :]  # in place: no copy of the chunk
            if len(data) > max_line_bytes + 1:  # only then can a whole line in it be too long
                over = first_long_line(data, max_line_bytes)
                if over >= 0:
                    # The lines before the long one, or (none before it) the long one itself.
                    del data[over or data.find(b"\n") :]
                    too_long = over == 0
                    before_long_line = over > 0
        elif not too_long and not final:
            return None
        spans, lines = NO_EVENTS, -1
        if framing is not None and not too_long:
            # Only a multiline source asks whether the read reached the file's end (an fstat).
            at_end = read < chunk_bytes or self.read_offset + read >= self.size()
            framed = self._frame(
                data, framing, read, at_end, before_long_line, final, now, flush, max_line_bytes
            )
            if framed is None:
                return None
            spans, lines = framed
        long_line: LongLine | None = None
        last_bytes: bytes | bytearray = data
        if too_long:
            skipped = self._skip_long_line(data, chunk_bytes, max_line_bytes, final)
            if skipped is None:
                return None
            data, long_line, last_bytes = skipped
        chunk = Chunk(
            self.source,
            self.fingerprint,
            self.read_offset,
            data,
            lines if lines >= 0 else count_lines(data),  # framing counted them
            long_line=long_line,
            events=spans,
        )
        self.memory.remember(last_bytes, chunk.end)
        self.read_offset = chunk.end
        self.lines_since_barrier += chunk.lines
        return chunk

    def _frame(
        self,
        data: bytearray,
        framing: EventFraming,
        read: int,
        at_end: bool,
        before_long_line: bool,
        final: bool,
        now: float,
        flush: bool,
        max_line_bytes: int,
    ) -> tuple[EventRuns, int] | None:
        """Cut ``data`` (whole lines, ``read`` bytes read) after its last whole event, in
        place: its multiline events and its lines, or None (and :attr:`held_since` set) while
        all of it is one event that may still grow.

        Whether the file is quiet is told by its modification time, not by when this process
        saw it grow: a collector started again, or a one-shot run, hands a quiet file's last
        event on at once, and holds a fresh one back (to be read whole by a later run)."""
        idle = 0.0

        def quiet() -> bool:
            """At the file's end: whether the file will not grow, or has not for a while."""
            nonlocal idle
            if final or flush:
                return True
            try:
                idle = time.time() - os.fstat(self.fd).st_mtime if self.fd is not None else 0.0
            except OSError:
                idle = 0.0
            return idle >= framing.flush_after

        complete = before_long_line or (at_end and quiet())
        grows = framing.container is not None and not complete
        after = self.lead_line if self.read_offset == 0 else b""
        framed = framing.frame(
            data, complete=complete, filled=not at_end and not grows, after=after
        )
        window = _GROWN_READS * max(read, framing.max_bytes)
        while grows and not framed.length and not at_end and self.fd is not None:
            # A container's held event waits for its stream's next line, which the other
            # stream's entries may push past this read: read further (up to ``window`` bytes
            # in all), then, if it is still held, cut it at the read's end.
            want = min(len(data) * 3, window - len(data))
            more = _pread(self.fd, want, self.read_offset + len(data)) if want > 0 else b""
            end = more.rfind(b"\n")
            if want > 0 and end < 0 and len(more) < want:
                break  # nothing whole past the read yet: the runtime is writing it
            added = more[: end + 1]
            if want <= 0 or end < 0 or first_long_line(added, max_line_bytes) >= 0:
                framed = framing.frame(data, complete=False, filled=True, after=after)
                break
            data += added
            at_end = len(more) < want
            framed = framing.frame(data, complete=at_end and quiet(), filled=False, after=after)
        spans = framed.spans
        if final and at_end and self.cut_mid_event and framed.length == len(data):
            spans = self._mark_truncated(spans, framed.lines, framed.length)
        if framed.length < len(data):
            if self.held_since is None:
                self.held_since = now
            self.flush_at = now + max(framing.flush_after - max(idle, 0.0), 0.0)
        else:
            self.held_since = self.flush_at = None
        if not framed.length:
            return None
        self.lead_line = b""
        del data[framed.length :]
        return spans, framed.lines

    def _mark_truncated(self, spans: EventRuns, lines: int, length: int) -> EventRuns:
        """``spans`` with the last of ``lines`` lines' event marked ``truncated`` (the copy's
        last event, which copytruncate may have cut), said once in the log."""
        self.cut_mid_event = False
        listed = list(spans)
        last = len(listed) - 1
        if listed and listed[last].first_line + listed[last].lines == lines:
            head = listed[last].head if listed[last].head >= 0 else last
            first = listed[head].first_line
            listed[head] = dataclasses.replace(listed[head], cut=EventCut.TRUNCATED)
        else:
            first = lines - 1
            listed.append(EventSpan(first, 1, EventCut.TRUNCATED))
        log.warning(
            "%s: the event at line %d of the read at offset %d (to offset %d) was being written "
            "when copytruncate truncated its file: it lands as cut 'truncated', and what was "
            "written of it after the copy, as the truncated file's first row, cut 'headless'",
            shown_path(self.path),
            first,
            self.read_offset,
            self.read_offset + length,
        )
        return EventRuns.of(listed)

    def _skip_long_line(
        self, head: bytearray, step: int, max_line_bytes: int, final: bool
    ) -> tuple[bytearray, LongLine, bytes] | None:
        """The line at ``read_offset``, longer than ``max_line_bytes``, whose first bytes are
        ``head`` (no newline among them): its prefix, the line, and its last bytes read (up to
        ``TAIL_WINDOW_BYTES``, its newline included). None until its end is in the file.

        The rest of the line is read ``step`` bytes at a time and dropped. ``read_offset`` stays
        at the line's start until its end is found, so a checkpoint cut meanwhile leaves the
        whole line to the next batch (a restart looks for its end again). How far it was
        looked for is kept, so a line still being written is not read again from its start.
        """
        assert self.fd is not None
        scan = self._long_line
        if scan is None or not scan.resumes(self.fingerprint, self.read_offset, head, self.size()):
            prefix = bytes(head[: prefix_bytes(max_line_bytes)])
            scan = self._long_line = LongLineScan(
                self.fingerprint, self.read_offset, prefix, len(head)
            )
        first_found = scan.found is None
        try:
            line = scan.advance(self.fd, step, final)
            if line is None:
                return None
            keep = min(TAIL_WINDOW_BYTES, line.size)
            last_bytes = bytes(_pread(self.fd, keep, self.read_offset + line.size - keep))
        except OSError as exc:
            log.warning("cannot read %s at %d: %s", shown_path(self.path), self.read_offset, exc)
            return None
        if first_found:  # not again when a refused chunk is read again
            log.warning(
                "%s: the line at offset %d is %d bytes long, over max_line_bytes %d: it is "
                "staged as its first %d bytes, to be rejected as line_too_long",
                shown_path(self.path),
                self.read_offset,
                line.length,
                max_line_bytes,
                len(scan.prefix),
            )
        return bytearray(scan.prefix), line, last_bytes


_GROWN_READS = 8
"""A container's read grows (:meth:`TrackedFile._frame`) to at most this many times its size
(or ``multiline.max_bytes``) in all before a held event is cut at its end."""


def _pread(fd: int, size: int, offset: int) -> bytearray:
    """Up to ``size`` bytes at ``offset``, in a buffer that can be cut short in place (a
    ``bytes`` would be copied to drop the partial line at its end). The buffer is no larger
    than what the file holds there: a tailed file is read often, a few lines at a time, and a
    whole chunk's buffer for each read costs more than the read."""
    size = min(size, os.fstat(fd).st_size - offset)
    if size <= 0:
        return bytearray()
    buffer = bytearray(size)
    read = os.preadv(fd, [buffer], offset)
    del buffer[read:]
    return buffer
