"""One tailed file: its signature, its offsets and reading whole lines through its descriptor."""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline_core.source import (
    LONG_LINE_PREFIX_BYTES,
    Chunk,
    FileRecord,
    FileState,
    LongLine,
    Signature,
    TrackedFile,
    read_chunk,
    read_signature,
)
from pipeline_core.testing import append

CHUNK = 4096
MAX_LINE = 1024


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "access.log"


def track(path: Path, signature_bytes: int = 1024, sealed_offset: int = 0) -> TrackedFile:
    """A TrackedFile for ``path`` with its descriptor open, as the watcher makes one."""
    info = os.stat(path)
    tracked = TrackedFile(
        source="access",
        fingerprint="00000000000000aa",
        path=str(path),
        dev=info.st_dev,
        ino=info.st_ino,
        signature=Signature(0, 0),
        sealed_offset=sealed_offset,
        state=FileState.LIVE,
    )
    assert tracked.open(str(path))
    assert tracked.fd is not None
    tracked.signature = read_signature(tracked.fd, signature_bytes)
    return tracked


@pytest.fixture
def opened() -> Iterator[list[TrackedFile]]:
    files: list[TrackedFile] = []
    yield files
    for tracked in files:
        tracked.close()


def read_all(
    tracked: TrackedFile, chunk_bytes: int = CHUNK, max_line_bytes: int = MAX_LINE
) -> list[Chunk]:
    chunks = []
    while (chunk := read_chunk(tracked, chunk_bytes, max_line_bytes, final=False)) is not None:
        chunks.append(chunk)
    return chunks


# -- signature ---------------------------------------------------------------------------------


def test_should_grow_the_signature_up_to_signature_bytes(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"short")
    tracked = track(log, signature_bytes=64)
    opened.append(tracked)
    assert tracked.signature == Signature(6, zlib.crc32(b"short\n"))

    append(log, b"x" * 40)
    assert tracked.still_same_file(64)
    assert tracked.signature.size == 47

    append(log, b"y" * 100)
    assert tracked.still_same_file(64)
    head = log.read_bytes()[:64]
    assert tracked.signature == Signature(64, zlib.crc32(head))


def test_should_keep_a_file_shorter_than_the_signature_as_the_same_file_while_it_grows(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"a")
    tracked = track(log, signature_bytes=1024)
    opened.append(tracked)

    for _ in range(5):
        append(log, b"more")
        assert tracked.still_same_file(1024)

    assert tracked.signature == Signature(log.stat().st_size, zlib.crc32(log.read_bytes()))


def test_should_not_be_the_same_file_once_its_first_bytes_change(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"original first line", b"second")
    tracked = track(log)
    opened.append(tracked)

    with open(log, "r+b") as handle:
        handle.truncate(0)
    assert not tracked.still_same_file(1024)

    append(log, b"a different first line that is long enough")
    assert not tracked.still_same_file(1024)


def test_should_not_be_the_same_file_when_closed(log: Path) -> None:
    append(log, b"line")
    tracked = track(log)
    tracked.close()

    assert tracked.fd is None
    assert not tracked.still_same_file(1024)
    assert tracked.size() == 0
    assert read_chunk(tracked, CHUNK, MAX_LINE, final=True) is None


# -- offsets -----------------------------------------------------------------------------------


def test_should_start_reading_at_the_sealed_offset(log: Path, opened: list[TrackedFile]) -> None:
    append(log, b"sealed", b"unsealed")
    tracked = track(log, sealed_offset=7)
    opened.append(tracked)

    assert (tracked.sealed_offset, tracked.barrier_offset, tracked.read_offset) == (7, 7, 7)
    chunk = read_chunk(tracked, CHUNK, MAX_LINE, final=False)
    assert chunk is not None
    assert (chunk.start, chunk.data) == (7, b"unsealed\n")


def test_should_round_trip_through_its_metastore_record() -> None:
    record = FileRecord(
        source="access",
        fingerprint="00000000000000aa",
        path="/var/log/access.log",
        dev=1,
        ino=2,
        sig_size=10,
        sig_crc=1234,
        sealed_offset=500,
        state=FileState.ROTATED,
    )

    tracked = TrackedFile.from_record(record)

    assert tracked.fd is None
    assert tracked.read_offset == tracked.barrier_offset == 500
    assert tracked.signature == Signature(10, 1234)
    assert tracked.record(500) == record
    assert tracked.record(800).sealed_offset == 800


