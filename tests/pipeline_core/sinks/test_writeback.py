"""Incremental writeback: bytes written back as they are written, never failing the writer."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline_core.sinks._writeback import IncrementalWriteback


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
