"""Over-long lines: finding one among whole lines, skipping to its end, reading one again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.source import LongLine, read_long_line
from pipeline_core.source._long_line import LongLineScan, first_long_line, prefix_bytes


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[int]:
    path = tmp_path / "access.log"
    path.write_bytes(b"")
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND)
    yield descriptor
    os.close(descriptor)


def test_should_keep_the_first_kib_or_max_line_bytes_if_less() -> None:
    assert prefix_bytes(1 << 20) == 1024
    assert prefix_bytes(100) == 100


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"a\nbb\nccc\n", -1),
        (b"a\nbbbb\nccc\n", -1),  # exactly max_line_bytes is not too long
        (b"a\nbbbbb\ncc\n", 2),
        (b"bbbbbb\nc\nddddd\n", 0),
    ],
)
def test_should_find_the_first_line_longer_than_max_line_bytes(data: bytes, where: int) -> None:
    assert first_long_line(bytearray(data), 4) == where


def test_should_look_on_from_where_it_stopped_while_the_line_grows(fd: int) -> None:
    os.write(fd, b"x" * 3000)
    scan = LongLineScan("fp", 0, b"x" * 1024, 1025)

    assert scan.advance(fd, 512, final=False) is None
    assert scan.scanned == 3000
    assert scan.resumes("fp", 0, b"x" * 1025, 3000)
    os.write(fd, b"y" * 100 + b"\nnext\n")

    assert scan.advance(fd, 512, final=False) == LongLine(3100, True)
    assert scan.advance(fd, 512, final=False) == LongLine(3100, True)  # found: kept


def test_should_end_an_unterminated_line_at_the_end_of_a_final_file(fd: int) -> None:
    os.write(fd, b"x" * 3000)
    scan = LongLineScan("fp", 0, b"x" * 1024, 1025)

    assert scan.advance(fd, 4096, final=True) == LongLine(3000, False)


def test_should_not_resume_another_line_or_a_file_cut_short() -> None:
    scan = LongLineScan("fp", 10, b"abc", 2000)

    assert scan.resumes("fp", 10, b"abcdef", 2010)
    assert not scan.resumes("other", 10, b"abcdef", 2010)
    assert not scan.resumes("fp", 11, b"abcdef", 2010)
    assert not scan.resumes("fp", 10, b"abXdef", 2010)
    assert not scan.resumes("fp", 10, b"abcdef", 2009)


def test_should_read_a_range_holding_an_over_long_line_again_as_its_prefix(fd: int) -> None:
    os.write(fd, b"a\n" + b"L" * 5000 + b"\n" + b"M" * 2000)

    assert read_long_line(fd, 2, 5003, 1024) == (b"L" * 1024, LongLine(5000, True))
    assert read_long_line(fd, 5003, 7003, 1024) == (b"M" * 1024, LongLine(2000, False))
    assert read_long_line(fd, 0, 2, 1024) is None


def test_should_not_take_a_line_of_exactly_max_line_bytes_for_an_over_long_one(fd: int) -> None:
    os.write(fd, b"L" * 1024 + b"\n" + b"M" * 1025)

    assert read_long_line(fd, 0, 1025, 1024) is None
    assert read_long_line(fd, 1025, 2050, 1024) == (b"M" * 1024, LongLine(1025, False))
