"""Rotation racing the collector's scans: a copytruncate seen half-way must neither hand new
lines out under the old file's name, nor skip the copy's lines, nor read the copy twice.

* Found by the kill -9 test: lines written after a copytruncate were read from the truncated
  file under the old fingerprint before the next scan noticed (the reader lags behind the writer
  after every restart); the copy then took that fingerprint over at the advanced offset, so as
  many of its own lines were never read, and the new lines were read again under the new
  file's fingerprint.
* A scan catching the copy in its first write (shorter than a signature) tracked it as a new
  file, so the whole copy was read a second time.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline_core.source import TimeSlicedReader, read_chunk
from pipeline_core.testing import MiB, Received, UniqueAccessLines, read_everything, watch
from tests.support.faults import FaultSeed


@pytest.mark.timeout(60)
@pytest.mark.parametrize("read_before_rotation", [0, 400], ids=["unread", "lagging"])
def test_a_copytruncate_between_two_scans_hands_no_new_line_to_the_old_file(
    tmp_path: Path, fault_seed: FaultSeed, read_before_rotation: int
) -> None:
    live = tmp_path / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    old, new = source.lines(0, 1000), source.lines(1000, 700)
    live.write_bytes(b"".join(line + b"\n" for line in old))
    watcher = watch(tmp_path)
    reader = TimeSlicedReader(watcher, chunk_bytes=MiB, max_line_bytes=MiB, slice_seconds=10)
    chunks = Received()
    watcher.scan()
    (tracked,) = watcher.files
    while sum(c.lines for c in chunks) < read_before_rotation:  # a reader behind the writer
        chunk = read_chunk(tracked, 4096, MiB, final=False)
        assert chunk is not None
        chunks.publish(chunk)
    shutil.copyfile(live, tmp_path / "access.log.1")
    os.truncate(live, 0)
    with open(live, "ab") as writer:  # the writer goes on at once
        writer.write(b"".join(line + b"\n" for line in new))

    reader.read_slice(chunks.publish)  # before the next scan
    read_everything(watcher, reader, chunks)
    watcher.close()

    assert chunks.by_file() == sorted([old, new]), fault_seed.note(
        f"lines per file: {[len(lines) for lines in chunks.by_file()]}"
    )


@pytest.mark.timeout(60)
def test_a_copy_caught_in_its_first_write_is_not_read_as_a_new_file(
    tmp_path: Path, fault_seed: FaultSeed
) -> None:
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    source = UniqueAccessLines(fault_seed.value)
    old, new = source.lines(0, 1000), source.lines(1000, 300)
    content = b"".join(line + b"\n" for line in old)
    live.write_bytes(content)
    watcher = watch(tmp_path)
    reader = TimeSlicedReader(watcher, chunk_bytes=MiB, max_line_bytes=MiB, slice_seconds=10)
    chunks = Received()
    read_everything(watcher, reader, chunks)
    copy.write_bytes(content[: fault_seed.rng.randint(1, 1023)])

    watcher.scan()  # sees the copy being written
    copy.write_bytes(content)
    os.truncate(live, 0)
    with open(live, "ab") as writer:
        writer.write(b"".join(line + b"\n" for line in new))
    read_everything(watcher, reader, chunks)
    watcher.close()

    assert chunks.by_file() == sorted([old, new]), fault_seed.note(
        f"lines per file: {[len(lines) for lines in chunks.by_file()]}"
    )
