"""Container logs: the entries a container runtime writes, parsed one line at a time.

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

:func:`parse_entries` tells a read's lines as entries (stream, partial or full, text) for
``_container_lines`` to join into events; :func:`container_event` turns one event's entries
back into what the program printed.
"""

from __future__ import annotations

import calendar
import json
import re
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from pipeline_core._compat import StrEnum

Positions = NDArray[np.int64]

NOT_AN_ENTRY = -1
"""The stream of a line the format does not describe."""
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
    stream = np.full(count, NOT_AN_ENTRY, dtype=np.int8)
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
    text, stream = entry.get("log"), entry.get("stream")
    if not isinstance(text, str) or not isinstance(stream, str) or stream not in _STREAMS:
        return None
    whole = text.endswith("\n")
    if whole:
        text = text[:-1]
    if "\n" in text:  # the runtime splits lines at their newline: not one of its entries
        return None
    try:
        return _STREAMS[stream], not whole, text.encode()
    except UnicodeEncodeError:  # a lone surrogate (\ud800): no text Docker wrote
        return None


def entry_time(line: bytes, fmt: ContainerLogFormat) -> float | None:
    """The runtime's time of an entry (a line, without its newline), in seconds since the
    epoch; None when it has none that reads."""
    stamp: object
    if fmt is ContainerLogFormat.CRI:
        stamp = line[: line.find(b" ")].decode("ascii", "replace")
    else:
        try:
            stamp = json.loads(line).get("time")
        except (ValueError, AttributeError):
            return None
    if not isinstance(stamp, str):
        return None
    found = _RFC3339.fullmatch(stamp)
    if found is None:
        return None
    try:
        whole = datetime.strptime(found["whole"], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    offset = 0
    if found["zone"] not in ("Z", "z"):
        sign = 1 if found["zone"][0] == "+" else -1
        offset = sign * (int(found["zone"][1:3]) * 3600 + int(found["zone"][4:6]) * 60)
    fraction = float(f"0.{found['fraction']}") if found["fraction"] else 0.0
    return calendar.timegm(whole.timetuple()) + fraction - offset


_RFC3339 = re.compile(
    r"(?P<whole>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?"
    r"(?P<zone>[Zz]|[+-]\d\d:\d\d)"
)


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
