"""The manifest of a sealed batch (its parts, ranges and sources), written as format 4 (5 when a
segment holds multiline events) and read as 5, 4 or 3, and its file."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

import msgspec

from pipeline_core.formats import ColumnType, declared_columns
from pipeline_core.staging_contract._fields import (
    ManifestError,
    read_count,
    read_crc32,
    read_field,
    read_list,
    read_object,
    read_text,
    read_time,
)
from pipeline_core.staging_contract._layout import MANIFEST_NAME
from pipeline_core.staging_contract._segment import Segment

MANIFEST_FORMAT_VERSION = 4
"""The format written when every line is an event: 4 gave every segment a ``kind`` (an
over-long line is a ``long_line`` segment of its prefix)."""
EVENTS_FORMAT_VERSION = 5
"""The format written when a segment lists multiline ``events`` (5 added them), so that a
landing that cannot join lines into events refuses the batch rather than land it line by
line."""
JOINED_EVENTS_FORMAT_VERSION = 6
"""The format written when an event is several runs of lines (a container's stream, with the
other stream's lines between): 6 added a segment's events' ``joins``."""
READABLE_FORMAT_VERSIONS = frozenset(
    {3, MANIFEST_FORMAT_VERSION, EVENTS_FORMAT_VERSION, JOINED_EVENTS_FORMAT_VERSION}
)
"""The formats read. A format 3 manifest (sealed before 4) has ``lines`` segments only, without
``kind``; any other format is refused."""
_SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class ManifestPart:
    """A manifest's ``parts`` entry: the part file ``name`` of the batch, holding ``rows`` lines
    of ``source`` in ``bytes`` bytes whose CRC-32 is ``crc32`` (8 hex digits), indexed by
    ``segments`` that follow each other from offset 0."""

    name: str
    source: str
    rows: int
    bytes: int
    crc32: str
    segments: tuple[Segment, ...] = ()

    def lines_by_file(self) -> dict[str, int]:
        """The part's lines per source file (``file_fingerprint``)."""
        lines: dict[str, int] = {}
        for segment in self.segments:
            lines[segment.file_fingerprint] = lines.get(segment.file_fingerprint, 0) + segment.lines
        return lines

    def to_json(self, *, encoded: bool = False) -> dict[str, Any]:
        """JSON-ready; ``encoded``: the events' columns as :class:`msgspec.Raw` JSON
        (:meth:`EventRuns.to_json`), for ``msgspec`` to write."""
        return {
            "name": self.name,
            "source": self.source,
            "rows": self.rows,
            "bytes": self.bytes,
            "crc32": self.crc32,
            "segments": [segment.to_json(encoded=encoded) for segment in self.segments],
        }

    @classmethod
    def from_json(cls, entry: object, version: int) -> ManifestPart:
        """A ``parts`` entry of manifest format ``version``; its segments follow each other from
        offset 0 and add up to its ``bytes`` and ``rows``.

        Raises:
            ManifestError: it breaks the contract (the message names the part and the segment).
        """
        fields = read_object(entry, "part")
        name = read_text(fields, "name", "part")
        if PurePath(name).name != name or name in (".", ".."):
            raise ManifestError(f"part name {name!r} is not a file name")
        where = f"part {name}"
        source, rows = read_text(fields, "source", where), read_count(fields, "rows", where)
        size, crc32 = read_count(fields, "bytes", where), read_crc32(fields, "crc32", where)
        segments: list[Segment] = []
        position = 0
        for number, segment_entry in enumerate(read_list(fields, "segments", where)):
            segment = Segment.from_json(segment_entry, f"{where}, segment {number}", version)
            if segment.part_offset != position:
                raise ManifestError(
                    f"{where}, segment {number}: part_offset {segment.part_offset} is not where "
                    f"the last segment ended ({position})"
                )
            segments.append(segment)
            position += segment.length
        if position != size:
            raise ManifestError(f"{where}: its segments hold other than its {size} bytes")
        if sum(segment.lines for segment in segments) != rows:
            raise ManifestError(f"{where}: its segments hold other than its {rows} rows")
        return cls(name, source, rows, size, crc32, tuple(segments))


@dataclass(frozen=True)
class ManifestRange:
    """Bytes ``[start, end)`` of one source file that a batch holds, as ``lines`` whole lines.

    ``path`` is the file's name as the metastore stores it (``pipeline_core._file_names
    .stored_path``): valid UTF-8 text, the name itself when its bytes are UTF-8, else an escaped
    form starting ``escaped:`` (the undecodable bytes as ``\\xHH``). It is readable as it is,
    and any JSON reader (the landing job, a lake column) takes it; ``restored_path`` gives back
    the name the collector opens."""

    fingerprint: str
    path: str
    source: str
    start: int
    end: int
    lines: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, entry: object, where: str) -> ManifestRange:
        """A manifest's ``ranges`` entry.

        Raises:
            ManifestError: a field is missing or of another type (the message starts with
                ``where``).
        """
        fields = read_object(entry, where)
        return cls(
            read_text(fields, "fingerprint", where),
            read_text(fields, "path", where),
            read_text(fields, "source", where),
            read_count(fields, "start", where),
            read_count(fields, "end", where),
            read_count(fields, "lines", where),
        )


