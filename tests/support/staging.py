"""Sealed staging batches, built with the staging contract as the handoff sink writes them.

Layout (``pipeline_core.staging_contract``; docs/architecture.md, "Staging (handoff) layout")::

    <staging>/<pipeline>/<checkpoint:08d>/<host>/part-<source>-<seq:05d>.lines
    <staging>/<pipeline>/<checkpoint:08d>/<host>/_manifest.json

A part file holds the lines' raw bytes; its manifest entry indexes them by segments of
``LINES_PER_CHUNK`` lines, so that parts of more lines than that have several segments; a
:class:`LongLine` (a line over ``max_line_bytes``, staged as its first bytes) is a segment of
its own. An :class:`Event` (a multiline event: a traceback, a stack trace) is its lines, never
split between segments, and its segment lists it in ``events`` (manifest format 5); segments
count their items (a line, an over-long line or an event) against ``LINES_PER_CHUNK``.
``write_batch`` may be called several times for the same host (one call per source or per
file); each call adds parts and a range to the batch's manifest.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    EventCut,
    EventRuns,
    EventSpan,
    Manifest,
    ManifestPart,
    ManifestRange,
    Segment,
    SegmentKind,
    SourceSpec,
    batch_dir,
    part_name,
    read_manifest,
    write_manifest,
)

LINES_PER_CHUNK = 1000
"""Lines per segment of the parts written here (the collector's segments are byte-sized)."""
DEFAULT_SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)


@dataclass(frozen=True)
class LongLine:
    """A line over ``max_line_bytes`` as the collector stages it: ``prefix`` (its first bytes)
    stands for ``line_bytes`` bytes of its file, followed by a newline."""

    prefix: bytes
    line_bytes: int


@dataclass(frozen=True)
class Event:
    """A multiline event as the collector stages it: its ``lines`` (each without its newline,
    each newline-terminated in the file), one row of the lake, ``cut`` if a bound or a missing
    head cut it. Its segment lists it as an ``EventSpan`` unless it is one line and not cut."""

    lines: tuple[bytes, ...]
    cut: EventCut | None = None

    @property
    def text(self) -> bytes:
        """The event's bytes as the landing reads them: its lines joined by their newlines."""
        return b"\n".join(self.lines)


Line = bytes | LongLine | Event
"""An item to stage: a line's bytes (without the newline), an over-long line, or a multiline
event."""


def file_bytes(line: Line) -> int:
    """The bytes ``line`` takes in its file, newlines included."""
    if isinstance(line, Event):
        return sum(len(part) + 1 for part in line.lines)
    return (line.line_bytes if isinstance(line, LongLine) else len(line)) + 1


def physical_lines(line: Line) -> int:
    """The lines ``line`` is in its file (an event's lines; 1 otherwise)."""
    return len(line.lines) if isinstance(line, Event) else 1


def staged_bytes(line: bytes | Event) -> bytes:
    """What a part holds of ``line``: its bytes and newline(s)."""
    if isinstance(line, Event):
        return b"".join(part + b"\n" for part in line.lines)
    return line + b"\n"


def line_offsets(lines: Sequence[Line], start_offset: int) -> list[int]:
    """The byte offset of each line (an event's first byte) when they follow each other,
    ``\\n``-terminated."""
    offsets: list[int] = []
    offset = start_offset
    for line in lines:
        offsets.append(offset)
        offset += file_bytes(line)
    return offsets


def write_part(
    path: Path,
    fingerprint: str,
    offsets: Sequence[int],
    lines: Sequence[Line],
    *,
    lines_per_segment: int = LINES_PER_CHUNK,
) -> tuple[Segment, ...]:
    """One raw part file: the lines (consecutive in their file from ``offsets[0]``), each
    ``\\n``-terminated, an over-long line as its prefix alone, an event as its lines. Returns
    its segments: one per ``lines_per_segment`` items (lines or events), listing their
    multiline events, and one per over-long line."""
    segments: list[Segment] = []
    position = 0
    with open(path, "wb") as handle:
        begin = 0
        while begin < len(lines):
            first = lines[begin]
            if isinstance(first, LongLine):
                data, count = first.prefix, 1
                kind, line_bytes = SegmentKind.LONG_LINE, first.line_bytes
            else:
                group: list[bytes | Event] = []
                for line in lines[begin : begin + lines_per_segment]:
                    if isinstance(line, LongLine):
                        break
                    group.append(line)
                data, count = b"".join(staged_bytes(line) for line in group), len(group)
                kind, line_bytes = SegmentKind.LINES, None
            spans: list[EventSpan] = []
            physical = 0
            for line in lines[begin : begin + count]:
                if isinstance(line, Event) and (len(line.lines) > 1 or line.cut is not None):
                    spans.append(EventSpan(physical, len(line.lines), line.cut))
                physical += physical_lines(line)
            handle.write(data)
            segments.append(
                Segment(
                    fingerprint,
                    offsets[begin],
                    position,
                    len(data),
                    physical,
                    kind,
                    line_bytes,
                    EventRuns.of(spans),
                )
            )
            position += len(data)
            begin += count
    return tuple(segments)


