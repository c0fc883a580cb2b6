"""One file being tailed: its identity, its open descriptor and its offsets."""

from __future__ import annotations

import errno
import itertools
import logging
import os
import stat
from dataclasses import dataclass, field

from pipeline_core._file_names import shown_path
from pipeline_core.source._chunk import Chunk
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._file_record import FileRecord
from pipeline_core.source._fingerprint import Signature, read_signature, signature_matches
from pipeline_core.source._line_digest import LineDigest
from pipeline_core.source._long_line import LongLineScan
from pipeline_core.source._read_memory import ReadMemory

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

HEAD_BYTES = 64
"""How many first bytes a tracked file keeps (see :attr:`TrackedFile.head`)."""
_CLOSES = itertools.count(1)
_last_close = 0


def last_close() -> int:
    """A number that changes whenever a tracked file's descriptor is closed (in any thread):
    what was open before may not be any more."""
    return _last_close


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


@dataclass(frozen=True)
class CopyEnd:
    """Where a copytruncate copy ends (``path``, ``size``), and whether its last event is
    marked cut there (``truncated``): known held back, or judged by a successor on disk."""

    path: str
    size: int
    marked: bool


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
    long_line_scan: LongLineScan | None = field(default=None, repr=False)
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
    lead_of: CopyEnd | None = None
    """With ``lead_line``: the copy whose last line it is."""
    awaits_copy: bool = False
    """Written into the inode of a truncated file that waits for its copytruncate copy: not
    read until the copy is found, so that its first line is judged after the copy's last
    (:class:`CopyAdoption`)."""
    _recorded: tuple[object, ...] | None = field(default=None, repr=False)
    """What :meth:`record_if_moved` last recorded the file as."""
    flush_at: float | None = None
    """Multiline sources: when (the reader's clock) the event held back is due to be handed
    on if the file does not grow before (None: nothing held)."""
    released: bool = False
    """Its descriptor was closed by the watcher while it is LIVE (idle, or beyond the
    pipeline's ``max_open_files``): it is opened again by identity (``_descriptor_budget``)
    when it is written, grows, moves, or a descriptor is free for its unread bytes."""
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
    read_to_end: bool = False
    """Its last read (:func:`read_chunk`) took every byte it held at that moment: another
    read now would most likely find nothing."""

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

    def mark_read(self, chunk: Chunk, last_bytes: bytes | bytearray) -> None:
        """``chunk`` was just read, ending with ``last_bytes`` (kept to tell a cut from a file
        that grew): the read offset moves past it."""
        self.memory.remember(last_bytes, chunk.end)
        self.read_offset = chunk.end
        self.lines_since_barrier += chunk.lines

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
        self.attach(fd, path)
        return True

    def attach(self, fd: int, path: str) -> None:
        """Read through ``fd`` from now on, a descriptor :func:`open_regular` opened on this
        file at ``path`` (its name now); the one open before, if any, is closed, and a released
        file is no longer."""
        self.close()
        self.fd = fd
        self.path = path
        self.released = self.waiting = False

    def take_descriptor(self, other: TrackedFile) -> None:
        """Read through ``other``'s open descriptor from now on (``other`` is left without
        one): a probe found to be a new file, a file cut whose new generation reads on. The
        descriptor open before, if any, is closed."""
        self.close()
        self.fd, other.fd = other.fd, None

    def follow_to(self, copy: TrackedFile) -> None:
        """This file goes on in ``copy`` (an open probe: its copytruncate copy): the copy's
        descriptor, path and identity (device and inode) are this file's now."""
        self.take_descriptor(copy)
        self.path, self.dev, self.ino = copy.path, copy.dev, copy.ino

    def found_at(self, path: str) -> None:
        """A scan found this file (the same by identity) at ``path``: its name now."""
        self.path = path

    def release(self, *, waiting: bool) -> None:
        """Close the descriptor of a LIVE file not read now, to be opened again by identity
        (:attr:`released`); ``waiting``: it has whole lines left to read."""
        self.close()
        self.released = True
        self.waiting = waiting

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


def probe_file(
    source: str,
    path: str,
    inode: tuple[int, int],
    signature: Signature | None = None,
    *,
    follow_symlinks: bool = False,
) -> TrackedFile:
    """A file at ``path`` looked at before it is known what it is (nothing is read of it under
    this name): open it, compare it, then hand its descriptor on or close it."""
    known = signature if signature is not None else Signature(0, 0)
    return TrackedFile(
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