@dataclass(frozen=True)
class SourceSpec:
    """How a source's lines are parsed (a manifest ``sources`` entry)."""

    format: str
    time_field: str | None = None
    log_format: str | None = None
    """``python_logging``: the format string its records were written with; ``nginx``: the
    ``log_format`` its lines were written with."""
    timezone: str | None = None
    """``python_logging``, ``spark_log4j``, ``regex``: the time zone of the time lines state."""
    pattern: str | None = None
    """``regex``: the source's pattern."""
    columns: Mapping[str, str] | None = None
    """``regex``: its columns' declared types (``ColumnType`` values)."""
    time_column: str | None = None
    time_layout: str | None = None

    def declared_columns(self) -> tuple[tuple[str, ColumnType], ...]:
        """The columns the source declares after its format's own
        (``pipeline_core.formats.declared_columns``).

        Raises:
            ValueError: the declaration cannot be landed.
        """
        types = {name: ColumnType(kind) for name, kind in (self.columns or {}).items()}
        return declared_columns(self.format, types, self.pattern, self.time_column, self.log_format)

    def to_json(self) -> dict[str, Any]:
        """``format`` and ``time_field``, and the other keys only when they are set."""
        fields = asdict(self)
        return {k: v for k, v in fields.items() if v is not None or k in ("format", "time_field")}

    @classmethod
    def from_json(cls, entry: object, where: str) -> SourceSpec:
        """A manifest's ``sources`` entry (``time_field``, ``log_format``, ``timezone`` may be
        left out: null).

        Raises:
            ManifestError: ``format`` is missing or not a string, or another key is neither
                a string nor null (the message starts with ``where``).
        """
        fields = read_object(entry, where)
        optional: dict[str, str | None] = {}
        for key in (
            "time_field",
            "log_format",
            "timezone",
            "pattern",
            "time_column",
            "time_layout",
        ):
            value = fields.get(key)
            if value is not None and not isinstance(value, str):
                raise ManifestError(f"{where}: {key} {value!r} is not a string")
            optional[key] = value
        columns = fields.get("columns")
        if columns is not None and not (
            isinstance(columns, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in columns.items())
        ):
            raise ManifestError(f"{where}: columns {columns!r} is not an object of type names")
        return cls(read_text(fields, "format", where), columns=columns, **optional)


