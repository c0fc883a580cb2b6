"""The multiline presets' tests of a read's lines (``pipeline_core.config.MultilinePreset``):
which lines start with a preset's words (``Traceback (most recent call last):``, ``Caused
by:``), which line is a Python exception's after a traceback's last frame or a Java
exception's before its first, a cause that was never raised, Spark's query contexts, a Go
goroutine dump's lines.

They run over a read's bytes, never line by line in Python. Where the package's compiled part
is built (``pipeline_core/source/_framing.c``, an optional extension: a C compiler at install
time), C finds the lines and judges each, and reads the events off the marks, in one call
(:func:`framed_lines`). Otherwise, and as the reference the
compiled part is tested against, NumPy does: the first byte of every line is looked at, the
words are compared as two 8-byte integers at each line's start, and a regular expression runs
only on the few lines these point at.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from pipeline_core.config import MultilinePreset

_compiled: ModuleType | None
try:
    from pipeline_core.source import _framing as _compiled
except ImportError:  # built without a C compiler: NumPy does the same
    _compiled = None

NEWLINE = 10
_SPACE = 32
_TAB = 9
_CR = 13

Positions = NDArray[np.int64]

EventColumns = tuple[Positions, Positions, int, int]
""":func:`compiled_event_runs`' answer: the first line and the lines of each event of more than
one line, the last event's first line, the last first line at or before the settled line."""
FramedLines = tuple[Positions, NDArray[np.bool_], EventColumns | None]
""":func:`framed_lines`' answer: the lines' offsets, their continuation marks (writable) and
their events (None where an event passes a bound)."""


@dataclass(frozen=True, slots=True)
class JudgedLines:
    """What the presets said of a read's first ``length`` bytes (whole lines) as it was read
    (:func:`read_judged`): :func:`one_line_events`' answer, and where it did not settle them,
    :func:`framed_lines`'."""

    length: int
    one_line: tuple[int, int] | None
    framed: FramedLines | None


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

_WORD_GROUPS = (
    (_PYTHON_WORDS, "GROUP_PYTHON"),
    (_JAVA_WORDS, "GROUP_JAVA"),
    (_TRACEBACK_HEAD, "GROUP_TRACEBACK_HEAD"),
    (_CHAINED, "GROUP_CHAINED"),
    (_CONTEXT_HEADS, "GROUP_CONTEXT_HEAD"),
    (_GO_WORDS, "GROUP_GO"),
)
"""The word groups, each with the name of the compiled tests' bit for it."""
_WORDS_LOADED: list[bool] = []


def _load_words() -> None:
    """Give the compiled tests the words (their first ``_WORD_PREFIX`` bytes) and the groups
    each belongs to, once: they are written down here only."""
    if _WORDS_LOADED or _compiled is None:
        return
    groups = [0] * len(_ALL_WORDS)
    for group, bit in _WORD_GROUPS:
        for index in group.ids:
            groups[index] |= getattr(_compiled, bit)
    _compiled.set_words(
        [(word[:_WORD_PREFIX], bits) for word, bits in zip(_ALL_WORDS, groups, strict=True)]
    )
    _WORDS_LOADED.append(True)


def compiled_module() -> ModuleType | None:
    """The compiled line tests' module (None where it was not built)."""
    return _compiled


def compiled() -> bool:
    """Whether the compiled line tests are in use (the extension was built, and
    :func:`use_compiled` did not turn it off)."""
    return _compiled is not None and _USE_COMPILED[0]


_USE_COMPILED = [True]


def use_compiled(on: bool) -> bool:
    """Turn the compiled line tests on or off (where built); returns whether they were on. The
    NumPy ones give the same answers: tests and benchmarks compare the two."""
    was = compiled()
    _USE_COMPILED[0] = on
    return was


def line_starts(data: bytes | bytearray) -> Positions:
    """The offset of each line of ``data``'s first byte (its last line may lack a newline)."""
    if compiled():
        assert _compiled is not None
        return np.frombuffer(_compiled.line_starts(data), dtype=np.int64)
    size = len(data)
    if not size:
        return np.zeros(0, dtype=np.int64)
    view = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(view == NEWLINE)
    count = len(newlines) + (0 if data[-1] == NEWLINE else 1)
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines[: count - 1] + 1
    return starts


def one_line_events(
    presets: tuple[MultilinePreset, ...], data: bytes | bytearray
) -> tuple[int, int] | None:
    """Where no line of ``data`` may continue the one before by ``presets`` (Python's or
    Java's; no line starts with a byte a continuation starts with): its lines and its longest
    line's bytes (with its newline), found in one compiled pass without a line's offset. None:
    a line may (or the compiled tests are not in use, or a preset is Go's, whose function
    lines start with any byte): the lines must be judged one by one."""
    if not compiled() or MultilinePreset.GO in presets or not presets:
        return None
    assert _compiled is not None
    _load_words()
    found: tuple[int, int] | None = _compiled.one_line_events(data)
    return found


def compiled_event_runs(
    continuing: NDArray[np.bool_],
    starts: Positions,
    size: int,
    max_lines: int,
    max_bytes: int,
    settled: int,
) -> EventColumns | None:
    """A read's events from which of its ``size`` bytes' lines continue the line before (the
    first begins an event whatever it says), in one compiled pass: the first line and the
    lines of each event of more than one line, the last event's first line, and the last
    first line at or before line ``settled`` (0 if none is). None: the compiled tests are not
    in use, or an event passes ``max_lines`` or ``max_bytes``."""
    if not compiled():
        return None
    assert _compiled is not None
    found = _compiled.event_runs(
        continuing, np.ascontiguousarray(starts, np.int64), size, max_lines, max_bytes, settled
    )
    if found is None:
        return None
    firsts, lines, last_first, settled_first = found
    return (
        np.frombuffer(firsts, dtype=np.int64),
        np.frombuffer(lines, dtype=np.int64),
        last_first,
        settled_first,
    )


