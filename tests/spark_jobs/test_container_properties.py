"""Properties of the container formats (``cri``, ``docker_json``): a program's printed lines,
generated, written as a runtime writes them (a line in several entries, all but the last
partial, each with its time: ``tests.support.container_runtime``'s containerd CRI and Docker
``json-file`` entries) and framed as the collector frames them (an event of its entries),
land as those lines, their stream and the time of the first entry; an event damaged in a known
way is a reject with the reason the damage calls for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline_core.formats import RejectReason, SourceFormat
from tests.spark_jobs.support import SPARK_EXAMPLES, StagingRows, format_columns, landed
from tests.support.container_runtime import cri_entry, docker_entry
from tests.support.staging import Event, Line

pytestmark = pytest.mark.spark

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
PRINTED = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=30)
"""A line a program prints (its newline is the entry's)."""
COLUMNS = ("message", "stream", "event_lines", "cut")


@dataclass(frozen=True)
class Printed:
    """A program's event (its lines, on one stream) and how its runtime wrote it: each line cut
    into entries at ``cuts`` (byte positions in it), the entries' times from ``nanoseconds``
    on."""

    stream: str
    lines: tuple[bytes, ...]
    cuts: tuple[tuple[int, ...], ...]
    nanoseconds: int
    """The time of the first entry; each next entry is a microsecond and a bit later."""

    def entries(self) -> list[tuple[bool, bytes, int]]:
        """``(partial, text, nanoseconds)`` of each entry, in the order written."""
        found: list[tuple[bool, bytes, int]] = []
        for line, cuts in zip(self.lines, self.cuts, strict=True):
            bounds = (0, *cuts, len(line))
            for number, (start, end) in enumerate(pairwise(bounds)):
                partial = number < len(bounds) - 2
                found.append((partial, line[start:end], self.nanoseconds + 1017 * len(found)))
        return found

    def written(self, fmt: str) -> list[bytes]:
        """The entries as the runtime wrote them, each without its newline."""
        entry = cri_entry if fmt == SourceFormat.CRI else docker_entry
        return [entry(self.stream, *e).removesuffix(b"\n") for e in self.entries()]

    def expected(self, fmt: str) -> dict[str, Any]:
        """What it lands as: its lines (as the runtime wrote them: Docker's ``log`` holds text,
        a character its entries cut in two replaced), stream and first entry's time."""
        if fmt == SourceFormat.CRI:
            message = b"\n".join(self.lines).decode()
        else:
            texts = [text.decode("utf-8", "replace") for _, text, _ in self.entries()]
            message = "".join(
                text + ("" if partial else "\n")
                for text, (partial, _, _) in zip(texts, self.entries(), strict=True)
            ).removesuffix("\n")
        return {
            "message": message,
            "stream": self.stream,
            "event_lines": len(self.lines),
            "cut": None,
            "event_time": EPOCH + timedelta(microseconds=self.nanoseconds // 1000),
        }


@st.composite
def printed(draw: st.DrawFn) -> Printed:
    lines = tuple(text.encode() for text in draw(st.lists(PRINTED, min_size=1, max_size=3)))
    cuts = tuple(
        tuple(sorted(draw(st.sets(st.integers(1, len(line) - 1), max_size=2))))
        if len(line) > 1
        else ()
        for line in lines
    )
    return Printed(
        draw(st.sampled_from(["stdout", "stderr"])),
        lines,
        cuts,
        draw(st.integers(946_684_800 * 10**9, 4_102_444_799 * 10**9)),  # 2000 to 2099
    )


def damaged_cri(entries: list[bytes], damage: str, at: int) -> tuple[list[bytes], RejectReason]:
    """CRI entries with one damaged (``at``: which, when the damage may be in any)."""
    fields = entries[at].split(b" ", 3)
    if damage == "invalid utf-8":
        return [*entries[:-1], entries[-1] + b"\xff"], RejectReason.INVALID_UTF8
    if damage == "no such time":
        first = [b"2026-13-01T00:00:00Z", *entries[0].split(b" ", 3)[1:]]
        return [b" ".join(first), *entries[1:]], RejectReason.BAD_TIMESTAMP
    if damage == "unknown stream":
        fields[1] = b"stdin"
    elif damage == "unknown tag":
        fields[2] = b"X"
    else:  # "not an entry"
        fields = [b"not", b"an", b"entry"]
    entries = list(entries)
    entries[at] = b" ".join(fields)
    return entries, RejectReason.NO_MATCH


def damaged_docker(entries: list[bytes], damage: str, at: int) -> tuple[list[bytes], RejectReason]:
    """Docker entries with one damaged (``at``: which, when the damage may be in any)."""
    entries = list(entries)
    if damage == "invalid utf-8":
        entries[at] = entries[at].replace(b'"log":"', b'"log":"\xff', 1)
        return entries, RejectReason.INVALID_UTF8
    if damage == "not an entry":
        entries[at] = entries[at][:-1]  # truncated
        return entries, RejectReason.INVALID_JSON
    entry: dict[str, Any] = json.loads(entries[0 if damage == "no such time" else at])
    if damage == "no such time":
        entry["time"] = "2026-13-01T00:00:00Z"
        entries[0] = json.dumps(entry).encode()
        return entries, RejectReason.BAD_TIMESTAMP
    if damage == "unknown stream":
        entry["stream"] = "stdin"
    else:  # "no text"
        del entry["log"]
    entries[at] = json.dumps(entry).encode()
    return entries, RejectReason.INVALID_JSON


DAMAGES = {
    SourceFormat.CRI: (
        "invalid utf-8", "no such time", "unknown stream", "unknown tag", "not an entry",
    ),
    SourceFormat.DOCKER_JSON: (
        "invalid utf-8", "no such time", "unknown stream", "no text", "not an entry",
    ),
}  # fmt: skip


def staged(entries: list[bytes]) -> Line:
    """An event's entries as the collector stages them: a line, or an event of its entries."""
    return entries[0] if len(entries) == 1 else Event(tuple(entries))


columns = partial(format_columns, COLUMNS)


@pytest.mark.parametrize("fmt", [SourceFormat.CRI, SourceFormat.DOCKER_JSON])
@SPARK_EXAMPLES
@given(
    generated=st.lists(
        st.tuples(printed(), st.none() | st.integers(0, 4), st.integers(0, 10)),
        min_size=1,
        max_size=30,
    )
)
def test_a_printed_event_lands_as_its_lines_stream_and_time_and_a_damaged_one_is_a_reject(
    staging_rows: StagingRows,
    fmt: SourceFormat,
    generated: list[tuple[Printed, int | None, int]],
) -> None:
    damaging = damaged_cri if fmt == SourceFormat.CRI else damaged_docker
    items: list[Line] = []
    wanted: list[dict[str, Any] | str] = []
    for event, damage, at in generated:
        entries = event.written(fmt)
        if damage is None:
            wanted.append(event.expected(fmt))
        else:
            entries, reason = damaging(entries, DAMAGES[fmt][damage], at % len(entries))
            wanted.append(reason.value)
        items.append(staged(entries))

    rows = landed(staging_rows, items, fmt.value)

    assert [columns(row) for row in rows] == wanted
