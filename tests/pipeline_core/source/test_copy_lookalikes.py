"""Files that look like a copytruncate copy but are not the copy of the truncated file: each must
neither be read in its place nor keep the real copy from being read.

Both were found by the rotation test with the real tools (``tests/system/test_real_rotation.py``):

* nginx writing the same lines to ``access.log`` and to ``all.log`` beside it: at the first
  copytruncate, ``all.log`` (off the source's paths, same first bytes) was taken for the copy
  and read from the original's offset on, and the real copy was read again as a new file;
* logrotate's ``delaycompress`` deleting the last copy (once compressed) and making the next
  copy, which got the freed inode number: the last copy, read to its end and closed but still
  claiming its inode at its path, claimed the next copy, so the next copy's original waited
  for a copy that never came and what only the copy held was never read. A copy now stays
  open while it is claimed, so its inode number is not free to be handed out.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from pipeline_core.testing import append_bytes, padded_lines, read_everything, tail_folder


def lines(first: int, count: int) -> bytes:
    return padded_lines("line", first, count, width=60)


@pytest.mark.timeout(60)
def test_a_sibling_off_the_paths_with_the_same_first_bytes_is_not_taken_for_the_copy(
    tmp_path: Path,
) -> None:
    live, twin = tmp_path / "access.log", tmp_path / "all.log"  # all.log: off the paths
    for path in (live, twin):
        append_bytes(path, lines(0, 1000))
    watcher, reader, chunks = tail_folder(tmp_path)

    shutil.copyfile(live, tmp_path / "access.log.1")  # copytruncate
    os.truncate(live, 0)
    for path in (live, twin):  # the writer goes on in both logs
        append_bytes(path, lines(1000, 500))
    read_everything(watcher, reader, chunks)
    watcher.close()

    read = chunks.lines()
    assert len(read) == len(set(read)) == 1500, (
        f"{len(read)} lines read, {len(set(read))} distinct; files: "
        f"{[(os.path.basename(f.path), f.state.value, f.read_offset) for f in watcher.files]}"
    )


@pytest.mark.timeout(60)
def test_a_copy_read_to_its_end_does_not_claim_the_next_copy(tmp_path: Path) -> None:
    """logrotate with ``delaycompress``: the last copy is renamed along, compressed and
    deleted, then the next copy is made. A copy read to its end stays open while it is
    claimed, so its inode number cannot be handed to the next copy (which the file system
    would otherwise do at once), and the next copy is adopted by its own original.

    The compressed copy is excluded, as a deployment's source excludes ``*.gz``: read as text,
    its bytes would be a line wherever the compressed stream happens to hold a newline."""
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    append_bytes(live, lines(0, 1000))
    watcher, reader, chunks = tail_folder(tmp_path, exclude=("*.gz",))
    shutil.copyfile(live, copy)  # rotation 1
    os.truncate(live, 0)
    append_bytes(live, lines(1000, 1000))
    read_everything(watcher, reader, chunks)  # the copy is read to its end
    append_bytes(live, lines(2000, 500))  # not read before rotation 2
    copied_inode = os.stat(copy).st_ino

    # Rotation 2: access.log.1 becomes access.log.2.gz, then the next copy is made.
    older = tmp_path / "access.log.2"
    os.rename(copy, older)
    # Its header's time stamp holds newlines, as some of logrotate's do.
    compressed = gzip.GzipFile(tmp_path / "access.log.2.gz", "wb", mtime=0x0A0A0A0A)
    with open(older, "rb") as source, compressed as target:
        shutil.copyfileobj(source, target)
    os.unlink(older)
    shutil.copyfile(live, copy)
    os.truncate(live, 0)
    append_bytes(live, lines(2500, 100))
    read_everything(watcher, reader, chunks)
    watcher.close()

    assert os.stat(copy).st_ino != copied_inode
    read = chunks.lines()
    assert sorted(read) == lines(0, 2600).splitlines(), (
        f"{len(read)} lines read, {len(set(read))} distinct, 2600 written; files: "
        f"{[(os.path.basename(f.path), f.state.value, f.read_offset) for f in watcher.files]}"
    )
