"""Splitting a segment's bytes into lines and events, and reading segments, without Spark."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from spark_jobs.segment_split import SegmentError, SpanRow, split_events, split_segment
from spark_jobs.staging import read_segment, read_segments

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
    events: list[list[SpanRow] | None] | None = None,
) -> pa.RecordBatch:
    """``SEGMENT_SCHEMA`` rows as the workers receive them: (start_offset, part_offset, length,
    lines) of one file of host web-1 in checkpoint ``CHECKPOINT_ID``, and each segment's
    ``line_bytes`` (default: none is an over-long line) and ``events`` (default: none)."""
    count = len(segments)
    span = pa.struct(
        [
            pa.field("first_line", pa.int64(), nullable=False),
            pa.field("lines", pa.int64(), nullable=False),
            pa.field("cut", pa.string()),
        ]
    )
    spans = [
        None if listed is None else [dict(zip(span.names, entry, strict=True)) for entry in listed]
        for listed in (events or [None] * count)
    ]
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
            "events": pa.array(spans, pa.list_(span)),
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


# ---------------------------------------------------------------------------- events


def events_of(
    data: bytes, start_offset: int, spans: list[SpanRow], lines: int | None = None
) -> list[tuple[int, bytes, int, str | None]]:
    """``split_events``'s rows: (byte_offset, bytes, event_lines, cut)."""
    events = split_events(data, start_offset, spans, lines)
    assert events.byte_offset.type == pa.int64() and events.line.type == pa.binary()
    assert events.event_lines.type == pa.int64() and events.cut.type == pa.string()
    events.line.validate(full=True)
    return list(
        zip(
            events.byte_offset.to_pylist(),
            events.line.to_pylist(),
            events.event_lines.to_pylist(),
            events.cut.to_pylist(),
            strict=True,
        )
    )


TRACEBACK = (
    b"2026-11-22 10:00:00 ERROR boom\n"
    b"Traceback (most recent call last):\n"
    b'  File "app.py", line 3, in <module>\n'
    b"KeyError: 'k'\n"
)


def test_an_event_is_its_lines_with_the_newlines_between_them_at_its_first_byte() -> None:
    data = b"before\n" + TRACEBACK + b"after\n"

    assert events_of(data, 1000, [(1, 4, None)], 6) == [
        (1000, b"before", 1, None),
        (1007, TRACEBACK[:-1], 4, None),
        (1007 + len(TRACEBACK), b"after", 1, None),
    ]


def test_events_at_the_segments_start_and_end_and_a_last_line_without_newline() -> None:
    data = b"a1\na2\nb\nc1\nc2\nc3"

    assert events_of(data, 0, [(0, 2, None), (3, 3, "lines")], 6) == [
        (0, b"a1\na2", 2, None),
        (6, b"b", 1, None),
        (8, b"c1\nc2\nc3", 3, "lines"),
    ]
    assert events_of(data + b"\n", 0, [(0, 6, "bytes")]) == [(0, data, 6, "bytes")]


def test_crlf_empty_lines_nuls_and_invalid_utf8_stay_in_an_events_bytes() -> None:
    data = b"head\r\n\r\n\x00\xff\xfe\r\nnext\r\n"

    assert events_of(data, 5, [(0, 3, None)]) == [
        (5, b"head\r\n\r\n\x00\xff\xfe\r", 3, None),
        (5 + 13, b"next\r", 1, None),
    ]


def test_a_cut_one_line_event_and_each_cut_is_its_events() -> None:
    data = b"x\ny\nz1\nz2\nw\n"

    assert events_of(data, 0, [(0, 1, "headless"), (2, 2, "bytes"), (4, 1, "lines")]) == [
        (0, b"x", 1, "headless"),
        (2, b"y", 1, None),
        (4, b"z1\nz2", 2, "bytes"),
        (10, b"w", 1, "lines"),
    ]


def test_without_spans_every_line_is_an_event() -> None:
    assert events_of(b"ab\n\ncd", 7, []) == [
        (7, b"ab", 1, None),
        (10, b"", 1, None),
        (11, b"cd", 1, None),
    ]
    assert events_of(b"", 0, []) == []


def test_events_agree_with_joining_split_lines() -> None:
    lines = [bytes([n % 5 + 97]) * (n % 11) for n in range(3000)]
    data = b"\n".join(lines)  # the last line without its newline
    spans: list[SpanRow] = [(n, 1 + n % 7, None) for n in range(0, 2990, 10)]
    spans.append((2990, 10, "lines"))

    found = events_of(data, 0, spans, len(lines))

    expected: list[bytes] = []
    line = 0
    for first, count, *_ in spans:
        expected.extend(lines[line:first])
        expected.append(b"\n".join(lines[first : first + count]))
        line = first + count
    assert [event for _, event, _, _ in found] == expected
    assert sum(event_lines for _, _, event_lines, _ in found) == len(lines)
    assert found[-1] == (len(data) - len(b"\n".join(lines[2990:])), expected[-1], 10, "lines")


@pytest.mark.parametrize(
    ("spans", "listed"),
    [
        ([(0, 2, None), (1, 2, None)], "event 1 at lines 1..2"),  # overlaps the one before
        ([(2, 1, "headless"), (1, 1, "headless")], "event 1 at lines 1..1"),  # out of order
        ([(3, 2, None)], "event 0 at lines 3..4"),  # past the last line
        ([(0, 0, None)], "event 0 at lines 0..-1"),  # no lines
        ([(-1, 2, None)], "event 0 at lines -1..0"),
    ],
)
def test_spans_not_in_order_apart_and_among_the_lines_are_refused(
    spans: list[SpanRow], listed: str
) -> None:
    with pytest.raises(SegmentError) as raised:
        split_events(b"a\nb\nc\nd\n", 0, spans, 4)
    assert str(raised.value) == (
        f"lists {listed}, not after the event before and among its 4 lines"
    )


def test_the_lines_are_checked_before_the_spans() -> None:
    with pytest.raises(SegmentError, match=r"^holds 2 lines, the manifest says 3$"):
        split_events(b"a\nb\n", 0, [(1, 2, None)], 3)


def test_read_segments_yields_a_row_per_event(tmp_path: Path) -> None:
    data = b"one\n" + TRACEBACK + b"last1\nlast2"
    path = write(tmp_path / "part-a-00000.lines", data)
    batch = segment_batch(
        path,
        [(100, 0, 4, 1), (104, 4, len(data) - 4, 6)],
        events=[None, [(0, 4, None), (4, 2, "bytes")]],
    )

    rows = [row for b in read_segments(iter([batch])) for row in b.to_pylist()]

    assert [(r["byte_offset"], r["line"], r["event_lines"], r["cut"]) for r in rows] == [
        (100, b"one", 1, None),
        (104, TRACEBACK[:-1], 4, None),
        (104 + len(TRACEBACK), b"last1\nlast2", 2, "bytes"),
    ]
    assert {(r["checkpoint_id"], r["host"], r["line_bytes"]) for r in rows} == {
        (CHECKPOINT_ID, "web-1", None)
    }


def test_read_segments_refuses_events_that_do_not_fit_naming_the_part_and_segment(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "part-a-00000.lines", b"a\nb\nc\n")
    batch = segment_batch(path, [(0, 0, 2, 1), (2, 2, 4, 2)], events=[None, [(1, 2, None)]])

    with pytest.raises(SegmentError) as raised:
        list(read_segments(iter([batch])))
    assert str(raised.value) == (
        f"{path}: the segment at part_offset 2 (4 bytes) lists event 0 at lines 1..2, not after "
        "the event before and among its 2 lines"
    )
