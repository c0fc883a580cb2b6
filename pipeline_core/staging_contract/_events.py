"""Events that span lines: where a multiline event lies among a segment's lines, and whether a
bound cut it."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from pipeline_core._compat import StrEnum
from pipeline_core.staging_contract._fields import ManifestError


class EventCut(StrEnum):
    """Why an event's row is not a whole event as its program wrote it (the lake's ``cut``)."""

    LINES = "lines"
    """It reached the source's ``multiline.max_lines``: it was closed there, and the lines that
    followed it, up to the next event's first line, are the next row (``headless``)."""
    BYTES = "bytes"
    """It reached ``multiline.max_bytes`` (or filled a whole read): closed there, as for
    ``lines``."""
    TRUNCATED = "truncated"
    """The last event of a ``copytruncate`` copy, which was being written when the original was
    truncated: the rest of it, if any was written, is the first row of the truncated file
    (``headless``)."""
    HEADLESS = "headless"
    """Its first line continues an event before it: one closed by a bound, one ended by
    ``multiline.flush_after`` before the rest of it was written, one whose head a copytruncate
    left in the copy, or the first lines read from a file started at its end."""


@dataclass(frozen=True, slots=True)
class EventSpan:
    """An event of a run of whole lines that is not simply one line: ``lines`` lines from the
    run's line ``first_line`` (counted from 0), and ``cut`` if a bound or a missing head cut it.
    Every line of the run that no span covers is an event of one line.

    In a container's log an event may be several such runs (its stream's lines, with the other
    stream's between them): each run after its first is a span whose ``head`` is the index
    (among the run's spans) of the span its event begins with; its lines follow that span's
    (and those of the spans before it with the same head), and its ``cut`` is None."""

    first_line: int
    lines: int
    cut: EventCut | None = None
    head: int = -1
    """-1: the span begins its event; otherwise the index of the span that does."""

    def shifted(self, lines: int, spans: int = 0) -> EventSpan:
        """The span in a run that has ``lines`` more lines (and ``spans`` more spans) before
        this one's."""
        head = self.head if self.head < 0 else self.head + spans
        return EventSpan(self.first_line + lines, self.lines, self.cut, head)


_CUTS: tuple[EventCut | None, ...] = (None, *EventCut)
"""Cut codes: 0 for none, then ``EventCut`` in its order (what a reader's NumPy arrays hold)."""
_WHOLE: tuple[EventCut | None] = (None,)
CUT_CODES: dict[EventCut | None, int] = {cut: code for code, cut in enumerate(_CUTS)}
"""The code :meth:`EventRuns.from_codes` takes for each cut."""