def part_entry(path: Path, source: str, segments: Sequence[Segment]) -> ManifestPart:
    """The manifest's ``parts`` entry of a part file written by ``write_part``."""
    data = path.read_bytes()
    rows = sum(segment.lines for segment in segments)
    return ManifestPart(
        path.name, source, rows, len(data), f"{zlib.crc32(data):08x}", tuple(segments)
    )


def empty_manifest(
    pipeline: str, checkpoint_id: int, host: str, sealed_at: datetime = DEFAULT_SEALED_AT
) -> Manifest:
    """The manifest of a batch that holds nothing."""
    return Manifest.of(
        pipeline=pipeline,
        checkpoint_id=checkpoint_id,
        host=host,
        sealed_at=sealed_at,
        sources={},
        parts=(),
        ranges=(),
    )


def write_empty_batch(staging_root: Path, pipeline: str, checkpoint_id: int, host: str) -> Path:
    """A sealed batch with a manifest and no parts (the host read nothing)."""
    batch = batch_dir(staging_root, pipeline, checkpoint_id, host)
    batch.mkdir(parents=True, exist_ok=True)
    write_manifest(batch, empty_manifest(pipeline, checkpoint_id, host))
    return batch


def write_batch(
    staging_root: Path,
    pipeline: str,
    checkpoint_id: int,
    host: str,
    source: str,
    format: str,
    lines: Sequence[Line],
    fingerprint: str,
    start_offset: int = 0,
    *,
    time_field: str | None = None,
    sealed_at: datetime = DEFAULT_SEALED_AT,
    rows_per_part: int | None = None,
    lines_per_segment: int = LINES_PER_CHUNK,
) -> Path:
    """Write ``lines`` of one source file as parts of a sealed batch and update its manifest.

    The lines (or events) are taken to be consecutive in the source file from
    ``start_offset``; each part holds ``rows_per_part`` of them (default: all), in segments of
    ``lines_per_segment``. A batch with an :class:`Event` of several lines (or cut) is a
    format 5 manifest's.
    Returns the batch directory ``<staging>/<pipeline>/<checkpoint:08d>/<host>``.
    """
    batch = batch_dir(staging_root, pipeline, checkpoint_id, host)
    batch.mkdir(parents=True, exist_ok=True)
    if (batch / MANIFEST_NAME).exists():
        manifest = read_manifest(batch)
    else:
        manifest = empty_manifest(pipeline, checkpoint_id, host, sealed_at)

    offsets = line_offsets(lines, start_offset)
    parts = list(manifest.parts)
    seq = sum(1 for part in parts if part.source == source)
    step = rows_per_part or max(len(lines), 1)
    for begin in range(0, len(lines), step):
        path = batch / part_name(source, seq)
        segments = write_part(
            path,
            fingerprint,
            offsets[begin : begin + step],
            lines[begin : begin + step],
            lines_per_segment=lines_per_segment,
        )
        parts.append(part_entry(path, source, segments))
        seq += 1

    end = offsets[-1] + file_bytes(lines[-1]) if lines else start_offset
    written = ManifestRange(
        fingerprint,
        f"/var/log/{source}/{fingerprint}.log",
        source,
        start_offset,
        end,
        sum(physical_lines(line) for line in lines),
    )
    updated = Manifest.of(
        pipeline=manifest.pipeline,
        checkpoint_id=manifest.checkpoint_id,
        host=manifest.host,
        sealed_at=manifest.sealed_at,
        sources={**manifest.sources, source: SourceSpec(format, time_field)},
        parts=parts,
        ranges=(*manifest.ranges, written),
    )
    write_manifest(batch, updated)
    return batch
