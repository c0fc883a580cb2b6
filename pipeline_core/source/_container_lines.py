"""Container logs: the entries a container runtime writes, and which of them join.

A runtime writes each line a container prints as an entry of its log file, with the stream
it came from and its time. A line longer than the runtime's buffer (16 KiB for containerd and
Docker) is written as several entries: the first ones *partial*, the last one *full*. Two
formats are read:

``cri`` (containerd, CRI-O: the files under ``/var/log/pods``)
    ``<RFC 3339 time> <stdout|stderr> <P|F> <text>``: ``P`` a partial entry, ``F`` the full
    one that ends a line.
``docker_json`` (Docker's ``json-file`` driver)
    ``{"log":"<text>","stream":"stdout","time":"<RFC 3339 time>"}``: a partial entry's ``log``
    lacks the trailing ``\\n`` the full one has.

stdout and stderr are copied into the file by separate threads of the runtime, so their entries
interleave; the entries of one stream join. :func:`container_judgment` tells, for a read's
entries, which continue the entry before them: a partial entry's rest, and (with a multiline
rule, judged on each stream's lines apart) a traceback's next line. A line the format does
not describe is an entry of its own that nothing joins (the landing rejects it); it does not
stop the read.

An event is a run of adjacent entries. An entry that continues one of its stream across an
entry of the other stream begins a row of its own, ``cut: headless``; the row before it, if it
ended in a partial entry, is ``cut: interleaved``. Nothing is lost or read twice: only the
row's boundary moves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pipeline_core._compat import StrEnum

if TYPE_CHECKING:
    from pipeline_core.source._multiline import MultilineRule

Positions = NDArray[np.int64]

_NOT_AN_ENTRY = -1
STDOUT, STDERR = 0, 1
_STREAMS = {b"stdout": STDOUT, b"stderr": STDERR, "stdout": STDOUT, "stderr": STDERR}


class ContainerLogFormat(StrEnum):
    """How a container runtime writes its log files."""

    CRI = "cri"
    DOCKER_JSON = "docker_json"


@dataclass(frozen=True)
class ContainerEntries:
    """What a read's lines are as a runtime's entries, line by line."""

    stream: NDArray[np.int8]
    """``STDOUT``, ``STDERR``, or -1: a line the format does not describe."""
    partial: NDArray[np.bool_]
    """Whether the entry is partial: the rest of its line follows in the stream's next one."""
    texts: list[bytes]
    """Each entry's text (without the format around it and without a newline)."""


def parse_entries(
    data: bytes | bytearray, starts: Positions, fmt: ContainerLogFormat
) -> ContainerEntries:
    """The entries of ``data``'s lines (starting at ``starts``)."""
    count = len(starts)
    stream = np.full(count, _NOT_AN_ENTRY, dtype=np.int8)
    partial = np.zeros(count, dtype=np.bool_)
    texts: list[bytes] = []
    view = memoryview(data)
    bounds = [*starts.tolist(), len(data)]
    parse = _cri_entry if fmt is ContainerLogFormat.CRI else _docker_entry
    for index in range(count):
        begin, end = bounds[index], bounds[index + 1]
        if end > begin and data[end - 1] == 0x0A:
            end -= 1
        line = bytes(view[begin:end])
        entry = parse(line)
        if entry is None:
            texts.append(line)
            continue
        stream[index], partial[index] = entry[0], entry[1]
        texts.append(entry[2])
    return ContainerEntries(stream, partial, texts)


def _cri_entry(line: bytes) -> tuple[int, bool, bytes] | None:
    """``(stream, partial, text)`` of a CRI entry, or None."""
    first = line.find(b" ")
    second = line.find(b" ", first + 1) if first > 0 else -1
    if second < 0:
        return None
    stream = _STREAMS.get(line[first + 1 : second])
    tag = line[second + 1 : second + 2]
    if stream is None or tag not in (b"P", b"F") or line[second + 2 : second + 3] not in b" ":
        return None
    return stream, tag == b"P", line[second + 3 :]


