"""A reader caught up and woken again looks at every file before it says it is caught up.

Found by the many-files work (issue 33): a collector tailing six files, each written in turn,
read each line 2-4 s after its write although its file event came within a millisecond.
``TimeSlicedReader.read_turn`` counts the empty turns since the last chunk or scan, and that
count is not started again when a round ends caught up: the next wake-up looks at the one
file at the cursor and, finding it empty, says the pipeline is caught up again. A line
written to another file waits until the cursor comes round to it, one file per wake-up (the
acker's sweep, once a second, or the poll): with N files, up to N wake-ups.

``read_turn`` now starts a new round (every file) once a round ends caught up.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.source import Chunk, FileWatcher, TimeSlicedReader
from tests.support.pipelines import append


@pytest.fixture
def watcher(tmp_path: Path) -> Iterator[FileWatcher]:
    source = SourceConfig(name="access", paths=[str(tmp_path / "*.log")], format=SourceFormat.RAW)
    watcher = FileWatcher([source], "test-host", 1024)
    yield watcher
    watcher.close()


@pytest.mark.timeout(30)
def test_a_reader_woken_after_catching_up_looks_at_every_file(
    tmp_path: Path, watcher: FileWatcher
) -> None:
    for name in "abcdef":
        append(tmp_path / f"{name}.log", f"{name} first".encode())
    watcher.scan()
    reader = TimeSlicedReader(watcher, chunk_bytes=1 << 20, max_line_bytes=1 << 20, slice_seconds=1)
    chunks: list[Chunk] = []

    def publish(chunk: Chunk) -> bool:
        chunks.append(chunk)
        return True

    while not reader.read_turn(publish).caught_up:
        pass
    assert len(chunks) == 6

    for name in "dbfaec":  # each written in turn, one wake-up (a round of turns) each
        append(tmp_path / f"{name}.log", f"{name} again".encode())
        while not reader.read_turn(publish).caught_up:
            pass
        assert bytes(chunks[-1].data) == f"{name} again\n".encode()
