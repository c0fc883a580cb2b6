"""Multiline events: which lines of a read begin an event, and where a read stops so that no
event is cut by a checkpoint.

A :class:`MultilineRule` tells, for a run of whole lines, which lines *continue* the line
before them (a traceback's frames, a Java stack's ``at`` lines); every other line begins an
event. :func:`frame` applies it to what a read found: the events it holds, each a run of
lines, the bounds (``max_lines``, ``max_bytes``) applied, and where the read must stop. The
last event of a file that may still grow is not handed out: the read stops at its first byte,
so a checkpoint taken now seals everything before the event and nothing of it, and a restart
reads it again whole. It is handed out once a following line begins another event, once the
file has not grown for ``flush_after`` (or will not grow: a rotated file at its end), or once
it reaches a bound.

The presets' tests of a line run over a read's bytes, never line by line in Python
(``pipeline_core.source._preset_lines``). A pattern of the pipeline's runs once over the whole
read, matching only where a line continues the one before (``\\n(?!start)``), so a file of
one-line events costs a scan and no object per line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline_core.config import MultilineConfig, MultilinePreset, SourceConfig, SourceFormat
from pipeline_core.config._multiline import (
    DEFAULT_FLUSH_AFTER_S,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
)
from pipeline_core.source._container_entries import ContainerLogFormat
from pipeline_core.source._container_lines import frame_entries
from pipeline_core.source._preset_lines import (
    LOOKAHEAD_LINES,
    EventColumns,
    JudgedLines,
    Positions,
    compiled_event_runs,
    framed_lines,
    line_starts,
    one_line_events,
    preset_continuing,
    read_judged,
)
from pipeline_core.staging_contract import CUT_CODES, NO_EVENTS, EventCut, EventRuns


@dataclass(frozen=True)
class MultilineRule:
    """Which lines continue the line before them.

    A line continues the event before it if a preset says so, or it matches
    ``continue_pattern``, or (with ``start_pattern``) it does not match ``start_pattern``; a
    line after one matching ``end_pattern`` begins an event whatever else holds. The patterns
    are Python regular expressions over a line's bytes (decoded as UTF-8 when they are
    given), matched at its start.
    """

    presets: tuple[MultilinePreset, ...] = ()
    start_pattern: str | None = None
    continue_pattern: str | None = None
    end_pattern: str | None = None

    def __post_init__(self) -> None:
        if not (self.presets or self.start_pattern or self.continue_pattern):
            raise ValueError(
                "a multiline rule needs a preset, a start_pattern or a continue_pattern"
            )
        compiled: dict[str, re.Pattern[bytes]] = {}
        for name, pattern, template in (
            ("start", self.start_pattern, rb"\n(?!(?:%s))"),
            ("continue", self.continue_pattern, rb"\n(?=(?:%s))"),
            ("end", self.end_pattern, rb"^(?:%s)[^\n]*\n"),
        ):
            if pattern is None:
                continue
            try:
                re.compile(pattern)
                compiled[name] = re.compile(template % pattern.encode(), re.MULTILINE)
            except re.error as exc:
                raise ValueError(
                    f"{name}_pattern {pattern!r} is not a regular expression: {exc}"
                ) from exc
        object.__setattr__(self, "_compiled", compiled)

    @property
    def presets_only(self) -> bool:
        """Whether only presets judge the lines (no pattern of the pipeline's)."""
        return not self._compiled  # type: ignore[attr-defined]

    @property
    def lookahead(self) -> int:
        """How many lines after a line the presets look at to judge it (the exception's line
        before its frames, a cause that was never raised): a read's last events are settled
        only that many lines before its end."""
        return LOOKAHEAD_LINES if self.presets else 0

    def continuing(self, data: bytes | bytearray, starts: Positions) -> NDArray[np.bool_]:
        """For each line of ``data`` (whole lines, starting at ``starts``): whether it continues
        the line before. The first line is judged as if a line came before it."""
        count = len(starts)
        result = np.zeros(count, dtype=np.bool_)
        if not count:
            return result
        if self.presets:
            result |= preset_continuing(self.presets, data, starts)
        compiled: dict[str, re.Pattern[bytes]] = self._compiled  # type: ignore[attr-defined]
        for name in ("start", "continue"):
            pattern = compiled.get(name)
            if pattern is None:
                continue
            framed = b"\n" + bytes(data)  # the first line judged as if a line came before it
            found = np.fromiter(
                (m.start() for m in pattern.finditer(framed) if m.start() < len(data)),
                dtype=np.int64,
            )
            if found.size:
                result[np.searchsorted(starts, found)] = True
        end = compiled.get("end")
        if end is not None:
            after_end = np.fromiter(
                (m.end() for m in end.finditer(data) if m.end() < len(data)), dtype=np.int64
            )
            if after_end.size:
                result[np.searchsorted(starts, after_end)] = False
        return result


@dataclass(frozen=True)
class EventFraming:
    """How a source's reads are cut into whole events: its rule and bounds, and the container
    runtime's format its lines are entries of (a line written in parts joins)."""

    rule: MultilineRule | None
    max_lines: int
    max_bytes: int
    flush_after: float
    """Seconds a file must not have grown before its last event is handed on."""
    container: ContainerLogFormat | None = None

    @classmethod
    def of(
        cls, config: MultilineConfig | None, container: ContainerLogFormat | None = None
    ) -> EventFraming:
        """The framing a source's ``multiline`` config (if any) and container format (if any)
        describe."""
        if config is None:
            if container is None:
                raise ValueError("framing needs a multiline config or a container format")
            return cls(None, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES, DEFAULT_FLUSH_AFTER_S, container)
        rule = MultilineRule(
            () if config.preset is None else (config.preset,),
            config.start_pattern,
            config.continue_pattern,
            config.end_pattern,
        )
        return cls(rule, config.max_lines, config.max_bytes, config.flush_after_s, container)

    def frame(
        self,
        data: bytes | bytearray,
        *,
        complete: bool,
        filled: bool,
        after: bytes = b"",
        judged: JudgedLines | None = None,
    ) -> Framing:
        """:func:`frame` with this source's rule, bounds and container format."""
        return frame(
            data,
            self.rule,
            complete=complete,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
            filled=filled,
            container=self.container,
            flush_after=self.flush_after,
            after=after,
            judged=judged,
        )

    def read(self, fd: int, offset: int, size: int) -> tuple[bytearray, JudgedLines | None] | None:
        """``size`` bytes (at most) of ``fd`` at ``offset`` and, where the presets alone judge
        this framing's reads, what they say of the whole lines read, in one compiled call
        (:func:`read_judged`; :meth:`frame` takes it). None: read, then frame (a pattern of
        the pipeline's judges, the lines are a container's entries, or the compiled tests are
        not in use). Raises OSError as a read does."""
        rule = self.rule
        if rule is None or self.container is not None or not rule.presets_only:
            return None
        return read_judged(
            rule.presets, fd, offset, size, self.max_lines, self.max_bytes, rule.lookahead
        )

    def continues(self, after: bytes, data: bytes) -> bool:
        """Whether the first of ``data``'s whole lines continues the line ``after`` (with its
        newline) by this framing's rule (never, for a container's entries, or without a whole
        line)."""
        end = data.rfind(b"\n") + 1
        if self.rule is None or self.container is not None or not end or not after:
            return False
        whole = data[:end]
        return bool(_continuing_after(self.rule, whole, line_starts(whole), after)[0])

    @classmethod
    def of_source(cls, source: SourceConfig) -> EventFraming | None:
        """How a source's reads are framed; None: every line is an event."""
        container = _CONTAINER_FORMATS.get(source.format)
        if source.multiline is None and container is None:
            return None
        return cls.of(source.multiline, container)


_CONTAINER_FORMATS = {
    SourceFormat.CRI: ContainerLogFormat.CRI,
    SourceFormat.DOCKER_JSON: ContainerLogFormat.DOCKER_JSON,
}


@dataclass(frozen=True, slots=True)
class Framing:
    """What of a read may be handed out: its first ``length`` bytes, ``lines`` whole lines
    holding ``events`` events, ``spans`` the multiline and cut ones. ``length`` 0: nothing yet
    (the read holds only an event that may still grow)."""

    length: int
    lines: int
    events: int
    spans: EventRuns


def frame(
    data: bytes | bytearray,
    rule: MultilineRule | None,
    *,
    complete: bool,
    max_lines: int,
    max_bytes: int,
    filled: bool,
    container: ContainerLogFormat | None = None,
    flush_after: float = 0.0,
    after: bytes = b"",
    judged: JudgedLines | None = None,
) -> Framing:
    """The events of ``data``: whole lines read from an event's first byte (the last line may
    lack its newline only if ``complete``).

    Args:
        rule: which lines continue the line before them (None: only a container runtime's
            partial entries join, with ``container``).
        complete: nothing follows ``data`` that could continue its last event (the file will not
            grow, has not grown for ``flush_after``, or an over-long line follows).
        max_lines: an event is closed at this many lines (``EventCut.LINES``); the lines after
            it, up to the next line that begins an event, are the next row (``HEADLESS``).
        max_bytes: an event is closed at the line that brings it to this many bytes
            (``EventCut.BYTES``), likewise.
        filled: the read was as large as it could be: an event that fills it is closed at its
            end (``EventCut.BYTES``) rather than waited for.
        container: the lines are a container runtime's entries in this format
            (``pipeline_core.source._container_lines``): a line's entries join, and ``rule``
            judges each stream's lines apart.
        flush_after: with ``container``, a stream that wrote nothing for this long (by the
            runtime's times) while the other wrote holds nothing back.
        after: the line (with its newline) that came before ``data``'s first line where it
            was written, if it is known though not in ``data`` (a truncated file's copy ends
            with it): the first line is judged as following it, and is ``HEADLESS`` if it
            continues it. Without it, the first line is judged as following a line that
            begins an event.
        judged: what the rule's presets said of ``data`` as it was read
            (:meth:`EventFraming.read`); taken only if it judged all of ``data``.
    """
    size = len(data)
    if not size:
        return Framing(0, 0, 0, NO_EVENTS)
    # The presets alone, compiled: the lines, their marks and the events in one call.
    fused = None
    if container is None and rule is not None and not after and rule.presets_only:
        if judged is not None and judged.length != size:
            judged = None  # it judged other bytes (the read was cut shorter since)
        found = one_line_events(rule.presets, data) if judged is None else judged.one_line
        one_line = _one_line_read(data, rule, found, complete=complete, max_bytes=max_bytes)
        if one_line is not None:
            return one_line
        fused = None if judged is None else judged.framed
        if fused is None:
            fused = framed_lines(rule.presets, data, max_lines, max_bytes, rule.lookahead)
    starts = line_starts(data) if fused is None else fused[0]
    count = len(starts)
    if container is not None:
        end_line, spans = frame_entries(
            data,
            starts,
            container,
            rule,
            complete=complete,
            max_lines=max_lines,
            max_bytes=max_bytes,
            filled=filled,
            flush_after=flush_after,
        )
        length = size if end_line == count else int(starts[end_line])
        return Framing(length, end_line, end_line - spans.joined_lines(), spans)
    if rule is None:
        raise ValueError("framing needs a multiline rule or a container format")
    continuing = _continuing_after(rule, data, starts, after) if fused is None else fused[1]
    if not continuing.any():
        single = _single_lines(starts, size, rule, complete=complete, max_bytes=max_bytes)
        if single is not None:
            return single
    headless = bool(continuing[0])
    continuing[0] = False
    settled = count - 1 - rule.lookahead
    compiled = (
        compiled_event_runs(continuing, starts, size, max_lines, max_bytes, settled)
        if fused is None
        else fused[2]
    )
    rows_first, rows_lines, rows_cut, last_event, settled_event = _event_columns(
        continuing, starts, size, max_lines, max_bytes, settled, compiled
    )
    if headless:  # the read's first line continues an event before it
        if len(rows_first) and rows_first[0] == 0:
            if rows_cut[0] == 0:
                rows_cut[0] = _CODE[EventCut.HEADLESS]
        else:
            rows_first = np.insert(rows_first, 0, 0)
            rows_lines = np.insert(rows_lines, 0, 1)
            rows_cut = np.insert(rows_cut, 0, _CODE[EventCut.HEADLESS])
    end_line = count
    if not complete:
        # The last event may still grow, unless a bound closed it.
        last_first, last_cut = last_event, 0
        last_listed = len(rows_first) and rows_first[-1] + rows_lines[-1] == count
        if last_listed:
            last_first, last_cut = int(rows_first[-1]), int(rows_cut[-1])
        if last_cut not in _CLOSED_BY_BOUND:
            end_line = last_first
            if end_line > settled:
                # A rule that judges a line by the lines after it may still join this event
                # to the one before: hand on only events whose end those lines have settled.
                end_line = settled_event
            if end_line == 0 and filled:
                # The read can hold no more lines to settle its events by: hand on those it
                # holds but the last; an event as large as the whole read is closed at its end.
                end_line = last_first
                if end_line == 0:
                    end_line = count
                    rows_first, rows_lines = np.array([0]), np.array([count])
                    rows_cut = np.array([_CODE[EventCut.BYTES]])
            if end_line == 0:
                return Framing(0, 0, 0, NO_EVENTS)
            kept = rows_first < end_line
            rows_first, rows_lines, rows_cut = rows_first[kept], rows_lines[kept], rows_cut[kept]
    spans = EventRuns.from_codes(rows_first, rows_lines, rows_cut)
    length = size if end_line == count else int(starts[end_line])
    return Framing(length, end_line, end_line - spans.joined_lines(), spans)


def _event_columns(
    continuing: NDArray[np.bool_],
    starts: Positions,
    size: int,
    max_lines: int,
    max_bytes: int,
    settled: int,
    compiled: EventColumns | None,
) -> tuple[Positions, Positions, Positions, int, int]:
    """A read's events (its first line begins one) as columns: the first line, lines and cut
    code of each event of more than one line or cut at a bound (an event over a bound as the
    rows it lands as: :func:`_bounded`), then the last event's first line and the last first
    line at or before ``settled`` (0 if none is). ``compiled``: the same found by the compiled
    tests (:func:`compiled_event_runs`), where no event is over a bound."""
    if compiled is not None:
        firsts_listed, lines_listed, last_first, settled_first = compiled
        whole = np.zeros(len(firsts_listed), dtype=np.int64)
        return firsts_listed, lines_listed, whole, last_first, settled_first
    count = len(starts)
    firsts = np.flatnonzero(~continuing)
    lines_of = np.diff(np.append(firsts, count))
    bytes_of = np.diff(np.append(starts[firsts], size))
    over = (lines_of > max_lines) | (bytes_of > max_bytes)
    listed = (lines_of > 1) & ~over
    rows_first, rows_lines = firsts[listed], lines_of[listed]
    rows_cut = np.zeros(len(rows_first), dtype=np.int64)
    if over.any():
        bounded = [
            row
            for index in np.flatnonzero(over).tolist()
            for row in _bounded(
                starts, size, int(firsts[index]), int(lines_of[index]), max_lines, max_bytes
            )
        ]
        rows_first = np.append(rows_first, [row[0] for row in bounded])
        rows_lines = np.append(rows_lines, [row[1] for row in bounded])
        rows_cut = np.append(rows_cut, [_CODE[row[2]] for row in bounded])
        order = np.argsort(rows_first, kind="stable")
        rows_first, rows_lines, rows_cut = rows_first[order], rows_lines[order], rows_cut[order]
    final = firsts[firsts <= settled]
    return rows_first, rows_lines, rows_cut, int(firsts[-1]), int(final[-1]) if final.size else 0


def _one_line_read(
    data: bytes | bytearray,
    rule: MultilineRule,
    found: tuple[int, int] | None,
    *,
    complete: bool,
    max_bytes: int,
) -> Framing | None:
    """:func:`_single_lines`'s answer without the lines' offsets, where one compiled pass showed
    that no line may continue another (``found``: :func:`one_line_events`' answer). None: the
    general way."""
    if found is None:
        return None
    count, longest = found
    if longest > max_bytes:
        return None
    end_line = _single_lines_out(count, rule, complete=complete)
    if end_line <= 0:
        return None
    if end_line == count:
        return Framing(len(data), count, count, NO_EVENTS)
    # The start of line end_line: after the newline that ends the line before it, found
    # from the end (a few lines back at most).
    newlines = count if data[-1] == ord("\n") else count - 1
    position = len(data)
    for _ in range(newlines - end_line + 1):
        position = data.rfind(b"\n", 0, position)
    return Framing(position + 1, end_line, end_line, NO_EVENTS)


def _single_lines(
    starts: Positions, size: int, rule: MultilineRule, *, complete: bool, max_bytes: int
) -> Framing | None:
    """:func:`frame`'s answer for a read where every line begins an event, without its
    arrays: what may be handed out, the events all one line each. None where that takes the
    general way: a line over ``max_bytes`` (a cut event), or nothing to hand out yet."""
    count = len(starts)
    longest = size - int(starts[-1])
    if count > 1:
        longest = max(longest, int(np.max(np.diff(starts))))
    if longest > max_bytes:
        return None
    end_line = _single_lines_out(count, rule, complete=complete)
    if end_line <= 0:
        return None
    length = size if end_line == count else int(starts[end_line])
    return Framing(length, end_line, end_line, NO_EVENTS)


def _single_lines_out(count: int, rule: MultilineRule, *, complete: bool) -> int:
    """Of ``count`` lines that each begin an event, how many may be handed out: the last event
    may still grow (unless nothing follows), and the lines the rule looks ahead at settle the
    events before them. 0 or less: none yet."""
    return count if complete else count - 1 - rule.lookahead


def _continuing_after(
    rule: MultilineRule, data: bytes | bytearray, starts: Positions, after: bytes
) -> NDArray[np.bool_]:
    """:meth:`MultilineRule.continuing` for ``data``'s lines, its first judged after ``after``
    (a whole line) if one is given."""
    if not after:
        return rule.continuing(data, starts)
    joined_starts = np.empty(len(starts) + 1, dtype=np.int64)
    joined_starts[0] = 0
    joined_starts[1:] = starts + len(after)
    return rule.continuing(after + bytes(data), joined_starts)[1:]


_CODE = CUT_CODES
_CLOSED_BY_BOUND = {_CODE[EventCut.LINES], _CODE[EventCut.BYTES]}

_Row = tuple[int, int, "EventCut | None"]
"""An event: its first line, its lines, and why it was cut (None: whole)."""


def _bounded(
    starts: Positions,
    size: int,
    first: int,
    lines: int,
    max_lines: int,
    max_bytes: int,
) -> list[_Row]:
    """An event of ``lines`` lines from line ``first``, over a bound, as the rows it lands as:
    closed at each bound (``LINES`` or ``BYTES``), each row after the first ``HEADLESS``
    unless a bound closes it too. A row holds at least one line. (The first row is closed by
    a bound, the last is headless: so is what the event's own cut said of them.)"""
    rows: list[_Row] = []
    line, end = first, first + lines
    while line < end:
        head = int(starts[line])
        taken = 0
        cut: EventCut | None = None
        while line + taken < end:
            following = line + taken + 1
            stop = int(starts[following]) if following < len(starts) else size
            if taken and stop - head > max_bytes:
                cut = EventCut.BYTES  # this line would bring it over: closed before it
                break
            taken += 1
            if line + taken < end and taken >= max_lines:
                cut = EventCut.LINES
                break
            if line + taken < end and stop - head >= max_bytes:
                cut = EventCut.BYTES
                break
        if cut is None and line != first:
            cut = EventCut.HEADLESS
        rows.append((line, taken, cut))
        line += taken
    return rows
