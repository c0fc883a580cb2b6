"""Container logs: which of a runtime's entries join into one event.

A runtime's entries (``_container_entries``: ``cri`` or ``docker_json``) are its container's
lines, a line longer than the runtime's buffer written as several entries, the first ones
*partial*. stdout and stderr are copied into the file by separate threads of the runtime, so
their entries interleave; the entries of one stream join. :func:`frame_entries` tells, for a
read's entries, which events they are: a partial entry's rest joins it, and (with a multiline
rule, judged on each stream's lines apart, as the program printed them) a traceback's next line
joins it. An event is its stream's lines only: where the other stream's entries fall between
them, it is several runs of lines, joined (``EventSpan.head``) into one row. A line the format
does not describe is an event of its own (the landing rejects it); it does not stop the read.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pipeline_core.source._container_entries import (
    NOT_AN_ENTRY,
    STDERR,
    STDOUT,
    ContainerLogFormat,
    Positions,
    entry_time,
    parse_entries,
)
from pipeline_core.staging_contract import CUT_CODES, NO_EVENTS, EventCut, EventRuns

if TYPE_CHECKING:
    from pipeline_core.source._multiline import MultilineRule


def frame_entries(
    data: bytes | bytearray,
    starts: Positions,
    fmt: ContainerLogFormat,
    rule: MultilineRule | None,
    *,
    complete: bool,
    max_lines: int,
    max_bytes: int,
    filled: bool,
    flush_after: float = 0.0,
) -> tuple[int, EventRuns]:
    """The events of a read of a container's log (whole lines, starting at ``starts``), as
    ``frame`` (``pipeline_core.source._multiline``) takes them: how many of its lines may be
    handed on, and the events among them that are not one line each.

    An entry joins the event of its stream's entry before it when that one was partial, or
    when ``rule`` (judging the stream's lines as the program printed them) says its line
    continues. An event's lines are its stream's: where the other stream's entries fall
    between them, the event is several spans, joined to the first (``EventSpan.head``). The
    bounds count an event's own lines and bytes. Unless ``complete``, each stream's last event
    (and, for a rule that judges a line by the lines after it, those events ``rule.lookahead``
    lines of their stream settle) is held back, with every event from the first held one's
    first line on: the read stops at an event's first line, after whole events only. Without a
    rule, only a line still being written (its last entry partial) is held. A stream whose
    last entry is ``flush_after`` seconds older, by the runtime's times, than the read's last
    entry has gone quiet while the other writes: nothing of it is held.
    """
    count, size = len(starts), len(data)
    entries = parse_entries(data, starts, fmt)
    stream, partial = entries.stream, entries.partial
    previous_same = np.full(count, -1, dtype=np.int64)  # the stream's entry before each one
    of_stream = [np.flatnonzero(stream == code) for code in (STDOUT, STDERR)]
    for lines in of_stream:
        previous_same[lines[1:]] = lines[:-1]
    known = previous_same >= 0
    joins = np.zeros(count, dtype=np.bool_)
    joins[known] = partial[previous_same[known]]  # the rest of a partial entry's line
    begins_line = ~joins
    if rule is not None:
        for lines in of_stream:
            heads = lines[begins_line[lines]]
            if heads.size:
                joins[heads] |= rule.continuing(*_stream_text(entries.texts, heads))
    joins &= stream != NOT_AN_ENTRY
    headless = joins & ~known  # continues an event that began before the read
    joins &= known
    # Each line's event: a new one where a line does not join, else its stream's line's.
    event = np.empty(count, dtype=np.int64)
    new = ~joins
    event[new] = np.arange(int(new.sum()))
    for index in np.flatnonzero(joins).tolist():  # in order: the line joined is labelled
        event[index] = event[previous_same[index]]
    line_bytes = np.diff(np.append(starts, size))
    rows = _event_rows(event, stream, line_bytes, headless, max_lines, max_bytes)
    cut = count
    if not complete:
        lookahead = 0 if rule is None else rule.lookahead
        newest = _time_of_line(data, starts, count - 1, fmt) if flush_after > 0 else None
        holding = [
            lines
            for lines in of_stream
            if lines.size
            and (rule is not None or partial[lines[-1]])
            and not _quiet(data, starts, lines[-1], fmt, newest, flush_after)
        ]
        held = _held_events(rows, holding, begins_line, lookahead)
        cut = _whole_events_end(rows, held)
        if cut == 0 and filled and lookahead:
            # The read can hold no more lines to settle its events by: hand on those it holds
            # but each stream's last.
            held = _held_events(rows, holding, begins_line, 0)
            cut = _whole_events_end(rows, held)
        if cut == 0:
            if not filled:
                return 0, NO_EVENTS
            cut = count  # an event as large as the whole read: closed at its end
            rows.cut[held & (rows.cut == 0)] = _BYTES
    return cut, rows.spans(cut)


def _time_of_line(
    data: bytes | bytearray, starts: Positions, line: int, fmt: ContainerLogFormat
) -> float | None:
    """The runtime's time of the entry on ``line``."""
    end = int(starts[line + 1]) - 1 if line + 1 < len(starts) else len(data)
    text = bytes(data[int(starts[line]) : end]).rstrip(b"\n")
    return entry_time(text, fmt)


def _quiet(
    data: bytes | bytearray,
    starts: Positions,
    last: int,
    fmt: ContainerLogFormat,
    newest: float | None,
    flush_after: float,
) -> bool:
    """Whether a stream whose last entry is on line ``last`` has written nothing for
    ``flush_after`` seconds before the read's last entry (at ``newest``)."""
    if newest is None or last == len(starts) - 1:
        return False
    own = _time_of_line(data, starts, last, fmt)
    return own is not None and newest - own >= flush_after


def _held_events(
    rows: _EventRows,
    of_stream: list[Positions],
    begins_line: NDArray[np.bool_],
    lookahead: int,
) -> NDArray[np.bool_]:
    """Which events may still grow: the last one of each stream ``of_stream`` lists (unless a
    bound closed it), and with a rule that judges a line by the ``lookahead`` lines of its
    stream after it, the events those lines may still join to."""
    held = np.zeros(len(rows.first), dtype=np.bool_)
    for lines in of_stream:
        if not lines.size:
            continue
        last = rows.of_line[lines[-1]]
        if rows.cut[last] in _CLOSED_BY_BOUND and rows.last[last] == lines[-1]:
            continue  # closed by a bound: nothing joins it
        held[last] = True
        if lookahead:
            starting = lines[begins_line[lines]]  # the stream's lines, as printed
            ours = rows.stream == rows.stream[last]
            if len(starting) > lookahead:
                held |= ours & (rows.last >= starting[-1 - lookahead])
            else:
                held |= ours
    return held


def _stream_text(texts: list[bytes], lines: Positions) -> tuple[bytes, Positions]:
    """The texts of ``lines`` (one stream's, each the first entry of a line) as the program
    printed them: one ``\\n``-ended line each, and where each starts."""
    chosen = [texts[line] for line in lines.tolist()]
    lengths = np.fromiter((len(text) + 1 for text in chosen), np.int64, len(chosen))
    text_starts = np.zeros(len(chosen), dtype=np.int64)
    np.cumsum(lengths[:-1], out=text_starts[1:])
    return b"\n".join(chosen) + b"\n", text_starts


_CODE = CUT_CODES
_BYTES = _CODE[EventCut.BYTES]
_CLOSED_BY_BOUND = {_CODE[EventCut.LINES], _BYTES}


@dataclass
class _EventRows:
    """A read's events (rows of the lake), bounds applied: by event, its first and last line,
    its stream and cut code; by line, its event."""

    of_line: NDArray[np.int64]
    first: NDArray[np.int64]
    last: NDArray[np.int64]
    stream: NDArray[np.int8]
    cut: NDArray[np.int64]
    members: list[NDArray[np.int64]]
    """By event: its lines, for the events of more than one line (others: empty)."""

    def spans(self, end: int) -> EventRuns:
        """The spans of the events before line ``end`` that are not one whole line: each
        event's runs of adjacent lines, the later runs joined to its first."""
        pieces: list[tuple[int, int, int, int]] = []  # first line, lines, cut, event
        for index in np.flatnonzero(self.first < end).tolist():
            members = self.members[index]
            if not members.size:
                if self.cut[index]:
                    pieces.append((int(self.first[index]), 1, int(self.cut[index]), index))
                continue
            breaks = np.flatnonzero(np.diff(members) != 1) + 1
            bounds = [0, *breaks.tolist(), len(members)]
            for run, (begin, stop) in enumerate(itertools.pairwise(bounds)):
                code = int(self.cut[index]) if run == 0 else 0
                pieces.append((int(members[begin]), stop - begin, code, index))
        pieces.sort()
        heads: list[int] = []
        first_piece: dict[int, int] = {}
        for position, (_, _, _, index) in enumerate(pieces):
            heads.append(first_piece.setdefault(index, position))
        return EventRuns.from_codes(
            [piece[0] for piece in pieces],
            [piece[1] for piece in pieces],
            [piece[2] for piece in pieces],
            [-1 if head == position else head for position, head in enumerate(heads)],
        )


def _event_rows(
    event: NDArray[np.int64],
    stream: NDArray[np.int8],
    line_bytes: NDArray[np.int64],
    headless: NDArray[np.bool_],
    max_lines: int,
    max_bytes: int,
) -> _EventRows:
    """The rows the events of a read land as (``event``: each line's event, numbered in the
    order of their first lines), an event over a bound closed there (``LINES``, ``BYTES``) and
    its rest the next rows (``HEADLESS``)."""
    events = int(event.max()) + 1 if event.size else 0
    order = np.argsort(event, kind="stable")  # lines grouped by event, in order within each
    sizes = np.bincount(event, minlength=events)
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    grouped_bytes = np.bincount(event, weights=line_bytes, minlength=events)
    rows_members: list[NDArray[np.int64]] = []
    rows_cut: list[int] = []
    for index in range(events):
        members = order[bounds[index] : bounds[index + 1]]
        cut = _CODE[EventCut.HEADLESS] if headless[members[0]] else 0
        if sizes[index] <= max_lines and grouped_bytes[index] <= max_bytes:
            rows_members.append(members)
            rows_cut.append(cut)
            continue
        for part, part_cut in _bounded_parts(members, line_bytes, max_lines, max_bytes, cut):
            rows_members.append(part)
            rows_cut.append(part_cut)
    of_line = np.empty(len(event), dtype=np.int64)
    first = np.empty(len(rows_members), dtype=np.int64)
    last = np.empty(len(rows_members), dtype=np.int64)
    for row, members in enumerate(rows_members):
        of_line[members] = row
        first[row], last[row] = members[0], members[-1]
    return _EventRows(
        of_line,
        first,
        last,
        stream[first],
        np.array(rows_cut, dtype=np.int64),
        [members if len(members) > 1 else _NO_LINES for members in rows_members],
    )


_NO_LINES = np.zeros(0, dtype=np.int64)


def _bounded_parts(
    members: NDArray[np.int64],
    line_bytes: NDArray[np.int64],
    max_lines: int,
    max_bytes: int,
    cut: int,
) -> list[tuple[NDArray[np.int64], int]]:
    """An event's lines over a bound as its rows: each closed at a bound (``LINES`` at
    ``max_lines`` lines, ``BYTES`` before a line that would bring it over ``max_bytes``), the
    rows after the first ``HEADLESS`` unless a bound closes them too."""
    parts: list[tuple[NDArray[np.int64], int]] = []
    start, total = 0, 0
    sizes = line_bytes[members].tolist()
    for position, size in enumerate(sizes):
        taken = position - start
        if taken and (taken >= max_lines or total + size > max_bytes):
            reason = _CODE[EventCut.LINES] if taken >= max_lines else _BYTES
            parts.append((members[start:position], reason))
            start, total = position, 0
        total += size
    parts.append((members[start:], cut if not parts else _CODE[EventCut.HEADLESS]))
    return parts


def _whole_events_end(rows: _EventRows, held: NDArray[np.bool_]) -> int:
    """Where a read may stop: the last line at or before the first ``held`` event's first line
    that no event spans (every event that begins before it ends before it)."""
    count = len(rows.of_line)
    held_from = int(rows.first[held].min()) if held.any() else count
    order = np.argsort(rows.first, kind="stable")
    firsts, lasts = rows.first[order], rows.last[order]
    reach = np.maximum.accumulate(lasts)  # the furthest line the events so far reach
    if held_from == count:
        return count
    valid = np.ones(len(firsts), dtype=np.bool_)
    valid[1:] = reach[:-1] < firsts[1:]
    candidates = firsts[valid & (firsts <= held_from)]
    return int(candidates[-1]) if candidates.size else 0
