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
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline_core.config import MultilineConfig, MultilinePreset, SourceConfig, SourceFormat
from pipeline_core.config._multiline import (
    DEFAULT_FLUSH_AFTER_S,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
)
from pipeline_core.source._container_lines import ContainerLogFormat, frame_entries
from pipeline_core.staging_contract import CUT_CODES, NO_EVENTS, EventCut, EventRuns

_NEWLINE = 10
_SPACE = 32
_TAB = 9
_CR = 13

Positions = NDArray[np.int64]


LOOKAHEAD_LINES = 2
"""The presets judge a line by at most this many lines after it."""
_WORD_PREFIX = 16
"""Bytes of a word compared with a line's start: as many tell the words apart from any log
line's start (``Traceback (most ``), and two 8-byte integers compare them at once."""
_ALL_WORDS: list[bytes] = []
"""Every preset's words, each looked for once per read (:func:`_words_at`)."""


class _Words:
    """Words some lines start with (a group of the presets' words): which of them a line
    starts with is found by :func:`_words_at`, for all groups at once."""

    def __init__(self, *words: bytes) -> None:
        self.words = words
        self._chosen: NDArray[np.bool_] | None = None
        self.ids: list[int] = []
        for word in words:
            if word[:_WORD_PREFIX] not in [known[:_WORD_PREFIX] for known in _ALL_WORDS]:
                _ALL_WORDS.append(word)
            self.ids.append(
                [known[:_WORD_PREFIX] for known in _ALL_WORDS].index(word[:_WORD_PREFIX])
            )

    def of(self, hits: _WordHits) -> NDArray[np.bool_]:
        """Which lines start with one of these words (``hits``: :func:`_words_at`)."""
        if self._chosen is None:  # by word index
            self._chosen = np.zeros(len(_ALL_WORDS), dtype=np.bool_)
            self._chosen[self.ids] = True
        result = np.zeros(hits.count, dtype=np.bool_)
        result[hits.lines[self._chosen[hits.words]]] = True
        return result


_PYTHON_WORDS = _Words(
    b"Traceback (most recent call last):",
    b"Stack (most recent call last):",
    b"During handling of the above exception, another exception occurred:",
    b"The above exception was the direct cause of the following exception:",
    b": ",  # Py4J: ": org.apache.spark.SparkException: ..." under Py4JJavaError
)
_PYTHON_EXCEPTION = re.compile(rb"[A-Za-z_][\w.]*(?::[ \t].*|:?)\r?")
"""The exception line after a traceback's last frame: ``KeyError: 'k'``, ``mod.Error``."""
_IDENTIFIER_START = np.zeros(256, dtype=np.bool_)
"""By a line's first byte: whether it can start a Python identifier (an exception's name)."""
_IDENTIFIER_START[[*range(ord("A"), ord("Z") + 1), *range(ord("a"), ord("z") + 1), ord("_")]] = True
_TRACEBACK = b"Traceback (most recent call last):"
_CHAINED = _Words(
    b"The above exception was the direct cause of the following exception:",
    b"During handling of the above exception, another exception occurred:",
)
"""How the section of a chained exception begins (after a blank line)."""
_TRACEBACK_HEAD = _Words(_TRACEBACK)
_CONTEXT_HEADS = _Words(b"== SQL", b"== DataFrame ==")
"""How Spark's query contexts begin."""
_JAVA_WORDS = _Words(
    b"Caused by: ",
    b"Suppressed: ",
    b"Driver stacktrace:",  # the driver's frames in a SparkException's "Job aborted ..."
)
"""A Java stack trace's lines that are not indented (also in a Python traceback: Py4J's
``Py4JJavaError`` carries the Java exception's stack trace in its message)."""
_JAVA_EXCEPTION = re.compile(
    rb"(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable|Failure)[\w$]*(?::.*)?\r?"
)
"""The exception's class and message before its frames: ``java.lang.IllegalStateException:
boom``, ``org.apache.spark.api.python.PythonException: Traceback...``."""
_SQL_CONTEXT = re.compile(rb"== SQL\b.* ==\r?")
"""The head of a Spark SQL error's query context, in the error's message (``== SQL (line 2,
position 3) ==``): the query's lines follow, each with a line of carets under it."""
_CARETS = re.compile(rb"[ \t]*\^+[ \t]*\r?")
_DATAFRAME_CONTEXT = b"== DataFrame =="
"""The head of a DataFrame error's context: ``"divide" was called from``, then the call site."""
_CALLED_FROM = re.compile(rb'".*" was called from\r?')
_CONTEXT_LINES = 64
"""At most so many of a query's lines (each with its carets) are taken into its context."""
_GO_WORDS = _Words(b"goroutine ", b"[signal ", b"created by ", b"exit status ")
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
        view = np.frombuffer(data, dtype=np.uint8)
        first = view[starts]
        ends = np.empty(count, dtype=np.int64)  # where each line's newline is (or the end)
        ends[:-1] = starts[1:] - 1
        ends[-1] = len(data) - (1 if data[-1] == _NEWLINE else 0)
        indented = (first == _SPACE) | (first == _TAB)
        blank = first == _NEWLINE
        carriage = np.flatnonzero(first == _CR)  # a CRLF file's empty line
        blank[carriage[ends[carriage] - starts[carriage] == 1]] = True
        word_at = _words_at(data, starts, first)
        for preset in self.presets:
            if preset is MultilinePreset.PYTHON or preset is MultilinePreset.JAVA:
                result |= indented | blank
                result |= _PYTHON_WORDS.of(word_at)
                result |= _JAVA_WORDS.of(word_at)  # and Py4J's
                after_frame = np.zeros(count, dtype=np.bool_)
                after_frame[1:] = indented[:-1] & _IDENTIFIER_START[first[1:]]
                heads = _TRACEBACK_HEAD.of(word_at)
                after_frame = _after_tracebacks(data, starts, after_frame, indented | blank, heads)
                result |= _exception_lines(data, starts, ends, after_frame)
                result |= _unraised_causes(_CHAINED.of(word_at), blank)
                contexts = _query_contexts(data, starts, ends, _CONTEXT_HEADS.of(word_at))
                result |= contexts
            if preset is MultilinePreset.JAVA:
                # The exception's line: before its frames, or before its message's query context.
                nested = indented.copy()
                nested[1:] |= contexts[1:] & ~contexts[:-1]
                before_frame = np.zeros(count, dtype=np.bool_)
                before_frame[:-1] = nested[1:] & ~indented[:-1]
                result |= _lines_matching(data, starts, ends, before_frame, _JAVA_EXCEPTION)
            if preset is MultilinePreset.GO:
                result |= indented | blank
                result |= _GO_WORDS.of(word_at)
                result |= _lines_matching(data, starts, ends, ~indented & ~blank, _GO_FUNCTION)
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
class _WordHits:
    """The lines of a read that start with a preset's word: ``lines`` (in order) and, for
    each, the index of its word in ``_ALL_WORDS``; ``count`` lines in all."""

    lines: NDArray[np.int64]
    words: NDArray[np.int64]
    count: int


