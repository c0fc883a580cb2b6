"""Incremental writeback: bytes written back as they are written, never failing the writer."""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import pytest

from pipeline_core.sinks import _writeback
from pipeline_core.sinks._writeback import (
    SYNC_FILE_RANGE_WAIT_BEFORE,
    SYNC_FILE_RANGE_WRITE,
    IncrementalWriteback,
)


def test_should_write_back_every_step_as_the_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "part"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        writeback = IncrementalWriteback(fd, step=4096, window=2)
        block = bytes(range(256)) * 16
        for written in range(1, 33):
            os.write(fd, block)
            writeback.written(written * len(block))
    finally:
        os.close(fd)

    assert path.read_bytes() == block * 32


def test_should_leave_the_writeback_to_fsync_when_the_kernel_refuses(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "part", os.O_WRONLY | os.O_CREAT)
    os.close(fd)  # a closed descriptor: sync_file_range fails with EBADF
    writeback = IncrementalWriteback(fd, step=4096)

    writeback.written(1 << 20)
    writeback.written(2 << 20)  # no second attempt, no error


def test_should_start_each_step_and_wait_for_the_one_a_window_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int, int]] = []

    def recording(fd: int, offset: int, length: int, flags: int) -> int:
        calls.append((offset, length, flags))
        return 0

    monkeypatch.setattr(_writeback, "_sync_file_range", recording)
    writeback = IncrementalWriteback(3, step=10, window=2, release=False)

    writeback.written(9)  # less than a step: nothing yet
    writeback.written(25)  # steps [0, 10) and [10, 20)
    writeback.written(40)  # steps [20, 30) and [30, 40), each after waiting for a window back

    write, wait = SYNC_FILE_RANGE_WRITE, SYNC_FILE_RANGE_WAIT_BEFORE
    assert calls == [
        (0, 10, write),
        (10, 10, write),
        (0, 10, wait),
        (20, 10, write),
        (10, 10, wait),
        (30, 10, write),
    ]


def test_should_let_a_step_go_from_the_page_cache_once_it_was_written_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, int, int]] = []

    def recording(fd: int, offset: int, length: int, flags: int) -> int:
        calls.append(("wait" if flags == SYNC_FILE_RANGE_WAIT_BEFORE else "write", offset, length))
        return 0

    def advising(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_DONTNEED
        calls.append(("release", offset, length))

    monkeypatch.setattr(_writeback, "_sync_file_range", recording)
    monkeypatch.setattr(os, "posix_fadvise", advising)
    writeback = IncrementalWriteback(3, step=10, window=2)

    writeback.written(40)

    assert calls == [
        ("write", 0, 10),
        ("write", 10, 10),
        ("wait", 0, 10),
        ("release", 0, 10),
        ("write", 20, 10),
        ("wait", 10, 10),
        ("release", 10, 10),
        ("write", 30, 10),
    ]


def test_should_keep_only_the_steps_not_written_back_in_the_page_cache(tmp_path: Path) -> None:
    step, window, steps = 64 * 1024, 2, 16
    path = tmp_path / "part"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        writeback = IncrementalWriteback(fd, step=step, window=window)
        block = os.urandom(step)
        for written in range(1, steps + 1):
            os.write(fd, block)
            writeback.written(written * step)
        resident = _resident_pages(fd, steps * step)
    finally:
        os.close(fd)

    pages = step // mmap.PAGESIZE
    released = resident[: (steps - window - 1) * pages]
    assert not any(released), f"{sum(released)} of {len(released)} released pages still cached"
    assert all(resident[-pages:]), "the last step, not written back yet, was let go"
    assert path.read_bytes() == block * steps


def test_should_keep_the_pages_cached_when_asked_to(tmp_path: Path) -> None:
    step, steps = 64 * 1024, 8
    fd = os.open(tmp_path / "part", os.O_RDWR | os.O_CREAT)
    try:
        writeback = IncrementalWriteback(fd, step=step, window=2, release=False)
        for written in range(1, steps + 1):
            os.write(fd, os.urandom(step))
            writeback.written(written * step)
        resident = _resident_pages(fd, steps * step)
    finally:
        os.close(fd)

    assert all(resident)


def _resident_pages(fd: int, length: int) -> list[bool]:
    """Which pages of the file's first ``length`` bytes are in the page cache (``mincore``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    mapped = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        anchor = ctypes.c_char.from_buffer(mapped)
        try:
            pages = (length + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vector = ctypes.create_string_buffer(pages)
            if libc.mincore(ctypes.addressof(anchor), length, vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return [bool(byte & 1) for byte in vector.raw]
        finally:
            del anchor
    finally:
        mapped.close()
