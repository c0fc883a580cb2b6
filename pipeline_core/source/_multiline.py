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

The rules run over a read's bytes, never line by line in Python: the presets look at the first
byte of every line with NumPy and find their words (``Traceback (most recent call last):``,
``Caused by:``) with ``bytes.find``; a regular expression runs only on the few lines these
point at (the line after a traceback's last frame). A pattern of the pipeline's runs once
over the whole read, matching only where a line continues the one before (``\\n(?!start)``),
so a file of one-line events costs a scan and no object per line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline_core.config import MultilineConfig, MultilinePreset
from pipeline_core.staging_contract import EventCut, EventSpan

_NEWLINE = 10
_SPACE = 32
_TAB = 9
_CR = 13

Positions = NDArray[np.int64]


_PYTHON_WORDS = (
    b"Traceback (most recent call last):",
    b"Stack (most recent call last):",
    b"During handling of the above exception, another exception occurred:",
    b"The above exception was the direct cause of the following exception:",
    b": ",  # Py4J: ": org.apache.spark.SparkException: ..." under Py4JJavaError
)
_PYTHON_EXCEPTION = re.compile(rb"[A-Za-z_][\w.]*(?::[ \t].*|:?)\r?")
"""The exception line after a traceback's last frame: ``KeyError: 'k'``, ``mod.Error``."""
_JAVA_WORDS = (b"Caused by: ", b"Suppressed: ")
_JAVA_EXCEPTION = re.compile(rb"(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable|Failure)[\w$]*(?::.*)?\r?")
"""The exception's class and message before its frames: ``java.lang.IllegalStateException:
boom``, ``org.apache.spark.api.python.PythonException: Traceback...``."""
_GO_WORDS = (b"goroutine ", b"[signal ", b"created by ", b"exit status ")
_GO_FUNCTION = re.compile(rb"[\w./*()\[\]{}-]+\(.*\)\r?")
"""A goroutine dump's function line: ``main.main()``, ``main.(*T).Run(0xc000010000)``."""


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
            raise ValueError("a multiline rule needs a preset, a start_pattern or a continue_pattern")
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
                raise ValueError(f"{name}_pattern {pattern!r} is not a regular expression: {exc}") from exc
        object.__setattr__(self, "_compiled", compiled)

    def continuing(self, data: bytes | bytearray, starts: Positions) -> NDArray[np.bool_]:
        """For each line of ``data`` (whole lines, starting at ``starts``): whether it continues
        the line before. The first line is judged as if a line came before it."""
        count = len(starts)
        result = np.zeros(count, dtype=np.bool_)
        if not count:
            return result
        view = np.frombuffer(data, dtype=np.uint8)
        first = view[starts]
        ends = np.empty(count, dtype=np.int64)  # where each line's newline is (or the end)
        ends[:-1] = starts[1:] - 1
        ends[-1] = len(data) - (1 if data[-1] == _NEWLINE else 0)
        indented = (first == _SPACE) | (first == _TAB)
        blank = (starts == ends) | ((first == _CR) & (ends - starts == 1))
        blank &= starts < len(data)
        for preset in self.presets:
            if preset is MultilinePreset.PYTHON or preset is MultilinePreset.JAVA:
                result |= indented | blank
                result |= _lines_starting(data, starts, _PYTHON_WORDS)
                after_frame = np.zeros(count, dtype=np.bool_)
                after_frame[1:] = indented[:-1] & ~indented[1:] & ~blank[1:]
                result |= _lines_matching(data, starts, ends, after_frame, _PYTHON_EXCEPTION)
            if preset is MultilinePreset.JAVA:
                result |= _lines_starting(data, starts, _JAVA_WORDS)
                before_frame = np.zeros(count, dtype=np.bool_)
                before_frame[:-1] = indented[1:] & ~indented[:-1]
                result |= _lines_matching(data, starts, ends, before_frame, _JAVA_EXCEPTION)
            if preset is MultilinePreset.GO:
                result |= indented | blank
                result |= _lines_starting(data, starts, _GO_WORDS)
                result |= _lines_matching(data, starts, ends, ~indented & ~blank, _GO_FUNCTION)
        compiled: dict[str, re.Pattern[bytes]] = self._compiled  # type: ignore[attr-defined]
        framed = b"\n" + bytes(data)  # the first line judged as if a line came before it
        for name in ("start", "continue"):
            pattern = compiled.get(name)
            if pattern is None:
                continue
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


def _lines_starting(data: bytes | bytearray, starts: Positions, words: Sequence[bytes]) -> NDArray[np.bool_]:
    """Which lines start with one of ``words`` (found with ``bytes.find``, not line by line)."""
    hits: list[int] = []
    for word in words:
        if data.startswith(word):
            hits.append(0)
        needle = b"\n" + word
        position = data.find(needle)
        while position >= 0:
            hits.append(position + 1)
            position = data.find(needle, position + 1)
    result = np.zeros(len(starts), dtype=np.bool_)
    if hits:
        at = np.searchsorted(starts, np.asarray(hits, dtype=np.int64))
        result[at[at < len(starts)]] = True
    return result


def _lines_matching(
    data: bytes | bytearray,
    starts: Positions,
    ends: Positions,
    candidates: NDArray[np.bool_],
    pattern: re.Pattern[bytes],
) -> NDArray[np.bool_]:
    """Which of the ``candidates`` lines ``pattern`` matches whole."""
    result = np.zeros(len(starts), dtype=np.bool_)
    for line in np.flatnonzero(candidates):
        if pattern.fullmatch(data, int(starts[line]), int(ends[line])):
            result[line] = True
    return result


@dataclass(frozen=True)
class EventFraming:
    """How a source's reads are cut into whole events: its rule and bounds."""

    rule: MultilineRule
    max_lines: int
    max_bytes: int
    flush_after: float
    """Seconds a file must not have grown before its last event is handed on."""

    @classmethod
    def of(cls, config: MultilineConfig) -> EventFraming:
        """The framing a source's ``multiline`` config describes."""
        rule = MultilineRule(
            () if config.preset is None else (config.preset,),
            config.start_pattern,
            config.continue_pattern,
            config.end_pattern,
        )
        return cls(rule, config.max_lines, config.max_bytes, config.flush_after_s)


@dataclass(frozen=True, slots=True)
class Framing:
    """What of a read may be handed out: its first ``length`` bytes, ``lines`` whole lines
    holding ``events`` events, ``spans`` the multiline and cut ones. ``length`` 0: nothing yet
    (the read holds only an event that may still grow)."""

    length: int
    lines: int
    events: int
    spans: tuple[EventSpan, ...]


def frame(
    data: bytes | bytearray,
    rule: MultilineRule,
    *,
    complete: bool,
    max_lines: int,
    max_bytes: int,
    filled: bool,
) -> Framing:
    """The events of ``data``: whole lines read from an event's first byte (the last line may
    lack its newline only if ``complete``).

    Args:
        complete: nothing follows ``data`` that could continue its last event (the file will not
            grow, has not grown for ``flush_after``, or an over-long line follows).
        max_lines: an event is closed at this many lines (``EventCut.LINES``); the lines after
            it, up to the next line that begins an event, are the next row (``HEADLESS``).
        max_bytes: an event is closed at the line that brings it to this many bytes
            (``EventCut.BYTES``), likewise.
        filled: the read was as large as it could be: an event that fills it is closed at its
            end (``EventCut.BYTES``) rather than waited for.
    """
    size = len(data)
    if not size:
        return Framing(0, 0, 0, ())
    view = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(view == _NEWLINE)
    count = len(newlines) + (0 if data[-1] == _NEWLINE else 1)
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines[: count - 1] + 1
    continuing = rule.continuing(data, starts)
    headless = bool(continuing[0])
    continuing[0] = False
    firsts = np.flatnonzero(~continuing)
    lines_of = np.diff(np.append(firsts, count))
    bytes_of = np.diff(np.append(starts[firsts], size))
    over = np.flatnonzero((lines_of > max_lines) | (bytes_of > max_bytes))
    over_set = set(over.tolist())
    rows: list[_Row] = []  # the events to list: more than one line, or cut
    for index in sorted(over_set | set(np.flatnonzero(lines_of > 1).tolist())):
        first, lines = int(firsts[index]), int(lines_of[index])
        if index in over_set:
            rows.extend(_bounded(starts, size, first, lines, max_lines, max_bytes))
        else:
            rows.append((first, lines, None))
    if headless:
        if rows and rows[0][0] == 0:
            first, lines, cut = rows[0]
            rows[0] = (first, lines, cut or EventCut.HEADLESS)
        else:
            rows.insert(0, (0, 1, EventCut.HEADLESS))
    end_line = count
    if not complete:
        # The last event may still grow, unless a bound closed it.
        last_first, last_cut = int(firsts[-1]), None
        if rows and rows[-1][0] + rows[-1][1] == count:
            last_first, last_cut = rows[-1][0], rows[-1][2]
        if last_cut not in (EventCut.LINES, EventCut.BYTES):
            end_line = last_first
            if rows and rows[-1][0] == last_first:
                rows.pop()
            if end_line == 0:
                if not filled:
                    return Framing(0, 0, 0, ())
                end_line = count  # an event as large as a whole read: closed at its end
                rows = [(0, count, EventCut.BYTES)]
    spans = tuple(EventSpan(first, lines, cut) for first, lines, cut in rows)
    length = size if end_line == count else int(starts[end_line])
    events = end_line - sum(span.lines - 1 for span in spans)
    return Framing(length, end_line, events, spans)


_Row = tuple[int, int, "EventCut | None"]
"""An event: its first line, its lines, and why it was cut (None: whole)."""


def _bounded(
    starts: Positions, size: int, first: int, lines: int, max_lines: int, max_bytes: int
) -> list[_Row]:
    """An event of ``lines`` lines from line ``first``, over a bound, as the rows it lands as:
    closed at each bound (``LINES`` or ``BYTES``), each row after the first ``HEADLESS``
    unless a bound closes it too. A row holds at least one line."""
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