def _words_at(data: bytes | bytearray, starts: Positions, first: NDArray[np.uint8]) -> _WordHits:
    """Which lines start with a word (its first ``_WORD_PREFIX`` bytes), and which. Only the
    lines whose first byte is a word's are compared, each as two 8-byte integers read at its
    start: a few array operations whatever the number of lines."""
    table = _word_table()
    lines = np.flatnonzero(table.heads[first])
    found = np.full(len(lines), -1, dtype=np.int64)
    at = starts[lines]
    size = len(data)
    near_end = at > size - 2 * 8
    if near_end.any():  # too near the end for two 8-byte reads: compared one by one
        for index, start in zip(
            np.flatnonzero(near_end).tolist(), at[near_end].tolist(), strict=True
        ):
            for word_index, word in enumerate(_ALL_WORDS):
                if data.startswith(word[:_WORD_PREFIX], start):
                    found[index] = word_index
                    break
    far = np.flatnonzero(~near_end)
    if far.size:
        words = np.ndarray((size - 7,), dtype="<u8", buffer=data, strides=(1,))
        low, high = words[at[far]], words[at[far] + 8]
        for word_index in range(len(_ALL_WORDS)):
            hit = (low & table.masks[word_index, 0]) == table.packed[word_index, 0]
            hit &= (high & table.masks[word_index, 1]) == table.packed[word_index, 1]
            found[far[hit]] = word_index
    matched = found >= 0
    return _WordHits(lines[matched], found[matched], len(starts))


@dataclass(frozen=True)
class _WordTable:
    heads: NDArray[np.bool_]
    """By first byte: whether a word starts with it."""
    packed: NDArray[np.uint64]
    """Each word's first ``_WORD_PREFIX`` bytes as two little-endian 8-byte integers."""
    masks: NDArray[np.uint64]
    """Which of those bytes the word has (a shorter word compares fewer)."""


_TABLE: list[_WordTable] = []


