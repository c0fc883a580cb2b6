"""What a sink delivers: the chunks of one ring batch, and the events inside them (lines, or a
multiline source's events)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from pipeline_core.source import Chunk
from pipeline_core.staging_contract import EventCut


def event_id(fingerprint: str, byte_offset: int) -> str:
    """The stable id of a line: ``"<file fingerprint>:<byte offset>"`` (the lake's ``event_id``).

    Sinks that deliver at least once give it to the destination so duplicates can be dropped.
    """
    return f"{fingerprint}:{byte_offset}"


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One event: where it came from and its bytes without the last newline (a multiline
    event's lines keep the newlines between them).

    A line longer than ``max_line_bytes`` is one event too, ``truncated``: ``line`` holds only
    its first bytes and ``line_bytes`` its whole length (the lake rejects it as
    ``line_too_long``). Each sink documents what it does with one.
    """

    event_id: str
    source: str
    fingerprint: str
    byte_offset: int
    line: bytes
    line_bytes: int | None = None
    """An over-long line's whole length in bytes (without its newline); None for the others."""
    lines: int = 1
    """The lines of a multiline event (``line`` holds them with the newlines between them)."""
    cut: EventCut | None = None
    """Why a multiline event is not whole (a bound closed it, or its head is missing)."""

    @property
    def truncated(self) -> bool:
        """Whether ``line`` is only the first bytes of an over-long line."""
        return self.line_bytes is not None

    def text(self) -> str:
        """The line as text; invalid UTF-8 is replaced, never an error."""
        return self.line.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class DeliveryBatch:
    """The chunks a sink group received in one ring batch, in ring order.

    ``sequence`` is the ring sequence of the batch's last event: it identifies the batch in logs
    and lets a sink recognise a batch replayed after a rewind.
    """

    chunks: tuple[Chunk, ...]
    sequence: int

    @property
    def lines(self) -> int:
        return sum(chunk.lines for chunk in self.chunks)

    @property
    def bytes(self) -> int:
        return sum(len(chunk.data) for chunk in self.chunks)

    def __len__(self) -> int:
        return self.lines

    def events(self) -> Iterator[LogEvent]:
        """Every event as a :class:`LogEvent`, in order: a line, or a multiline source's event
        (a Python object per event: for sinks whose destination wants one record per event;
        byte-oriented sinks use ``chunks``)."""
        for chunk in self.chunks:
            if chunk.long_line is not None:
                yield LogEvent(
                    event_id(chunk.fingerprint, chunk.start),
                    chunk.source,
                    chunk.fingerprint,
                    chunk.start,
                    bytes(chunk.data),
                    chunk.long_line.length,
                )
                continue
            data = bytes(chunk.data)  # lines as ``bytes``, whatever buffer the chunk holds
            if chunk.events.has_joins:
                yield from _joined_events(chunk, data)
                continue
            spans = iter(chunk.events)
            span = next(spans, None)
            line = position = 0
            size = len(data)
            while position < size:
                newline = data.find(b"\n", position)
                cut: EventCut | None = None
                lines = 1
                if span is not None and span.first_line == line:
                    # A multiline event: its lines up to the last one's newline.
                    cut, lines = span.cut, span.lines
                    for _ in range(lines - 1):
                        newline = data.find(b"\n", newline + 1)
                    span = next(spans, None)
                end = size if newline < 0 else newline
                yield LogEvent(
                    event_id(chunk.fingerprint, chunk.start + position),
                    chunk.source,
                    chunk.fingerprint,
                    chunk.start + position,
                    data[position:end],
                    lines=lines,
                    cut=cut,
                )
                line += lines
                position = end + 1


def _joined_events(chunk: Chunk, data: bytes) -> Iterator[LogEvent]:
    """The events of a chunk some of whose events are several runs of lines (a container's
    stream, with the other stream's lines between): each event's runs joined, in the order of
    the events' first lines."""
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    offsets = [0]
    for text in lines[:-1]:
        offsets.append(offsets[-1] + len(text) + 1)
    span_at = {span.first_line: (index, span) for index, span in enumerate(chunk.events)}
    rows: list[tuple[int, list[bytes], list[int], EventCut | None]] = []
    row_of_span: dict[int, int] = {}
    line = 0
    while line < len(lines):
        found = span_at.get(line)
        if found is None:
            rows.append((offsets[line], [lines[line]], [1], None))
            line += 1
            continue
        index, span = found
        text = b"\n".join(lines[line : line + span.lines])
        if span.head >= 0:
            row = rows[row_of_span[span.head]]
            row[1].append(text)
            row[2].append(span.lines)
        else:
            row_of_span[index] = len(rows)
            rows.append((offsets[line], [text], [span.lines], span.cut))
        line += span.lines
    for offset, texts, counts, cut in rows:
        yield LogEvent(
            event_id(chunk.fingerprint, chunk.start + offset),
            chunk.source,
            chunk.fingerprint,
            chunk.start + offset,
            b"\n".join(texts),
            lines=sum(counts),
            cut=cut,
        )


def skip_long_lines(batch: DeliveryBatch, log: logging.Logger, sink: str, action: str) -> int:
    """For a sink whose destination cannot mark a line as cut, which leaves out over-long lines
    (the lake keeps them as ``line_too_long`` rejects): how many ``batch`` holds, logged on
    ``log`` as a warning that ``sink`` did not ``action`` (write, insert) them."""
    skipped = [chunk for chunk in batch.chunks if chunk.long_line is not None]
    if skipped:
        log.warning(
            "%s: %d lines longer than max_line_bytes not %s (first: %s:%d)",
            sink,
            len(skipped),
            action,
            skipped[0].fingerprint,
            skipped[0].start,
        )
    return len(skipped)