# -- reading -----------------------------------------------------------------------------------


def test_should_read_whole_lines_and_count_them(log: Path, opened: list[TrackedFile]) -> None:
    append(log, b"one", b"two", b"three")
    tracked = track(log)
    opened.append(tracked)

    chunk = read_chunk(tracked, CHUNK, MAX_LINE, final=False)

    assert chunk == Chunk("access", "00000000000000aa", 0, b"one\ntwo\nthree\n", 3)
    assert tracked.read_offset == chunk.end == 14
    assert tracked.lines_since_barrier == 3
    assert read_chunk(tracked, CHUNK, MAX_LINE, final=False) is None


def test_should_stop_a_chunk_at_the_last_newline_within_chunk_bytes(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, *(f"line {i:04d}".encode() for i in range(100)))  # 10 bytes per line
    tracked = track(log)
    opened.append(tracked)

    chunks = read_all(tracked, chunk_bytes=25)

    assert [c.data for c in chunks[:2]] == [b"line 0000\nline 0001\n", b"line 0002\nline 0003\n"]
    assert all(c.lines == 2 for c in chunks)
    assert b"".join(c.data for c in chunks) == log.read_bytes()


def test_should_wait_for_the_newline_of_a_partial_last_line(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"whole\nhalf-", newline=False)
    tracked = track(log)
    opened.append(tracked)

    first = read_chunk(tracked, CHUNK, MAX_LINE, final=False)
    assert first is not None and first.data == b"whole\n"
    assert read_chunk(tracked, CHUNK, MAX_LINE, final=False) is None
    assert tracked.read_offset == 6

    append(log, b"done")
    second = read_chunk(tracked, CHUNK, MAX_LINE, final=False)
    assert second is not None
    assert (second.start, second.data, second.lines) == (6, b"half-done\n", 1)


def test_should_ship_an_unterminated_last_line_when_final(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"tail without newline", newline=False)
    tracked = track(log)
    opened.append(tracked)

    assert read_chunk(tracked, CHUNK, MAX_LINE, final=False) is None
    chunk = read_chunk(tracked, CHUNK, MAX_LINE, final=True)

    assert chunk is not None
    assert (chunk.data, chunk.lines) == (b"tail without newline", 1)
    assert tracked.read_offset == log.stat().st_size


def test_should_find_a_line_longer_than_chunk_bytes(log: Path, opened: list[TrackedFile]) -> None:
    long_line = b"l" * 3000
    append(log, long_line, b"next")
    tracked = track(log)
    opened.append(tracked)

    chunks = read_all(tracked, chunk_bytes=512, max_line_bytes=4096)

    assert b"".join(c.data for c in chunks) == long_line + b"\nnext\n"
    assert sum(c.lines for c in chunks) == 2


def test_should_stage_a_line_longer_than_max_line_bytes_as_one_chunk_of_its_prefix(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"h" * 2500, b"next")
    tracked = track(log)
    opened.append(tracked)

    chunks = read_all(tracked, chunk_bytes=1024, max_line_bytes=1024)

    assert chunks == [
        Chunk("access", "00000000000000aa", 0, b"h" * 1024, 1, long_line=LongLine(2500, True)),
        Chunk("access", "00000000000000aa", 2501, b"next\n", 1),
    ]
    assert chunks[0].end == 2501
    assert tracked.read_offset == log.stat().st_size
    assert tracked.lines_since_barrier == 2


def test_should_keep_at_most_long_line_prefix_bytes_of_an_over_long_line(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"p" * 10_000)
    tracked = track(log)
    opened.append(tracked)

    (chunk,) = read_all(tracked, chunk_bytes=1024, max_line_bytes=4096)

    assert chunk.data == b"p" * LONG_LINE_PREFIX_BYTES
    assert chunk.long_line == LongLine(10_000, True)
    assert (chunk.start, chunk.end, chunk.lines) == (0, 10_001, 1)


def test_should_ship_the_lines_before_an_over_long_line_found_inside_a_chunk(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"a", b"h" * 3000, b"b", b"c" * 1024)
    tracked = track(log)
    opened.append(tracked)

    chunks = read_all(tracked, chunk_bytes=8192, max_line_bytes=1024)

    assert [(c.start, c.data, c.lines, c.long_line) for c in chunks] == [
        (0, b"a\n", 1, None),
        (2, b"h" * 1024, 1, LongLine(3000, True)),
        (3003, b"b\n" + b"c" * 1024 + b"\n", 2, None),
    ]


