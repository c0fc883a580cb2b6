"""Events that span lines: where a multiline event lies among a segment's lines, and whether a
bound cut it."""

from __future__ import annotations

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
    HEADLESS = "headless"
    """Its first line continues an event before it: one closed by a bound, one ended by
    ``multiline.flush_after`` before the rest of it was written, one whose head a copytruncate
    left in the copy, or the first lines read from a file started at its end."""


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

    def to_json(self) -> list[object]:
        """``[first_line, lines, cut or null]``."""
        return [self.first_line, self.lines, None if self.cut is None else self.cut.value]

    @classmethod
    def from_json(cls, entry: object, where: str) -> EventSpan:
        """A span as :meth:`to_json` writes it.

        Raises:
            ManifestError: it is not one (the message starts with ``where``).
        """
        if not isinstance(entry, list) or len(entry) != 3:
            raise ManifestError(f"{where}: an event is [first_line, lines, cut], not {entry!r}")
        first_line, lines, cut = entry
        if type(first_line) is not int or first_line < 0:
            raise ManifestError(f"{where}: first_line {first_line!r} is not a line number")
        if type(lines) is not int or lines < 1:
            raise ManifestError(f"{where}: lines {lines!r} is not a positive count")
        if cut is not None and cut not in {c.value for c in EventCut}:
            known = ", ".join(EventCut)
            raise ManifestError(f"{where}: cut {cut!r} is not one of {known}")
        if lines == 1 and cut is None:
            raise ManifestError(f"{where}: an event of one line, not cut, is not listed")
        return cls(first_line, lines, None if cut is None else EventCut(cut))


def events_in(spans: tuple[EventSpan, ...], lines: int) -> int:
    """How many events ``lines`` lines hold when ``spans`` are their multiline events."""
    return lines - sum(span.lines - 1 for span in spans)


def check_spans(spans: tuple[EventSpan, ...], lines: int, where: str) -> None:
    """Raises ``ManifestError`` unless ``spans`` are in order, apart, and within ``lines``."""
    end = 0
    for number, span in enumerate(spans):
        if span.first_line < end:
            raise ManifestError(f"{where}, event {number}: it overlaps the event before")
        end = span.first_line + span.lines
        if end > lines:
            raise ManifestError(
                f"{where}, event {number}: lines {span.first_line}..{end - 1} are not all "
                f"among the segment's {lines}"
            )
