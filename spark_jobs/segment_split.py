"""A segment's bytes split into its events, vectorised: the Python workers' half of reading
part files (``spark_jobs.staging.read_segments``), and the driver's count of a part's lines
(``spark_jobs.verification``).

A line is the bytes up to and without its ``\\n``; a segment's last line may lack one (the
unterminated end of a rotated file) and is a line too. An *event* is a line of its own, or,
where the segment lists multiline ``events`` (manifest format 5: a traceback, a stack trace),
the run of lines a span covers, their bytes with the ``\\n`` between them kept and without the
last line's. A segment's spans reach ``split_events`` as Arrow columns (``SpanColumns``), or as
the ``(first_line, lines, cut[, head])`` rows of ``spark_jobs.staging.SEGMENT_SCHEMA``'s
``events``; NumPy finds the newlines and which of them end an event: no Python work per line
or per event. The JVM's reader of local parts (``spark_jobs.jvm_lines``) gives the same rows,
checks and error messages.

The module imports only NumPy, pyarrow and the standard library (the executors import it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

MAX_SEGMENT_BYTES = 2**31 - 1
"""A segment's lines become one Arrow binary array, whose offsets are 32-bit (the collector's
segments are at most 8 MiB)."""

_NEWLINE = 10

SpanRow = tuple[int, int, str | None] | tuple[int, int, str | None, int]
"""An event span as ``spark_jobs.staging.SEGMENT_SCHEMA``'s ``events`` hold it:
``(first_line, lines, cut[, head])``."""


@dataclass(frozen=True)
class SpanColumns:
    """A segment's multiline events column by column, as ``split_events`` takes them: each
    one's first line (counted from 0 in the segment), its lines and its cut (the value of its
    ``EventCut``, or null)."""

    first_line: np.ndarray
    lines: np.ndarray
    cut: pa.StringArray
    head: np.ndarray | None = None
    """Per span, the earlier span whose event it continues (-1: none); None: no span does."""

    @classmethod
    def of(cls, spans: Sequence[SpanRow]) -> SpanColumns:
        """The columns of ``(first_line, lines, cut[, head])`` rows."""
        heads = np.array([span[3] if len(span) > 3 else -1 for span in spans], dtype=np.int64)
        return cls(
            np.array([span[0] for span in spans], dtype=np.int64),
            np.array([span[1] for span in spans], dtype=np.int64),
            pa.array([span[2] for span in spans], pa.string()),
            heads if (heads >= 0).any() else None,
        )

    @classmethod
    def from_arrow(cls, spans: pa.StructArray | None) -> SpanColumns:
        """The columns of a ``spark_jobs.staging.SEGMENT_SCHEMA`` row's ``events``
        (``EVENT_SPAN`` structs; null: none), without a Python object per event."""
        if spans is None or not len(spans):
            return NO_SPANS
        heads = np.full(len(spans), -1, dtype=np.int64)
        if spans.type.get_field_index("head") >= 0:  # a struct written before heads: none
            heads = spans.field("head").fill_null(-1).to_numpy(zero_copy_only=False)
            heads = heads.astype(np.int64)
        return cls(
            spans.field("first_line").to_numpy(zero_copy_only=False).astype(np.int64),
            spans.field("lines").to_numpy(zero_copy_only=False).astype(np.int64),
            spans.field("cut").cast(pa.string()),
            heads if (heads >= 0).any() else None,
        )

    def __len__(self) -> int:
        return len(self.first_line)


NO_SPANS = SpanColumns(np.zeros(0, np.int64), np.zeros(0, np.int64), pa.array([], pa.string()))


class SegmentError(ValueError):
    """A segment of a part file cannot be read, or holds other lines than its manifest says, or
    events that are not in order, apart and among its lines.

    Raised on an executor: it fails the Spark job, and its message names the part file and the
    segment's ``part_offset``.
    """


def count_newlines(data: bytes | bytearray | memoryview) -> int:
    """The ``\\n`` bytes in ``data`` (vectorised)."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE))


@dataclass(frozen=True)
class SplitEvents:
    """A segment's rows as ``split_events`` finds them: one per event, in order."""

    byte_offset: pa.Int64Array
    """Each event's first byte: the segment's ``start_offset`` plus its position."""
    line: pa.BinaryArray
    """Each event's bytes: its lines with the ``\\n`` between them, without the last one's."""
    event_lines: pa.Int64Array
    """Each event's lines (1 for a line no span covers)."""
    cut: pa.StringArray
    """Each event's span's ``cut``, or null."""


def split_segment(data: bytes, start_offset: int) -> tuple[pa.Int64Array, pa.BinaryArray]:
    """The lines of a segment's bytes: ``(byte_offset, line)`` arrays, a row per line (each
    line an event of its own: ``split_events`` without spans).

    Raises:
        SegmentError: the lines' bytes exceed ``MAX_SEGMENT_BYTES``.
    """
    events = split_events(data, start_offset)
    return events.byte_offset, events.line


