"""Incremental writeback: bytes written back as they are written, never failing the writer."""

from __future__ import annotations

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
    writeback = IncrementalWriteback(3, step=10, window=2)

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
