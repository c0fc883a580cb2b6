"""A manifest's segment: a run of a part file's bytes that are lines of one source file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline_core._compat import StrEnum
from pipeline_core.staging_contract._events import (
    NO_EVENTS,
    EventRuns,
    EventSpan,
    check_spans,
    events_in,
)
from pipeline_core.staging_contract._fields import (
    ManifestError,
    read_count,
    read_field,
    read_object,
    read_text,
)


class SegmentKind(StrEnum):
    """What a segment's bytes are (a manifest segment's ``kind``)."""

    LINES = "lines"
    """Bytes of a source file from ``start_offset``: whole lines (the last may lack its
    ``\\n``)."""
    LONG_LINE = "long_line"
    """The first bytes (no ``\\n``) of one line of ``line_bytes`` bytes at ``start_offset``,
    longer than the collector's ``max_line_bytes``: it lands as a ``line_too_long`` reject."""


@dataclass(frozen=True)
class Segment:
    """Bytes ``[part_offset, part_offset + length)`` of a part: ``lines`` whole lines of one
    source file from ``start_offset`` in it, or (``LONG_LINE``) the prefix of one over-long line
    of ``line_bytes`` bytes there."""

    file_fingerprint: str
    start_offset: int
    part_offset: int
    length: int
    lines: int
    kind: SegmentKind = SegmentKind.LINES
    line_bytes: int | None = None
    """``LONG_LINE`` only: the whole line's length in bytes, without its newline."""
    events: EventRuns = NO_EVENTS
    """``LINES`` only: the multiline events among the lines (format 5), in order; a line no
    span covers is an event of its own. Empty: every line is an event. (A tuple of
    :class:`EventSpan` given here is taken as their ``EventRuns``.)"""

    def __post_init__(self) -> None:
        if not isinstance(self.events, EventRuns):
            spans: tuple[EventSpan, ...] = self.events
            object.__setattr__(self, "events", EventRuns.of(spans))

    @property
    def event_count(self) -> int:
        """The events the segment holds."""
        return events_in(self.events, self.lines)

    def to_json(self, *, encoded: bool = False) -> dict[str, Any]:
        """The segment as format 4 lists it (``line_bytes`` for a ``long_line`` only);
        ``encoded``: its events' columns as :class:`msgspec.Raw` JSON."""
        entry: dict[str, Any] = {
            "file_fingerprint": self.file_fingerprint,
            "start_offset": self.start_offset,
            "part_offset": self.part_offset,
            "length": self.length,
            "lines": self.lines,
            "kind": self.kind.value,
        }
        if self.kind is SegmentKind.LONG_LINE:
            entry["line_bytes"] = self.line_bytes
        if self.events:
            entry["events"] = self.events.to_json(encoded=encoded)
        return entry

    @classmethod
    def from_json(cls, entry: object, where: str, version: int) -> Segment:
        """A segment of manifest format ``version``: at most one line per byte, at least one if
        it has bytes; a ``long_line`` holds one line, shorter than its ``line_bytes``.

        Raises:
            ManifestError: it breaks the contract (the message starts with ``where``).
        """
        fields = read_object(entry, where)
        fingerprint = read_text(fields, "file_fingerprint", where)
        if version == 3:
            if "kind" in fields:
                raise ManifestError(f"{where}: kind is not part of format_version 3")
            kind: object = SegmentKind.LINES.value
        else:
            kind = read_field(fields, "kind", where)
        if not isinstance(kind, str) or kind not in {k.value for k in SegmentKind}:
            known = ", ".join(SegmentKind)
            raise ManifestError(f"{where}: kind {kind!r} is not one of {known}")
        long_line = kind == SegmentKind.LONG_LINE
        events = NO_EVENTS
        if "events" in fields:
            if version < 5:
                raise ManifestError(f"{where}: events are not part of format_version {version}")
            if long_line:
                raise ManifestError(f"{where}: a long_line segment has no events")
            events = EventRuns.from_json(fields["events"], where)
            if events.has_joins and version < 6:
                raise ManifestError(f"{where}: joins are not part of format_version {version}")
        segment = cls(
            fingerprint,
            read_count(fields, "start_offset", where),
            read_count(fields, "part_offset", where),
            read_count(fields, "length", where),
            read_count(fields, "lines", where),
            SegmentKind(kind),
            read_count(fields, "line_bytes", where) if long_line else None,
            events,
        )
        check_spans(events, segment.lines, where)
        if segment.lines > segment.length or (segment.length > 0) != (segment.lines > 0):
            raise ManifestError(
                f"{where}: {segment.length} bytes cannot hold {segment.lines} lines"
            )
        if not long_line and "line_bytes" in fields:
            raise ManifestError(f"{where}: line_bytes belongs to long_line segments only")
        if long_line and segment.lines != 1:
            raise ManifestError(f"{where}: a long_line segment holds 1 line, not {segment.lines}")
        if segment.line_bytes is not None and segment.line_bytes <= segment.length:
            raise ManifestError(
                f"{where}: an over-long line of {segment.line_bytes} bytes cannot have a prefix "
                f"of {segment.length}"
            )
        return segment
