"""Writing a file's bytes back to disk while it is being written, not all at the fsync.

A part file is fsynced when its batch is sealed. Left alone, the kernel keeps everything
written since the last seal dirty in the page cache, and the seal's fsync then waits for all of
it: under load, hundreds of megabytes. :class:`IncrementalWriteback` starts the writeback of
every ``step`` bytes as soon as they are written and, before starting a new step, waits for the
one ``window`` steps back, so no more than ``step`` x ``window`` bytes of the file are ever
dirty (RocksDB's ``bytes_per_sync``). The seal's fsync then only waits for the last few steps.

Once a step is written back, its pages are let go from the page cache (``release=True``, the
default: ``POSIX_FADV_DONTNEED``): the collector does not read what it staged, and the landing
job reads it once, later. Kept, they grew the page cache by every byte tailed, and a new page
is the expensive part of a staging ``write`` on a virtual machine whose memory the host backs
on first touch: tailing 10 MB/s (bench case 4), the sink group's ``write`` of a window's bytes
took 1.9 ms for 755 KB, and 1.1 ms for 873 KB with the written pages let go; alone, 750 KB every
75 ms into a new file took 0.4-2.2 ms per ``write`` kept, 0.3-0.4 ms let go (the kernel hands
them out again first).

On systems without ``sync_file_range`` (not Linux) it does nothing and the fsync does it all.
``fsync_path`` makes a file or a folder (its entries: a rename, a new file) durable by path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

SYNC_FILE_RANGE_WAIT_BEFORE = 1
SYNC_FILE_RANGE_WRITE = 2

_SyncFileRange = Callable[[int, int, int, int], int]


def _load_sync_file_range() -> _SyncFileRange | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


_sync_file_range = _load_sync_file_range()


def fsync_path(path: Path) -> None:
    """Fsync the file or folder at ``path``.

    Raises:
        OSError: it cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class IncrementalWriteback:
    """Keeps at most about ``step`` x ``window`` written bytes of one file dirty.

    Threading model: used by the thread that writes the file. The calls into the kernel release
    the GIL.
    """

    def __init__(
        self, fd: int, *, step: int = 4 << 20, window: int = 2, release: bool = True
    ) -> None:
        # 4 MiB x 2: a seal waits for at most about 12 MiB (p99 of a checkpoint requested
        # while tracebacks are read 70 ms; with 8 MiB x 4, 78 ms).
        self._fd = fd
        self._step = step
        self._window = window
        self._release = release and hasattr(os, "posix_fadvise")
        self._started = 0  # writeback started for [0, started)
        self._enabled = _sync_file_range is not None

    def written(self, end: int) -> None:
        """Bytes ``[0, end)`` of the file have been written."""
        while self._enabled and end - self._started >= self._step:
            waited = self._started - self._window * self._step
            if waited >= 0:
                self._call(waited, self._step, SYNC_FILE_RANGE_WAIT_BEFORE)
                if self._release:
                    self._let_go(waited, self._step)
            self._call(self._started, self._step, SYNC_FILE_RANGE_WRITE)
            self._started += self._step

    def _let_go(self, offset: int, length: int) -> None:
        """Drop ``[offset, offset + length)``, written back, from the page cache (pages still
        dirty stay: the kernel drops clean ones only)."""
        try:
            os.posix_fadvise(self._fd, offset, length, os.POSIX_FADV_DONTNEED)
        except OSError as exc:  # only an optimisation
            log.debug("posix_fadvise failed (%s); keeping written pages cached", exc)
            self._release = False

    def _call(self, offset: int, length: int, flags: int) -> None:
        assert _sync_file_range is not None
        if _sync_file_range(self._fd, offset, length, flags) != 0:
            error = ctypes.get_errno()
            # Only an optimisation: the fsync at the seal still reports real write errors.
            log.debug("sync_file_range failed (%s); leaving writeback to fsync", os.strerror(error))
            self._enabled = False