def _docker_entry(line: bytes) -> tuple[int, bool, bytes] | None:
    """``(stream, partial, text)`` of a Docker json-file entry, or None."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    text, stream = entry.get("log"), _STREAMS.get(entry.get("stream", "stdout"))
    if not isinstance(text, str) or stream is None:
        return None
    whole = text.endswith("\n")
    return stream, not whole, text[:-1].encode() if whole else text.encode()


@dataclass(frozen=True)
class LineJudgment:
    """Which lines of a read continue the line before them, and how rows are cut where
    streams interleave."""

    continuing: NDArray[np.bool_]
    """Whether each line continues the event of the line right before it."""
    headless: NDArray[np.bool_]
    """Lines that begin a row but continue an event of theirs that an earlier row holds."""
    interleaved: NDArray[np.bool_]
    """Lines that end a row in the middle of a line (a partial entry that another stream's
    entry follows)."""
    settled: int
    """The last line from which the lines before it are judged for good (:func:`frame`
    hands on only events that begin at or before it)."""


def container_judgment(
    data: bytes | bytearray,
    starts: Positions,
    fmt: ContainerLogFormat,
    rule: MultilineRule | None,
    lookahead: int,
) -> LineJudgment:
    """How the entries of ``data`` (whole lines, starting at ``starts``) join.

    Args:
        rule: the source's multiline rule, judging each stream's lines
            (their entries' texts, a partial line's first entry standing for it) apart; None:
            only a line's entries join.
        lookahead: lines (of the read, after joining entries) the rule judges a line by.
    """
    count = len(starts)
    entries = parse_entries(data, starts, fmt)
    stream, partial = entries.stream, entries.partial
    numbers = np.arange(count, dtype=np.int64)
    previous_same = np.full(count, -1, dtype=np.int64)  # the stream's entry before each one
    for code in (STDOUT, STDERR):
        lines = np.flatnonzero(stream == code)
        previous_same[lines[1:]] = lines[:-1]
    known = previous_same >= 0
    joins = np.zeros(count, dtype=np.bool_)
    joins[known] = partial[previous_same[known]]  # the rest of a partial entry's line
    line_starts = ~joins  # an entry that begins a line of its stream
    if rule is not None:
        for code in (STDOUT, STDERR):
            lines = np.flatnonzero((stream == code) & line_starts)
            if not lines.size:
                continue
            texts = [entries.texts[line] for line in lines.tolist()]
            buffer = b"\n".join(texts) + b"\n"
            lengths = np.fromiter((len(text) + 1 for text in texts), np.int64, len(texts))
            text_starts = np.zeros(len(texts), dtype=np.int64)
            np.cumsum(lengths[:-1], out=text_starts[1:])
            joins[lines] |= rule.continuing(buffer, text_starts)
    joins &= stream != _NOT_AN_ENTRY
    adjacent = previous_same == numbers - 1
    continuing = joins & adjacent
    headless = joins & ~adjacent
    interleaved = np.zeros(count, dtype=np.bool_)
    interleaved[:-1] = partial[:-1] & (stream[1:] != stream[:-1])
    settled = count - 1
    if lookahead:  # counted in lines of the streams, not in entries
        begins_line = np.flatnonzero(line_starts)
        settled = int(begins_line[-1 - lookahead]) if len(begins_line) > lookahead else -1
    return LineJudgment(continuing, headless, interleaved, settled)


@dataclass(frozen=True)
class ContainerEvent:
    """An event of a container's log as its program printed it."""

    stream: str | None
    """``stdout`` or ``stderr`` (None: its first line is not an entry of the format)."""
    time: str | None
    """The runtime's time of its first entry, as the runtime wrote it (RFC 3339)."""
    text: bytes
    """Its lines as the program printed them, joined by ``\\n``, without the last one's."""


def container_event(event: bytes | bytearray, fmt: ContainerLogFormat) -> ContainerEvent:
    """The event that ``event`` (the runtime's entries of one event, each with its ``\\n``)
    holds: its entries' texts joined (a partial entry's with the next one's, lines with
    ``\\n``)."""
    lines = bytes(event).split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    parse = _cri_entry if fmt is ContainerLogFormat.CRI else _docker_entry
    parts: list[bytes] = []
    stream: str | None = None
    stamp: str | None = None
    for number, line in enumerate(lines):
        entry = parse(line)
        if entry is None:
            parts.append(line + b"\n")
            continue
        if number == 0:
            stream = "stdout" if entry[0] == STDOUT else "stderr"
            stamp = _time_of(line, fmt)
        parts.append(entry[2] if entry[1] else entry[2] + b"\n")
    text = b"".join(parts)
    return ContainerEvent(stream, stamp, text[:-1] if text.endswith(b"\n") else text)


def _time_of(line: bytes, fmt: ContainerLogFormat) -> str | None:
    if fmt is ContainerLogFormat.CRI:
        return line[: line.find(b" ")].decode("ascii", "replace")
    stamp = json.loads(line).get("time")
    return stamp if isinstance(stamp, str) else None