def framed_lines(
    presets: tuple[MultilinePreset, ...],
    data: bytes | bytearray,
    max_lines: int,
    max_bytes: int,
    lookahead: int,
) -> FramedLines | None:
    """:func:`line_starts`, :func:`preset_continuing` (the first line judged as if a line that
    begins an event came before it) and :func:`compiled_event_runs` (settled ``lookahead``
    lines before the last) of ``data`` (whole lines, at least one byte) in one compiled call:
    one release of the GIL instead of three, and no array handed between them. The marks are
    writable. None: the compiled tests are not in use."""
    if not compiled():
        return None
    assert _compiled is not None
    _load_words()
    framed = _compiled.frame_lines(data, _flags(presets), max_lines, max_bytes, lookahead)
    return _framed_columns(framed)


def read_judged(
    presets: tuple[MultilinePreset, ...],
    fd: int,
    offset: int,
    size: int,
    max_lines: int,
    max_bytes: int,
    lookahead: int,
) -> tuple[bytearray, JudgedLines | None] | None:
    """``size`` bytes (at most) of ``fd`` at ``offset``, and what ``presets`` say of their whole
    lines (:class:`JudgedLines`; None: no whole line), in one compiled call: the read and the
    judgement in one release of the GIL, so the mailbox thread waits for it once, not twice,
    while the sinks' threads hold it. None: the compiled tests are not in use (read, then
    judge). Raises OSError as a read does."""
    if not compiled():
        return None
    assert _compiled is not None
    _load_words()
    data, length, one_line, framed = _compiled.read_judged(
        fd, offset, size, _flags(presets), max_lines, max_bytes, lookahead
    )
    if not length:
        return data, None
    columns = None if framed is None else _framed_columns(framed)
    return data, JudgedLines(length, one_line, columns)


def _framed_columns(
    framed: tuple[bytearray, bytearray, tuple[bytes, bytes, int, int] | None],
) -> FramedLines:
    """The compiled ``frame_lines``' answer (buffers) as :data:`FramedLines` (arrays)."""
    starts, marks, runs = framed
    continuing = np.frombuffer(marks, dtype=np.bool_)
    if runs is None:
        return np.frombuffer(starts, dtype=np.int64), continuing, None
    firsts, lines, last_first, settled_first = runs
    columns = (
        np.frombuffer(firsts, dtype=np.int64),
        np.frombuffer(lines, dtype=np.int64),
        last_first,
        settled_first,
    )
    return np.frombuffer(starts, dtype=np.int64), continuing, columns


@functools.cache
def _flags(presets: tuple[MultilinePreset, ...]) -> int:
    """The compiled tests' flags of ``presets`` (asked at every read: found once)."""
    assert _compiled is not None
    flags = 0
    for preset in presets:
        flags |= getattr(_compiled, preset.name)
    return flags


def preset_continuing(
    presets: tuple[MultilinePreset, ...], data: bytes | bytearray, starts: Positions
) -> NDArray[np.bool_]:
    """For each line of ``data`` (whole lines, at least one, starting at ``starts``): whether
    one of ``presets`` says it continues the line before. The first line is judged as if a
    line that begins an event came before it."""
    if compiled():
        assert _compiled is not None
        _load_words()
        starts = np.ascontiguousarray(starts, np.int64)
        marks = _compiled.preset_continuing(data, starts, _flags(presets))
        return np.frombuffer(marks, dtype=np.bool_)
    return numpy_preset_continuing(presets, data, starts)


def numpy_preset_continuing(
    presets: tuple[MultilinePreset, ...], data: bytes | bytearray, starts: Positions
) -> NDArray[np.bool_]:
    """:func:`preset_continuing` with NumPy (the reference the compiled tests agree with)."""
    count = len(starts)
    result = np.zeros(count, dtype=np.bool_)
    view = np.frombuffer(data, dtype=np.uint8)
    first = view[starts]
    if MultilinePreset.GO not in presets and not _may_continue()[first].any():
        # Every line begins with a byte no continuation of Python's or Java's does (a date,
        # most often): each begins an event. Most reads of a log of one-line events end here.
        return result
    ends = np.empty(count, dtype=np.int64)  # where each line's newline is (or the end)
    ends[:-1] = starts[1:] - 1
    ends[-1] = len(data) - (1 if data[-1] == NEWLINE else 0)
    indented = (first == _SPACE) | (first == _TAB)
    blank = first == NEWLINE
    carriage = np.flatnonzero(first == _CR)  # a CRLF file's empty line
    blank[carriage[ends[carriage] - starts[carriage] == 1]] = True
    word_at = _words_at(data, starts, first)
    for preset in presets:
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


_MAY_CONTINUE: list[NDArray[np.bool_]] = []


def _may_continue() -> NDArray[np.bool_]:
    """By first byte: whether a line may continue the one before by the Python or Java preset
    (indented, blank, or starting a preset's word). A line after an indented one may too (an
    exception's line after its frames), so a read with none of these has no continuation."""
    if not _MAY_CONTINUE:
        table = _word_table().heads.copy()
        table[[_SPACE, _TAB, NEWLINE, _CR]] = True
        _MAY_CONTINUE.append(table)
    return _MAY_CONTINUE[0]


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
    # A name that fills the window but its last byte is judged by the pattern: the byte
    # after the name's end must be in the window too.
    long_names = name[:, : _NAME_WINDOW + 1].all(axis=1)
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