@dataclass(frozen=True)
class EventRuns:
    """The multiline events of a run of whole lines, column by column (no object per event:
    a read of tracebacks holds thousands): each span's first line, its line count, its cut,
    and (when an event is several spans: :class:`EventSpan`) the span its event begins with.
    Iterating gives :class:`EventSpan` values; every line no span covers is an event of its
    own."""

    first_lines: tuple[int, ...] = ()
    lines: tuple[int, ...] = ()
    cuts: tuple[EventCut | None, ...] = ()
    heads: tuple[int, ...] = ()
    """Per span, :attr:`EventSpan.head`; empty when every span begins its event."""

    @classmethod
    def of(cls, spans: Iterable[EventSpan]) -> EventRuns:
        listed = list(spans)
        heads = tuple(span.head for span in listed)
        return cls(
            tuple(span.first_line for span in listed),
            tuple(span.lines for span in listed),
            tuple(span.cut for span in listed),
            heads if any(head >= 0 for head in heads) else (),
        )

    @classmethod
    def from_codes(
        cls,
        first_lines: list[int],
        lines: list[int],
        cut_codes: list[int],
        heads: list[int] | None = None,
    ) -> EventRuns:
        """From columns of plain ints (a NumPy array's ``tolist()``), cuts as codes."""
        joined = tuple(heads) if heads and any(head >= 0 for head in heads) else ()
        # Most events are whole: no code to look up.
        cuts = tuple(map(_CUTS.__getitem__, cut_codes)) if any(cut_codes) else _WHOLE * len(lines)
        return cls(tuple(first_lines), tuple(lines), cuts, joined)

    def head_of(self) -> tuple[int, ...]:
        """:attr:`heads`, -1 for every span when it is empty."""
        return self.heads or (-1,) * len(self.first_lines)

    def __iter__(self) -> Iterator[EventSpan]:
        return map(EventSpan, self.first_lines, self.lines, self.cuts, self.head_of())

    def __len__(self) -> int:
        return len(self.first_lines)

    def __bool__(self) -> bool:
        return bool(self.first_lines)

    def __add__(self, other: EventRuns) -> EventRuns:
        heads: tuple[int, ...] = ()
        if self.heads or other.heads:
            offset = len(self.first_lines)
            heads = self.head_of() + tuple(
                head if head < 0 else head + offset for head in other.head_of()
            )
        return EventRuns(
            self.first_lines + other.first_lines,
            self.lines + other.lines,
            self.cuts + other.cuts,
            heads,
        )

    @classmethod
    def joined(cls, runs: Sequence[EventRuns]) -> EventRuns:
        """``runs[0] + runs[1] + ...`` (each already :meth:`shifted` to its place), copying
        each span once."""
        if len(runs) == 1:
            return runs[0]
        if any(run.heads for run in runs):
            return functools.reduce(operator.add, runs)
        return cls(
            tuple(chain.from_iterable(run.first_lines for run in runs)),
            tuple(chain.from_iterable(run.lines for run in runs)),
            tuple(chain.from_iterable(run.cuts for run in runs)),
        )

    def shifted(self, lines: int) -> EventRuns:
        """The events in a run that has ``lines`` more lines before these."""
        return EventRuns(
            tuple(map(lines.__add__, self.first_lines)), self.lines, self.cuts, self.heads
        )

    def joined_lines(self) -> int:
        """Lines that continue an event: the run's lines less its events."""
        starting = sum(1 for head in self.heads if head < 0) if self.heads else len(self.lines)
        return sum(self.lines) - starting

    def to_json(self) -> dict[str, list[object]]:
        """Column by column: ``{"first_line": [...], "lines": [...], "cut": [[span, cut],
        ...]}``, ``cut`` listing only the cut spans (by their index among these), and
        ``"joins": [[span, head], ...]`` only when an event is several spans."""
        cuts: list[object] = (
            [[index, cut.value] for index, cut in enumerate(self.cuts) if cut is not None]
            if any(self.cuts)  # most runs have no cut event: no look at each
            else []
        )
        entry: dict[str, list[object]] = {
            "first_line": list(self.first_lines),
            "lines": list(self.lines),
            "cut": cuts,
        }
        if self.heads:
            entry["joins"] = [[index, head] for index, head in enumerate(self.heads) if head >= 0]
        return entry

    @classmethod
    def from_json(cls, entry: object, where: str) -> EventRuns:
        """Events as :meth:`to_json` writes them; every event of one line is cut.

        Raises:
            ManifestError: they are not (the message starts with ``where``).
        """
        if (
            not isinstance(entry, dict)
            or not {"first_line", "lines", "cut"} <= set(entry)
            or (set(entry) - {"first_line", "lines", "cut", "joins"})
        ):
            raise ManifestError(
                f"{where}: events are {{first_line, lines, cut[, joins]}}, not {entry!r}"
            )
        first_lines, lines, cut_list = entry["first_line"], entry["lines"], entry["cut"]
        if not (isinstance(first_lines, list) and isinstance(lines, list)):
            raise ManifestError(f"{where}: events' first_line and lines are not lists")
        if len(first_lines) != len(lines):
            raise ManifestError(
                f"{where}: events have {len(first_lines)} first lines and {len(lines)} line counts"
            )
        if not all(type(v) is int and v >= 0 for v in first_lines):
            raise ManifestError(f"{where}: an event's first_line is not a line number")
        if not all(type(v) is int and v >= 1 for v in lines):
            raise ManifestError(f"{where}: an event's lines is not a positive count")
        cuts: list[EventCut | None] = [None] * len(lines)
        known = {c.value for c in EventCut}
        if not isinstance(cut_list, list):
            raise ManifestError(f"{where}: events' cut is not a list")
        for item in cut_list:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or type(item[0]) is not int
                or not 0 <= item[0] < len(lines)
                or item[1] not in known
            ):
                raise ManifestError(
                    f"{where}: a cut is [event, one of {', '.join(EventCut)}], not {item!r}"
                )
            cuts[item[0]] = EventCut(item[1])
        heads = _heads_from_json(entry.get("joins"), len(lines), where)
        continued = {head for head in heads if head >= 0}
        for number, (count, cut) in enumerate(zip(lines, cuts, strict=True)):
            if heads and heads[number] >= 0:
                if cut is not None:
                    raise ManifestError(
                        f"{where}, span {number}: a span that continues an event has no cut"
                    )
            elif count == 1 and cut is None and number not in continued:
                raise ManifestError(
                    f"{where}, event {number}: an event of one line, not cut, is not listed"
                )
        return cls(tuple(first_lines), tuple(lines), tuple(cuts), heads)


def _heads_from_json(joins: object, spans: int, where: str) -> tuple[int, ...]:
    """The ``heads`` column of an entry's ``joins`` (absent: none)."""
    if joins is None:
        return ()
    if not isinstance(joins, list) or not joins:
        raise ManifestError(f"{where}: events' joins is not a list of [span, head]")
    heads = [-1] * spans
    for item in joins:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(type(value) is int for value in item)
            or not 0 <= item[1] < item[0] < spans
        ):
            raise ManifestError(
                f"{where}: a join is [span, the earlier span its event begins with], not {item!r}"
            )
        heads[item[0]] = item[1]
    for span, head in enumerate(heads):
        if head >= 0 and heads[head] >= 0:
            raise ManifestError(f"{where}, span {span}: its head {head} continues an event too")
    return tuple(heads)


NO_EVENTS = EventRuns()


def events_in(spans: EventRuns, lines: int) -> int:
    """How many events ``lines`` lines hold when ``spans`` are their multiline events."""
    return lines - spans.joined_lines()


def check_spans(spans: EventRuns, lines: int, where: str) -> None:
    """Raises ``ManifestError`` unless ``spans`` are in order, apart, and within ``lines``."""
    end = 0
    for number, (first, count) in enumerate(zip(spans.first_lines, spans.lines, strict=True)):
        if first < end:
            raise ManifestError(f"{where}, event {number}: it overlaps the event before")
        end = first + count
        if end > lines:
            raise ManifestError(
                f"{where}, event {number}: lines {first}..{end - 1} are not all "
                f"among the segment's {lines}"
            )
