"""Events that span lines: where a multiline event lies among a segment's lines, and whether a
bound cut it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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
    left in the copy, or the first lines read from a file started at its end; in a container's
    log, the rest of an event of one stream after an entry of the other stream."""
    INTERLEAVED = "interleaved"
    """A container's log only: it ends in the middle of a line that the runtime wrote in
    parts, an entry of the other stream came before the rest, and the rest is a later row of
    its stream (``headless``)."""


@dataclass(frozen=True, slots=True)
class EventSpan:
    """An event of a run of whole lines that is not simply one line: ``lines`` lines from the
    run's line ``first_line`` (counted from 0), and ``cut`` if a bound or a missing head cut it.
    Every line of the run that no span covers is an event of one line."""

    first_line: int
    lines: int
    cut: EventCut | None = None

    def shifted(self, lines: int) -> EventSpan:
        """The span in a run that has ``lines`` more lines before this one's."""
        return EventSpan(self.first_line + lines, self.lines, self.cut)


_CUTS: tuple[EventCut | None, ...] = (None, *EventCut)
"""Cut codes: 0 for none, then ``EventCut`` in its order (what a reader's NumPy arrays hold)."""
CUT_CODES: dict[EventCut | None, int] = {cut: code for code, cut in enumerate(_CUTS)}
"""The code :meth:`EventRuns.from_codes` takes for each cut."""


@dataclass(frozen=True)
class EventRuns:
    """The multiline events of a run of whole lines, column by column (no object per event:
    a read of tracebacks holds thousands): each event's first line, its line count, and its
    cut. Iterating gives :class:`EventSpan` values; every line no event covers is an event of
    its own."""

    first_lines: tuple[int, ...] = ()
    lines: tuple[int, ...] = ()
    cuts: tuple[EventCut | None, ...] = ()

    @classmethod
    def of(cls, spans: Iterable[EventSpan]) -> EventRuns:
        listed = list(spans)
        return cls(
            tuple(span.first_line for span in listed),
            tuple(span.lines for span in listed),
            tuple(span.cut for span in listed),
        )

    @classmethod
    def from_codes(
        cls, first_lines: list[int], lines: list[int], cut_codes: list[int]
    ) -> EventRuns:
        """From columns of plain ints (a NumPy array's ``tolist()``), cuts as codes."""
        return cls(tuple(first_lines), tuple(lines), tuple(map(_CUTS.__getitem__, cut_codes)))

    def __iter__(self) -> Iterator[EventSpan]:
        return map(EventSpan, self.first_lines, self.lines, self.cuts)

    def __len__(self) -> int:
        return len(self.first_lines)

    def __bool__(self) -> bool:
        return bool(self.first_lines)

    def __add__(self, other: EventRuns) -> EventRuns:
        return EventRuns(
            self.first_lines + other.first_lines,
            self.lines + other.lines,
            self.cuts + other.cuts,
        )

    def shifted(self, lines: int) -> EventRuns:
        """The events in a run that has ``lines`` more lines before these."""
        return EventRuns(tuple(first + lines for first in self.first_lines), self.lines, self.cuts)

    def joined_lines(self) -> int:
        """Lines that continue an event: the run's lines less its events."""
        return sum(self.lines) - len(self.lines)

    def to_json(self) -> dict[str, list[object]]:
        """Column by column: ``{"first_line": [...], "lines": [...], "cut": [[event, cut],
        ...]}``, ``cut`` listing only the cut events (by their index among these)."""
        cuts: list[object] = [
            [index, cut.value] for index, cut in enumerate(self.cuts) if cut is not None
        ]
        return {"first_line": list(self.first_lines), "lines": list(self.lines), "cut": cuts}

    @classmethod
    def from_json(cls, entry: object, where: str) -> EventRuns:
        """Events as :meth:`to_json` writes them; every event of one line is cut.

        Raises:
            ManifestError: they are not (the message starts with ``where``).
        """
        if not isinstance(entry, dict) or set(entry) != {"first_line", "lines", "cut"}:
            raise ManifestError(f"{where}: events are {{first_line, lines, cut}}, not {entry!r}")
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
        for number, (count, cut) in enumerate(zip(lines, cuts, strict=True)):
            if count == 1 and cut is None:
                raise ManifestError(
                    f"{where}, event {number}: an event of one line, not cut, is not listed"
                )
        return cls(tuple(first_lines), tuple(lines), tuple(cuts))


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
