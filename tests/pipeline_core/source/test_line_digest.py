"""The last lines read, as CRC-32s: built from bytes, kept as text, compared with a file."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline_core.source._line_digest import DIGEST_LINES, LineDigest

LINES = [b"line %03d of the log\n" % n for n in range(100)]
CONTENT = b"".join(LINES)


def offset_of(line: int) -> int:
    return sum(len(x) for x in LINES[:line])


def test_should_digest_the_last_whole_lines_before_an_offset() -> None:
    tail = CONTENT[-500:]
    digest = LineDigest.of(tail, len(CONTENT), offset_of(90))

    assert digest is not None
    assert digest.ends[-1] == offset_of(90)
    assert len(digest.ends) <= DIGEST_LINES
    assert digest.start == digest.ends[0] - len(LINES[0])
    assert digest.start >= len(CONTENT) - 500


def test_should_start_at_the_files_first_line_when_the_tail_is_the_whole_file() -> None:
    digest = LineDigest.of(CONTENT[: offset_of(3)], offset_of(3), offset_of(3))

    assert digest is not None
    assert (digest.start, digest.ends) == (0, (offset_of(1), offset_of(2), offset_of(3)))


def test_should_have_no_digest_without_a_whole_line_or_outside_the_tail() -> None:
    assert LineDigest.of(b"no newline", 10, 10) is None
    assert LineDigest.of(CONTENT[-100:], len(CONTENT), 5) is None


def test_should_round_trip_through_its_text() -> None:
    digest = LineDigest.of(CONTENT, len(CONTENT), len(CONTENT))
    assert digest is not None

    assert LineDigest.decode(digest.encode()) == digest
    assert LineDigest.decode(None) is None
    assert LineDigest.decode("not;a:digest") is None


def test_should_find_where_a_cut_file_stops_holding_the_lines(tmp_path: Path) -> None:
    path = tmp_path / "log"
    digest = LineDigest.of(CONTENT, len(CONTENT), len(CONTENT))
    assert digest is not None
    first = digest.start
    path.write_bytes(CONTENT[: offset_of(95)] + b"new bytes\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert digest.kept_lines_end(fd, os.fstat(fd).st_size) == offset_of(95)
        assert not digest.last_line_intact(fd)
        os.truncate(path, first + 3)  # within the first line of the digest
        assert digest.kept_lines_end(fd, os.fstat(fd).st_size) is None
    finally:
        os.close(fd)
