"""DeliveryBatch: its size and its lines as events with stable ids."""

from __future__ import annotations

from pipeline_core.sinks import DeliveryBatch, LogEvent, event_id
from pipeline_core.source import Chunk
from pipeline_core.staging_contract import EventCut, EventRuns, EventSpan
from tests.pipeline_core.sinks.support import FP_A, FP_B, chunk, long_line_chunk


def lines(batch: DeliveryBatch) -> list[tuple[str, bytes]]:
    return [(event.event_id, event.line) for event in batch.events()]


def test_should_make_an_event_per_terminated_line_with_its_offset_as_id() -> None:
    batch = DeliveryBatch((chunk(b"GET /\nPOST /login\n", start=100),), sequence=3)

    assert list(batch.events()) == [
        LogEvent(f"{FP_A}:100", "access", FP_A, 100, b"GET /"),
        LogEvent(f"{FP_A}:106", "access", FP_A, 106, b"POST /login"),
    ]


def test_should_keep_an_unterminated_last_line() -> None:
    batch = DeliveryBatch((chunk(b"first\nno newline", start=10),), sequence=0)

    assert lines(batch) == [(f"{FP_A}:10", b"first"), (f"{FP_A}:16", b"no newline")]


def test_should_keep_empty_lines() -> None:
    batch = DeliveryBatch((chunk(b"\n\nx\n", start=0),), sequence=0)

    assert lines(batch) == [(f"{FP_A}:0", b""), (f"{FP_A}:1", b""), (f"{FP_A}:2", b"x")]


def test_should_follow_the_chunks_in_order_across_files() -> None:
    batch = DeliveryBatch(
        (
            chunk(b"a1\n", start=0, fingerprint=FP_A),
            chunk(b"b1\nb2\n", start=40, fingerprint=FP_B, source="spark"),
        ),
        sequence=9,
    )

    events = list(batch.events())

    assert [(e.source, e.event_id, e.line) for e in events] == [
        ("access", f"{FP_A}:0", b"a1"),
        ("spark", f"{FP_B}:40", b"b1"),
        ("spark", f"{FP_B}:43", b"b2"),
    ]


def test_should_make_no_event_of_an_empty_batch() -> None:
    assert list(DeliveryBatch((), sequence=0).events()) == []
    assert list(DeliveryBatch((chunk(b""),), sequence=0).events()) == []


def test_should_replace_invalid_utf8_in_text() -> None:
    batch = DeliveryBatch((chunk(b"caf\xc3\xa9 \xff\xfe end\n"),), sequence=0)

    (event,) = batch.events()

    assert event.line == b"caf\xc3\xa9 \xff\xfe end"
    assert event.text() == "café \ufffd\ufffd end"


def test_should_count_lines_and_bytes() -> None:
    batch = DeliveryBatch((chunk(b"a\nb\n"), chunk(b"ccc", start=4)), sequence=0)

    assert batch.lines == 3
    assert len(batch) == 3
    assert batch.bytes == 7


def test_should_build_ids_from_fingerprint_and_offset() -> None:
    assert event_id("abc", 42) == "abc:42"


def test_should_make_one_event_of_an_over_long_line_holding_its_prefix() -> None:
    long_line = long_line_chunk(start=4, line_bytes=3_000_000, prefix=b"x" * 1024)
    batch = DeliveryBatch(
        (chunk(b"a\nb\n"), long_line, chunk(b"c\n", start=long_line.end)), sequence=0
    )

    events = list(batch.events())

    assert [(e.byte_offset, e.line, e.line_bytes) for e in events] == [
        (0, b"a", None),
        (2, b"b", None),
        (4, b"x" * 1024, 3_000_000),
        (3_000_005, b"c", None),
    ]
    assert events[2] == LogEvent(f"{FP_A}:4", "access", FP_A, 4, b"x" * 1024, line_bytes=3_000_000)
    assert [e.truncated for e in events] == [False, False, True, False]
    assert batch.lines == 4


def test_should_make_one_event_of_a_multiline_events_lines() -> None:
    data = b"ERROR failed\nTraceback:\n  File x\nKeyError\nINFO next\n  more\n"
    spans = EventRuns.of([EventSpan(0, 4), EventSpan(5, 1, EventCut.HEADLESS)])
    batch = DeliveryBatch((Chunk("app", FP_A, 100, data, 6, events=spans),), sequence=0)

    events = list(batch.events())

    assert [(e.event_id, e.line, e.lines, e.cut) for e in events] == [
        (f"{FP_A}:100", b"ERROR failed\nTraceback:\n  File x\nKeyError", 4, None),
        (f"{FP_A}:142", b"INFO next", 1, None),
        (f"{FP_A}:152", b"  more", 1, EventCut.HEADLESS),
    ]