def split_events(
    data: bytes,
    start_offset: int,
    spans: SpanColumns | Sequence[SpanRow] = NO_SPANS,
    lines: int | None = None,
) -> SplitEvents:
    """The events of a segment's bytes, a row per event: the multiline events ``spans`` lists
    (``(first_line, lines, cut)`` rows or their columns, as a manifest's segment does), and
    every line no span covers.

    A line stops before its ``\\n``; the last line may lack its ``\\n``. An event's bytes are
    its lines' with the ``\\n`` between them, and its ``byte_offset`` is ``start_offset`` plus
    its position in ``data``; nothing else is removed or changed (empty lines, ``\\r``, NULs
    and invalid UTF-8 are kept). Vectorised: NumPy finds the newlines and which of them end an
    event, one ``bytes.replace`` (or a NumPy mask, with spans) drops those, and the offsets and
    cuts follow by arithmetic and a ``take``; no Python work per line or per span.

    Raises:
        SegmentError: ``data`` holds other than ``lines`` lines (when given), the spans are not
            in order, apart and among its lines, or the events' bytes exceed
            ``MAX_SEGMENT_BYTES``. The message goes on from "the segment ...".
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buffer == _NEWLINE)
    count = len(newlines) + (1 if data and data[-1] != _NEWLINE else 0)
    if lines is not None and count != lines:
        raise SegmentError(f"holds {count} lines, the manifest says {lines}")
    if not isinstance(spans, SpanColumns):
        spans = SpanColumns.of(spans)
    _check_spans(spans, count)
    if not count:
        return SplitEvents(
            pa.array([], pa.int64()),
            pa.array([], pa.binary()),
            pa.array([], pa.int64()),
            pa.array([], pa.string()),
        )
    line_starts = np.empty(count, dtype=np.int64)
    line_starts[0] = 0
    line_starts[1:] = newlines[: count - 1] + 1
    if len(spans):
        first, sizes = spans.first_line, spans.lines
        # A line continues an event when a span covers it and it is not the span's first.
        depth = np.zeros(count + 1, dtype=np.int64)
        np.add.at(depth, first + 1, 1)
        np.add.at(depth, first + sizes, -1)
        heads = np.flatnonzero(np.cumsum(depth[:count]) == 0)
        # The newlines that end an event go; those between an event's lines stay (the
        # segment's last line may have none).
        last_lines = np.append(heads[1:] - 1, count - 1)
        keep = np.ones(len(data), dtype=bool)
        keep[newlines[last_lines[last_lines < len(newlines)]]] = False
        values = buffer[keep].tobytes()
        event_lines = np.diff(np.append(heads, count))
        # Each span's event is the one starting at its first line; the others have no cut.
        span_of_event = np.full(len(heads), -1, dtype=np.int64)
        span_of_event[np.searchsorted(heads, first)] = np.arange(len(first))
        cut = spans.cut.take(pa.array(span_of_event, mask=span_of_event < 0))
    else:
        heads = np.arange(count, dtype=np.int64)
        values = data.replace(b"\n", b"")
        event_lines = np.ones(count, dtype=np.int64)
        cut = pa.nulls(count, pa.string())
    events = len(heads)
    if len(values) > MAX_SEGMENT_BYTES:
        raise SegmentError("is too large to split")
    starts = line_starts[heads]
    # Event i starts after i newlines that were dropped: without them, at start - i.
    value_offsets = np.empty(events + 1, dtype=np.int32)
    value_offsets[:events] = starts - np.arange(events, dtype=np.int64)
    value_offsets[events] = len(values)
    line = pa.Array.from_buffers(
        pa.binary(), events, [None, pa.py_buffer(value_offsets), pa.py_buffer(values)]
    )
    byte_offset = pa.Array.from_buffers(
        pa.int64(), events, [None, pa.py_buffer(starts + start_offset)]
    )
    split = SplitEvents(byte_offset, line, pa.array(event_lines, pa.int64()), cut)
    if spans.head is not None:
        split = _joined(split, spans, heads)
    return split


def _joined(split: SplitEvents, spans: SpanColumns, heads: np.ndarray) -> SplitEvents:
    """``split`` (a row per span and per line no span covers) with each span that continues
    an event (``spans.head``) joined to its event's row, after a ``\\n``: a Python object per
    row, as only a container's log has such spans."""
    assert spans.head is not None
    row_of_span = np.searchsorted(heads, spans.first_line)
    texts: list[bytes | None] = split.line.to_pylist()
    counts: list[int] = split.event_lines.to_pylist()
    for span, head in enumerate(spans.head.tolist()):
        if head < 0:
            continue
        row, head_row = int(row_of_span[span]), int(row_of_span[head])
        texts[head_row] = texts[head_row] + b"\n" + texts[row]  # type: ignore[operator]
        counts[head_row] += counts[row]
        texts[row] = None
    kept = np.array([text is not None for text in texts])
    return SplitEvents(
        split.byte_offset.filter(pa.array(kept)),
        pa.array([text for text in texts if text is not None], pa.binary()),
        pa.array(np.array(counts)[kept], pa.int64()),
        split.cut.filter(pa.array(kept)),
    )


def _check_spans(spans: SpanColumns, lines: int) -> None:
    """Raise ``SegmentError`` unless ``spans`` are in order, apart and among ``lines`` lines
    (the manifest's check, again on the executors), naming the first that is not."""
    first, sizes = spans.first_line, spans.lines
    ends = first + sizes
    after = np.concatenate(([0], ends[:-1]))  # where the span before ended
    wrong = (first < after) | (sizes < 1) | (ends > lines)
    if wrong.any():
        number = int(np.argmax(wrong))
        begin, end = int(first[number]), int(ends[number])
        raise SegmentError(
            f"lists event {number} at lines {begin}..{end - 1}, not after the event before and "
            f"among its {lines} lines"
        )
    if spans.head is not None:
        head = spans.head
        index = np.arange(len(head))
        wrong = (head >= index) | ((head >= 0) & (head[np.clip(head, 0, len(head) - 1)] >= 0))
        if wrong.any():
            number = int(np.argmax(wrong))
            raise SegmentError(
                f"lists span {number} as continuing span {int(head[number])}, which is not an "
                "earlier span that begins its event"
            )
