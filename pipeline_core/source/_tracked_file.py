"""One file being tailed: its identity, its open descriptor and its offsets."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from pipeline_core.metastore import FileRecord, FileState
from pipeline_core.source._chunk import Chunk, count_lines
from pipeline_core.source._fingerprint import Signature, read_signature, signature_matches

log = logging.getLogger(__name__)


@dataclass
class TrackedFile:
    """A file a pipeline reads, owned by the collector's mailbox thread.

    Offsets, in bytes from the start of the file:

    * ``read_offset``: everything before it has been read and handed to the ring;
    * ``barrier_offset``: the read offset when the last checkpoint barrier was injected;
    * ``sealed_offset``: everything before it belongs to a sealed batch.

    ``sealed_offset <= barrier_offset <= read_offset`` always holds. Reading goes through the
    open descriptor, so a renamed or deleted file is still read to its end.
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
    fd: int | None = field(default=None, repr=False)

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
        )

    def record(self, offset: int) -> FileRecord:
        """This file as the metastore stores it, sealed up to ``offset``."""
        return FileRecord(
            source=self.source,
            fingerprint=self.fingerprint,
            path=self.path,
            dev=self.dev,
            ino=self.ino,
            sig_size=self.signature.size,
            sig_crc=self.signature.crc,
            sealed_offset=offset,
            state=self.state,
        )

    # -- descriptor --------------------------------------------------------------------------

    def open(self, path: str) -> bool:
        """Open ``path`` for reading; False (and a warning) if it cannot be opened."""
        self.close()
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            log.warning("cannot open %s: %s", path, exc)
            return False
        self.path = path
        return True

    def mark_rotated(self) -> None:
        self.state = FileState.ROTATED
        self.rotated_at = None

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            finally:
                self.fd = None

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
        if self.fd is None:
            return 0
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return 0

    # -- reading -----------------------------------------------------------------------------

    def read_chunk(self, chunk_bytes: int, max_line_bytes: int, final: bool) -> Chunk | None:
        """Read whole lines from ``read_offset`` (at most about ``chunk_bytes``).

        A last line without its newline waits for it, unless it reached ``max_line_bytes`` (it is
        cut there) or ``final`` is set (the file will not grow: a rotated file at its end).
        Returns None when there is nothing whole to read yet.
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
                log.info("%s no longer starts as it did; leaving it to the next scan", self.path)
                return None
        except OSError as exc:
            log.warning("cannot read %s at %d: %s", self.path, self.read_offset, exc)
            return None
        if not data:
            return None
        cut = data.rfind(b"\n")
        if cut >= 0:
            del data[cut + 1 :]  # in place: no copy of the chunk
        elif len(data) > max_line_bytes:
            del data[max_line_bytes:]
            log.warning(
                "%s: line at offset %d is longer than %d bytes; cut into pieces",
                self.path,
                self.read_offset,
                max_line_bytes,
            )
        elif not final:
            return None
        chunk = Chunk(self.source, self.fingerprint, self.read_offset, data, count_lines(data))
        self.read_offset = chunk.end
        self.lines_since_barrier += chunk.lines
        return chunk


def _pread(fd: int, size: int, offset: int) -> bytearray:
    """Up to ``size`` bytes at ``offset``, in a buffer that can be cut short in place (a
    ``bytes`` would be copied to drop the partial line at its end)."""
    buffer = bytearray(size)
    read = os.preadv(fd, [buffer], offset)
    del buffer[read:]
    return buffer