def _word_table() -> _WordTable:
    """The table of ``_ALL_WORDS`` (made once, after every group registered its words)."""
    if not _TABLE:
        heads = np.zeros(256, dtype=np.bool_)
        packed = np.zeros((len(_ALL_WORDS), 2 * 8), dtype=np.uint8)
        masks = np.zeros((len(_ALL_WORDS), 2 * 8), dtype=np.uint8)
        for index, word in enumerate(_ALL_WORDS):
            prefix = word[:_WORD_PREFIX]
            heads[prefix[0]] = True
            packed[index, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
            masks[index, : len(prefix)] = 0xFF
        _TABLE.append(_WordTable(heads, packed.view("<u8"), masks.view("<u8")))
    return _TABLE[0]


_IDENTIFIER = np.zeros(256, dtype=np.bool_)
"""By byte: whether it can be part of a dotted Python name (``[A-Za-z0-9_.]``)."""
_IDENTIFIER[[*range(48, 58), *range(65, 91), *range(97, 123), ord("_"), ord(".")]] = True
_NAME_WINDOW = 32
"""Bytes of a line looked at for an exception's name; a longer name is matched by pattern."""


def _exception_lines(
    data: bytes | bytearray, starts: Positions, ends: Positions, candidates: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Which ``candidates`` lines are a Python exception line (``_PYTHON_EXCEPTION``: a dotted
    name, then ``: message``, ``:`` or nothing), told by NumPy over their first bytes."""
    view = np.frombuffer(data, dtype=np.uint8)
    result = np.zeros(len(starts), dtype=np.bool_)
    lines = np.flatnonzero(candidates)
    if not lines.size:
        return result
    begin, length = starts[lines], ends[lines] - starts[lines]
    at = begin[:, None] + np.arange(_NAME_WINDOW + 2)
    window = view[np.minimum(at, len(view) - 1)]
    beyond = np.arange(_NAME_WINDOW + 2) >= length[:, None]  # past the line's end
    name = _IDENTIFIER[window] & ~beyond
    stop = np.argmin(name, axis=1)  # the first byte that is not part of the name
    long_names = name.all(axis=1)
    row = np.arange(len(lines))
    after = window[row, np.minimum(stop + 1, _NAME_WINDOW + 1)]
    rest = length - stop  # bytes from the stop on
    byte = window[row, stop]
    cr_end = (byte == _CR) & (rest == 1)
    colon = byte == ord(":")
    message = colon & ((after == _SPACE) | (after == _TAB)) & (rest >= 2)
    colon_end = colon & ((rest == 1) | ((rest == 2) & (after == _CR)))
    result[lines[(rest == 0) | cr_end | message | colon_end]] = True
    for line, start, end in zip(
        lines[long_names].tolist(),
        begin[long_names].tolist(),
        ends[lines][long_names].tolist(),
        strict=True,
    ):
        result[line] = _PYTHON_EXCEPTION.fullmatch(data, start, end) is not None
    return result


def _after_tracebacks(
    data: bytes | bytearray,
    starts: Positions,
    candidates: NDArray[np.bool_],
    nested: NDArray[np.bool_],
    traceback_heads: NDArray[np.bool_],
) -> NDArray[np.bool_]:
    """Which ``candidates`` (lines right after an indented one) may end a traceback: those
    whose frames (the ``nested`` lines before them: indented or blank) follow a line that holds
    ``Traceback (most recent call last):`` (the traceback's head: ``traceback_heads``, or a
    Java exception that carries one), or that follow the read's first line. Not the line after a
    frames (``Stack (most recent call last):``) or after an exception group (its lines are all
    indented): that is the next record's, which may look like an exception's (``WARNING:
    ...``)."""
    lines = np.flatnonzero(candidates)
    if not lines.size:
        return candidates
    numbers = np.arange(len(starts), dtype=np.int64)
    last_plain = np.maximum.accumulate(np.where(nested, -1, numbers))
    head = last_plain[lines - 1]  # the line before the frames; -1: the read starts in them
    holds = head < 0
    inside = np.flatnonzero(~holds)
    heads = head[inside]
    # Mostly the head is the traceback's own first line; only other heads (a Java exception
    # carrying one) are searched.
    starting = traceback_heads[heads]
    holds[inside[starting]] = True
    for index, line in zip(inside[~starting].tolist(), heads[~starting].tolist(), strict=True):
        end = int(starts[line + 1]) if line + 1 < len(starts) else len(data)
        holds[index] = data.find(_TRACEBACK, int(starts[line]), end) >= 0
    result = np.zeros(len(starts), dtype=np.bool_)
    result[lines[holds]] = True
    return result


def _unraised_causes(chained: NDArray[np.bool_], blank: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The last line of a chained exception's section: the line before the blank one before
    ``The above exception was the direct cause ...`` (or ``During handling ...``: the
    ``chained`` lines). A cause that was never raised (``raise X from ValueError(...)``) has
    no frames: its section is that line alone, right after the record's first line."""
    result = np.zeros(len(chained), dtype=np.bool_)
    lines = np.flatnonzero(chained)
    lines = lines[lines >= 2]
    result[lines[blank[lines - 1]] - 2] = True
    return result


def _query_contexts(
    data: bytes | bytearray, starts: Positions, ends: Positions, heads: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Spark's query contexts in an error's message (in log4j's log, and in pyspark's
    exceptions in a Python traceback): ``== SQL (line 2, position 3) ==`` then each of the
    query's lines with a line of carets under it; ``== DataFrame ==``, ``"divide" was called
    from`` and the call site. Each line is judged by the lines before it (a query's line after
    the head or after carets), so a read that ends within a context judges it as a whole one."""
    count = len(starts)
    result = np.zeros(count, dtype=np.bool_)
    for head in np.flatnonzero(heads).tolist():
        position = int(starts[head])
        if data.startswith(_DATAFRAME_CONTEXT, position):
            called = head + 1
            if called < count and _CALLED_FROM.fullmatch(
                data, int(starts[called]), int(ends[called])
            ):
                result[head : called + 2] = True  # the head, "... was called from", the site
            continue
        if not _SQL_CONTEXT.fullmatch(data, position, int(ends[head])):
            continue
        result[head] = True
        line = head + 1
        while line < min(count, head + 1 + 2 * _CONTEXT_LINES):
            result[line] = True  # a query's line
            carets = line + 1
            if carets >= count:
                break
            if not _CARETS.fullmatch(data, int(starts[carets]), int(ends[carets])):
                break
            result[carets] = True
            line = carets + 1
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
    lines = np.flatnonzero(candidates)
    for line, start, end in zip(
        lines.tolist(), starts[lines].tolist(), ends[lines].tolist(), strict=True
    ):
        if pattern.fullmatch(data, start, end):
            result[line] = True
    return result


def _candidates(mask: NDArray[np.bool_], starts: Positions) -> Iterator[tuple[int, int]]:
    """``(line, start)`` of the lines ``mask`` picks."""
    lines = np.flatnonzero(mask)
    return zip(lines.tolist(), starts[lines].tolist(), strict=True)


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
        self, data: bytes | bytearray, *, complete: bool, filled: bool, after: bytes = b""
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
        )

    def continues(self, after: bytes, data: bytes) -> bool:
        """Whether the first of ``data``'s whole lines continues the line ``after`` (with its
        newline) by this framing's rule (never, for a container's entries, or without a whole
        line)."""
        end = data.rfind(b"\n") + 1
        if self.rule is None or self.container is not None or not end or not after:
            return False
        view = np.frombuffer(data, dtype=np.uint8, count=end)
        starts = np.append(0, np.flatnonzero(view[:-1] == _NEWLINE) + 1).astype(np.int64)
        return bool(_continuing_after(self.rule, data[:end], starts, after)[0])

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
    """
    size = len(data)
    if not size:
        return Framing(0, 0, 0, NO_EVENTS)
    view = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(view == _NEWLINE)
    count = len(newlines) + (0 if data[-1] == _NEWLINE else 1)
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines[: count - 1] + 1
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
    continuing = _continuing_after(rule, data, starts, after)
    headless = bool(continuing[0])
    continuing[0] = False
    firsts = np.flatnonzero(~continuing)
    lines_of = np.diff(np.append(firsts, count))
    bytes_of = np.diff(np.append(starts[firsts], size))
    over = (lines_of > max_lines) | (bytes_of > max_bytes)
    # The events to list (more than one line, or cut), as columns: first line, lines, cut code.
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
        last_first, last_cut = int(firsts[-1]), 0
        last_listed = len(rows_first) and rows_first[-1] + rows_lines[-1] == count
        if last_listed:
            last_first, last_cut = int(rows_first[-1]), int(rows_cut[-1])
        if last_cut not in _CLOSED_BY_BOUND:
            end_line = last_first
            settled = count - 1 - rule.lookahead
            if end_line > settled:
                # A rule that judges a line by the lines after it may still join this event
                # to the one before: hand on only events whose end those lines have settled.
                final = firsts[firsts <= settled]
                end_line = int(final[-1]) if final.size else 0
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
    spans = EventRuns.from_codes(rows_first.tolist(), rows_lines.tolist(), rows_cut.tolist())
    length = size if end_line == count else int(starts[end_line])
    return Framing(length, end_line, end_line - spans.joined_lines(), spans)


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