@dataclass(frozen=True)
class Manifest:
    """A sealed batch's ``_manifest.json``: one host's share of a checkpoint.

    ``parts`` hold ``line_count`` lines of ``sources``; ``ranges`` are the bytes of source
    files they hold (``line_count`` and ``byte_count`` add them up); ``checksum`` is the CRC-32
    of the parts' ``crc32`` values, joined. ``sealed_at`` has a UTC offset.
    """

    pipeline: str
    checkpoint_id: int
    host: str
    sealed_at: datetime
    line_count: int
    byte_count: int
    checksum: str
    sources: Mapping[str, SourceSpec]
    parts: tuple[ManifestPart, ...]
    ranges: tuple[ManifestRange, ...]

    @classmethod
    def of(
        cls,
        *,
        pipeline: str,
        checkpoint_id: int,
        host: str,
        sealed_at: datetime,
        sources: Mapping[str, SourceSpec],
        parts: Sequence[ManifestPart],
        ranges: Sequence[ManifestRange],
    ) -> Manifest:
        """The manifest of a batch of ``parts`` holding ``ranges``, its counts and checksum
        summed up from them."""
        checksum = zlib.crc32("".join(part.crc32 for part in parts).encode())
        return cls(
            pipeline,
            checkpoint_id,
            host,
            sealed_at,
            sum(r.lines for r in ranges),
            sum(r.end - r.start for r in ranges),
            f"{checksum:08x}",
            dict(sources),
            tuple(parts),
            tuple(ranges),
        )

    @property
    def event_count(self) -> int:
        """The events the batch holds: its lines, less those that continue a multiline event."""
        return sum(segment.event_count for part in self.parts for segment in part.segments)

    def to_json(self, *, encoded: bool = False) -> dict[str, Any]:
        """The manifest as format ``MANIFEST_FORMAT_VERSION`` writes it, ``EVENTS_FORMAT_VERSION``
        when a segment lists events, ``JOINED_EVENTS_FORMAT_VERSION`` when an event is several
        runs of lines. ``encoded``: the events' columns as :class:`msgspec.Raw` JSON, for
        :func:`write_manifest`."""
        segments = [segment for part in self.parts for segment in part.segments]
        version = MANIFEST_FORMAT_VERSION
        if any(segment.events.has_joins for segment in segments):
            version = JOINED_EVENTS_FORMAT_VERSION
        elif any(segment.events for segment in segments):
            version = EVENTS_FORMAT_VERSION
        return {
            "format_version": version,
            "pipeline": self.pipeline,
            "checkpoint_id": self.checkpoint_id,
            "host": self.host,
            "sealed_at": self.sealed_at.isoformat(),
            "line_count": self.line_count,
            "byte_count": self.byte_count,
            "checksum": self.checksum,
            "sources": {name: spec.to_json() for name, spec in self.sources.items()},
            "parts": [part.to_json(encoded=encoded) for part in self.parts],
            "ranges": [r.to_json() for r in self.ranges],
        }

    @classmethod
    def from_json(cls, document: object) -> Manifest:
        """A manifest of a format in ``READABLE_FORMAT_VERSIONS``: source names that can name a
        lake table, parts of declared sources holding ``line_count`` lines.

        Raises:
            ManifestError: it breaks the contract (the message names the field, and the part and
                segment where it is one of theirs).
        """
        fields = read_object(document, "")
        version = read_field(fields, "format_version", "")
        if type(version) is not int or version not in READABLE_FORMAT_VERSIONS:
            raise ManifestError(f"unsupported format_version {version!r}")
        sources: dict[str, SourceSpec] = {}
        for name, entry in read_object(read_field(fields, "sources", ""), "sources").items():
            if not _SOURCE_NAME.fullmatch(name):
                raise ManifestError(f"source name {name!r} cannot name a lake table")
            sources[name] = SourceSpec.from_json(entry, f"source {name}")
        sealed_at = read_time(fields, "sealed_at", "")
        parts = tuple(
            ManifestPart.from_json(entry, version) for entry in read_list(fields, "parts", "")
        )
        for part in parts:
            if part.source not in sources:
                raise ManifestError(
                    f"part {part.name} belongs to undeclared source {part.source!r}"
                )
        line_count = read_count(fields, "line_count", "")
        if sum(part.rows for part in parts) != line_count:
            raise ManifestError(f"line_count {line_count} != the sum of the parts' rows")
        checksum = read_crc32(fields, "checksum", "")
        return cls(
            read_text(fields, "pipeline", ""),
            read_count(fields, "checkpoint_id", ""),
            read_text(fields, "host", ""),
            sealed_at,
            line_count,
            read_count(fields, "byte_count", ""),
            checksum,
            sources,
            parts,
            tuple(
                ManifestRange.from_json(entry, f"range {number}")
                for number, entry in enumerate(read_list(fields, "ranges", ""))
            ),
        )


def read_manifest(batch: Path) -> Manifest:
    """The manifest of the sealed batch in the folder ``batch``.

    Raises:
        ManifestError: the batch is not sealed (no manifest), or its manifest is not JSON or
            breaks the contract (the message starts with the manifest's path).
    """
    path = batch / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(f"batch is not sealed (no {MANIFEST_NAME}): {batch}")
    try:
        return Manifest.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ManifestError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc


def write_manifest(folder: Path, manifest: Manifest) -> Path:
    """Write ``manifest`` as ``folder/_manifest.json`` (not fsynced) and return its path: one
    line of JSON in UTF-8, keys sorted. msgspec writes it: a batch of tracebacks lists
    hundreds of thousands of event spans, which ``json.dumps`` took 15 times as long over, in
    the seal (the same bytes as ``json.dumps(..., ensure_ascii=False)``); their columns are
    written from their arrays (:meth:`EventRuns.to_json` ``encoded``)."""
    path = folder / MANIFEST_NAME
    path.write_bytes(msgspec.json.encode(manifest.to_json(encoded=True), order="sorted"))
    return path