def test_should_wait_for_the_end_of_an_over_long_line_without_moving_its_offset(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"a")
    append(log, b"h" * 3000, newline=False)
    tracked = track(log)
    opened.append(tracked)

    assert [c.data for c in read_all(tracked, chunk_bytes=1024, max_line_bytes=1024)] == [b"a\n"]
    append(log, b"h" * 2000, newline=False)
    assert read_chunk(tracked, 1024, 1024, final=False) is None
    assert (tracked.read_offset, tracked.lines_since_barrier) == (2, 1)

    append(log, b"", b"next")
    chunks = read_all(tracked, chunk_bytes=1024, max_line_bytes=1024)

    assert [(c.start, c.end, c.long_line) for c in chunks] == [
        (2, 5003, LongLine(5000, True)),
        (5003, 5008, None),
    ]


def test_should_ship_an_unterminated_over_long_line_at_the_end_of_a_final_file(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"h" * 3000, newline=False)
    tracked = track(log)
    opened.append(tracked)

    assert read_chunk(tracked, 1024, 1024, final=False) is None
    chunk = read_chunk(tracked, 1024, 1024, final=True)

    assert chunk is not None
    assert (chunk.data, chunk.long_line) == (b"h" * 1024, LongLine(3000, False))
    assert tracked.read_offset == chunk.end == 3000


@pytest.mark.parametrize("chunk_bytes", [512, 1024])
def test_should_read_a_line_of_exactly_max_line_bytes_as_one_line(
    log: Path, opened: list[TrackedFile], chunk_bytes: int
) -> None:
    append(log, b"x" * MAX_LINE, b"next")
    tracked = track(log)
    opened.append(tracked)

    chunks = read_all(tracked, chunk_bytes=chunk_bytes, max_line_bytes=MAX_LINE)

    assert b"".join(c.data for c in chunks) == log.read_bytes()
    assert sum(c.lines for c in chunks) == 2


def test_should_keep_reading_a_deleted_file_through_its_descriptor(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"before")
    tracked = track(log)
    opened.append(tracked)
    with open(log, "ab") as writer:
        os.unlink(log)
        writer.write(b"written after the unlink\n")

    chunks = read_all(tracked)

    assert b"".join(c.data for c in chunks) == b"before\nwritten after the unlink\n"


# -- opening: only the file the scan saw ---------------------------------------------------------


def opens_in_time(action: Callable[[], object], fifo: Path) -> tuple[bool, object]:
    """``action()``'s result, and whether it ended within 10 s (a reader stuck opening
    ``fifo`` is let go by a writer)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(action()), daemon=True)
    thread.start()
    thread.join(10)
    stuck = thread.is_alive()
    if stuck:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
    return not stuck, result[0] if result else None


@pytest.mark.timeout(60)
def test_should_neither_block_on_nor_read_a_fifo_put_in_the_files_place(
    log: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"line")
    tracked = track(log)
    opened.append(tracked)
    tracked.close()
    log.unlink()
    os.mkfifo(log)

    in_time, fd = opens_in_time(tracked.with_descriptor, log)
    assert in_time and fd is None, "opening the file again blocked on a FIFO"
    in_time, done = opens_in_time(lambda: tracked.open(str(log)), log)
    assert in_time and done is False, "opening the file blocked on a FIFO"
    assert tracked.fd is None


def test_should_not_open_another_file_or_a_symlink_at_the_files_path(
    log: Path, tmp_path: Path, opened: list[TrackedFile]
) -> None:
    append(log, b"line")
    tracked = track(log)
    opened.append(tracked)
    tracked.close()
    append(tmp_path / "other", b"another file")
    os.replace(tmp_path / "other", log)
    link = tmp_path / "link.log"
    link.symlink_to(log)

    assert tracked.open(str(log)) is False
    assert tracked.with_descriptor() is None
    info = os.stat(log)
    tracked.dev, tracked.ino = info.st_dev, info.st_ino  # the new file, reached by a symlink
    assert tracked.open(str(link)) is False
    assert tracked.open(str(log)) is True
