"""``RollingFileSink``: append raw lines to a local file, rotated by size."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

from pipeline_core._fault_points import FaultPoint, reached
from pipeline_core.errors import EventDeliveryException, SealError
from pipeline_core.sinks._batch import DeliveryBatch, skip_long_lines
from pipeline_core.sinks._handoff import Barrier, SealedBatch
from pipeline_core.sinks._sink import BatchSink
from pipeline_core.sinks._writeback import fsync_path

log = logging.getLogger(__name__)


class RollingFileSink(BatchSink):
    """Appends the chunks' bytes as they are (whole lines, no per-line work) to ``path``.

    Rotation works like ``logging.handlers.RotatingFileHandler``: before a write would take the
    file past ``max_bytes``, ``path.<backups-1>`` … ``path.1`` are renamed one up (the oldest,
    ``path.<backups>``, is replaced), ``path`` becomes ``path.1`` and a new ``path`` is started;
    with ``backups=0`` the full file is deleted. A chunk that does not fit is cut at its last
    line boundary that fits, so a line is never split across files; a single line longer than
    ``max_bytes`` is written whole into a file of its own. Parent folders are created.

    Durability: writes are unbuffered (chunks are large already); ``on_barrier`` fsyncs the file
    (and its folder after a rotation), so everything delivered before a checkpoint is on disk
    when it is sealed, and returns ``None``. A full file is fsynced before it is renamed.

    A line longer than ``max_line_bytes`` is not written: the collector holds only its first
    bytes, which would pass for the whole line in the file. It is counted in
    ``skipped_long_lines`` and logged; the lake keeps it as a ``line_too_long`` reject.

    If a write fails (a full disk), the file is truncated back to where the batch began when
    no rotation happened in between; otherwise the written part stays and the batch, which
    remains in the channel, is written again (at least once).
    """

    def __init__(
        self, name: str, path: Path, *, max_bytes: int = 128 * 1024 * 1024, backups: int = 5
    ) -> None:
        super().__init__(name)
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        if backups < 0:
            raise ValueError("backups cannot be negative")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._file: io.FileIO | None = None
        self._size = 0
        self._rotations = 0
        self._synced_rotations = 0
        self.skipped_long_lines = 0
        """Over-long lines of delivered batches, not written."""

    def start(self) -> None:
        if self._file is None:
            self._open()

    def stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def deliver(self, batch: DeliveryBatch) -> None:
        began_at, rotations = self._size, self._rotations
        try:
            if self._file is None:
                self._open()
                began_at = self._size
            for chunk in batch.chunks:
                if chunk.long_line is None:
                    self._append(chunk.data)
        except OSError as exc:
            if self._rotations == rotations and self._file is not None:
                self._truncate(began_at)
            raise EventDeliveryException(
                f"file sink {self.name!r}: cannot append to {self.path}: {exc}"
            ) from exc
        self.skipped_long_lines += skip_long_lines(
            batch, log, f"file sink {self.name!r}", "written"
        )

    def on_barrier(self, barrier: Barrier) -> SealedBatch | None:
        if self._file is None:
            return None
        try:
            os.fsync(self._file.fileno())
            if self._synced_rotations != self._rotations:
                fsync_path(self.path.parent)
                self._synced_rotations = self._rotations
        except OSError as exc:
            raise SealError(
                f"file sink {self.name!r}: cannot sync {self.path} for checkpoint "
                f"{barrier.checkpoint_id}: {exc}"
            ) from exc
        return None

    def _append(self, data: bytes | bytearray) -> None:
        """Write ``data`` (whole lines), rotating at line boundaries as needed."""
        view = memoryview(data)
        position, size = 0, len(data)
        while position < size:
            room = self.max_bytes - self._size
            if size - position <= room:
                self._write(view[position:])
                return
            cut = data.rfind(b"\n", position, position + max(room, 0)) + 1
            if cut == 0 and self._size == 0:
                # One line longer than max_bytes: it gets the file to itself.
                cut = data.find(b"\n", position) + 1 or size
            if cut > position:
                self._write(view[position:cut])
                position = cut
            if position < size:
                self._rotate()

    def _write(self, data: memoryview) -> None:
        assert self._file is not None
        reached(FaultPoint.FILE_SINK_WRITING)
        while data:
            written = self._file.write(data) or 0
            self._size += written
            data = data[written:]

    def _rotate(self) -> None:
        assert self._file is not None
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        if self.backups == 0:
            self.path.unlink()
        else:
            for index in range(self.backups - 1, 0, -1):
                older = self._backup(index)
                if older.exists():
                    os.replace(older, self._backup(index + 1))
            os.replace(self.path, self._backup(1))
        self._rotations += 1
        log.info("file sink %r: rotated %s", self.name, self.path)
        self._open()

    def _backup(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = io.FileIO(self.path, "ab")  # unbuffered: chunks are large already
        self._size = self._file.seek(0, os.SEEK_END)

    def _truncate(self, size: int) -> None:
        assert self._file is not None
        try:
            self._file.truncate(size)
            self._size = size
        except OSError as exc:
            log.warning(
                "file sink %r: cannot truncate %s after a failed write: %s",
                self.name,
                self.path,
                exc,
            )
