"""Splitting a segment's bytes into lines, and reading segments, without Spark."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from spark_jobs.staging import SegmentError, read_segment, read_segments, split_segment

SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
CHECKPOINT_ID = 12


def lines_of(data: bytes, start_offset: int = 0) -> list[tuple[int, bytes]]:
    byte_offset, line = split_segment(data, start_offset)
    assert byte_offset.type == pa.int64() and line.type == pa.binary()
    line.validate(full=True)
    return list(zip(byte_offset.to_pylist(), line.to_pylist(), strict=True))


def test_lines_are_the_bytes_before_each_newline_at_their_offsets() -> None:
    assert lines_of(b"ab\ncde\nf\n", 1000) == [(1000, b"ab"), (1003, b"cde"), (1007, b"f")]


def test_an_unterminated_last_line_is_a_line() -> None:
    assert lines_of(b"ab\ncd", 5) == [(5, b"ab"), (8, b"cd")]
    assert lines_of(b"no newline at all", 0) == [(0, b"no newline at all")]


def test_empty_lines_are_lines() -> None:
    assert lines_of(b"\n\na\n\n", 10) == [(10, b""), (11, b""), (12, b"a"), (14, b"")]
    assert lines_of(b"\n", 0) == [(0, b"")]


def test_no_bytes_are_no_lines() -> None:
    assert lines_of(b"", 0) == []


def test_every_other_byte_is_kept() -> None:
    data = b"caf\xc3\xa9 \xff\xfe\n\x00\x00\x00\nGET / HTTP/1.1\r\n\r\n\rend\r"
    assert lines_of(data, 0) == [
        (0, b"caf\xc3\xa9 \xff\xfe"),
        (9, b"\x00\x00\x00"),
        (13, b"GET / HTTP/1.1\r"),
        (29, b"\r"),
        (31, b"\rend\r"),
    ]


def test_lines_agree_with_bytes_split() -> None:
    data = b"".join(bytes([n % 7 + 8]) * (n % 13) + b"\n" for n in range(5000)) + b"tail"
    expected = data.split(b"\n")
    found = lines_of(data, 123)
    assert [line for _, line in found] == expected
    assert [offset for offset, _ in found][-1] == 123 + len(data) - len(b"tail")


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def segment_batch(
    path: str,
    segments: list[tuple[int, int, int, int]],
    line_bytes: list[int | None] | None = None,
) -> pa.RecordBatch:
    """``SEGMENT_SCHEMA`` rows as the workers receive them: (start_offset, part_offset, length,
    lines) of one file of host web-1 in checkpoint ``CHECKPOINT_ID``, and each segment's
    ``line_bytes`` (default: none is an over-long line)."""
    count = len(segments)
    return pa.RecordBatch.from_pydict(
        {
            "path": [path] * count,
            "checkpoint_id": pa.array([CHECKPOINT_ID] * count, pa.int64()),
            "host": ["web-1"] * count,
            "sealed_at": pa.array([SEALED_AT] * count, pa.timestamp("us", tz="UTC")),
            "file_fingerprint": ["f" * 16] * count,
            "start_offset": pa.array([s[0] for s in segments], pa.int64()),
            "part_offset": pa.array([s[1] for s in segments], pa.int64()),
            "length": pa.array([s[2] for s in segments], pa.int64()),
            "lines": pa.array([s[3] for s in segments], pa.int64()),
            "line_bytes": pa.array(line_bytes or [None] * count, pa.int64()),
        }
    )


def test_read_segments_yields_a_batch_of_lines_per_segment(tmp_path: Path) -> None:
    path = write(tmp_path / "part-a-00000.lines", b"a\nbb\n" + b"ccc\nd")
    batch = segment_batch(path, [(100, 0, 5, 2), (900, 5, 0, 0), (500, 5, 5, 2)])

    out = list(read_segments(iter([batch])))

    assert [b.num_rows for b in out] == [2, 2]
    rows = [row for b in out for row in b.to_pylist()]
    assert [(r["byte_offset"], r["line"]) for r in rows] == [
        (100, b"a"),
        (102, b"bb"),
        (500, b"ccc"),
        (504, b"d"),
    ]
    assert {
        (r["file_fingerprint"], r["checkpoint_id"], r["host"], r["sealed_at"]) for r in rows
    } == {("f" * 16, CHECKPOINT_ID, "web-1", SEALED_AT)}


def test_read_segments_gives_an_over_long_lines_prefix_its_full_length(tmp_path: Path) -> None:
    path = write(tmp_path / "part-a-00000.lines", b"a\n" + b"P" * 1024 + b"b\n")
    batch = segment_batch(
        path, [(0, 0, 2, 1), (2, 2, 1024, 1), (5_000_003, 1026, 2, 1)], [None, 5_000_000, None]
    )

    rows = [row for b in read_segments(iter([batch])) for row in b.to_pylist()]

    assert [(r["byte_offset"], r["line"], r["line_bytes"]) for r in rows] == [
        (0, b"a", None),
        (2, b"P" * 1024, 5_000_000),
        (5_000_003, b"b", None),
    ]


def test_a_segment_of_other_lines_than_its_manifest_fails(tmp_path: Path) -> None:
    path = write(tmp_path / "part-a-00000.lines", b"a\nbb\nccc\n")
    batch = segment_batch(path, [(0, 0, 2, 1), (2, 2, 7, 3)])

    message = r"part-a-00000\.lines: the segment at part_offset 2 \(7 bytes\) holds 2 lines, the "
    with pytest.raises(SegmentError, match=message + "manifest says 3"):
        list(read_segments(iter([batch])))


def test_a_short_read_fails(tmp_path: Path) -> None:
    path = write(tmp_path / "part-a-00000.lines", b"a\nbb\n")
    assert read_segment(path, 2, 3) == b"bb\n"

    message = r"part-a-00000\.lines: short read: the segment at part_offset 2 needs bytes up to 9"
    with pytest.raises(SegmentError, match=message + ", the file has 5"):
        read_segment(path, 2, 7)
    with pytest.raises(SegmentError, match=r"missing\.lines: cannot read the segment"):
        read_segment(str(tmp_path / "missing.lines"), 0, 1)
