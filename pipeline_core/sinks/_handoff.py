"""The handoff sink: lines to Parquet part files, sealed into a checkpoint's staging folder."""

from __future__ import annotations

import json
import logging
import os
import shutil
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline_core.config import SourceConfig
from pipeline_core.errors import SealError
from pipeline_core.sinks._part_table import HANDOFF_SCHEMA, chunks_table
from pipeline_core.source import Chunk

log = logging.getLogger(__name__)

MANIFEST_NAME = "_manifest.json"
MANIFEST_FORMAT_VERSION = 2


@dataclass(frozen=True)
class ManifestRange:
    """Bytes ``[start, end)`` of one file that a batch holds, as whole lines."""

    fingerprint: str
    path: str
    source: str
    start: int
    end: int
    lines: int


@dataclass(frozen=True)
class Barrier:
    """Checkpoint ``checkpoint_id``'s barrier: everything before it belongs to that batch."""

    checkpoint_id: int
    sealed_at: datetime
    ranges: tuple[ManifestRange, ...]


@dataclass(frozen=True)
class PartFile:
    name: str
    source: str
    rows: int
    bytes: int
    crc32: str


@dataclass(frozen=True)
class SealedBatch:
    """A batch written, fsynced and renamed into ``<staging>/<pipeline>/<N>/<host>/``."""

    checkpoint_id: int
    staging_path: Path
    parts: tuple[PartFile, ...]
    line_count: int
    byte_count: int
    checksum: str
    manifest: dict[str, Any] = field(repr=False)


def checkpoint_dir(staging_root: Path, pipeline: str, checkpoint_id: int) -> Path:
    """Where a checkpoint's batches (one folder per host) are sealed."""
    return staging_root / pipeline / f"{checkpoint_id:08d}"


class _OpenPart:
    def __init__(self, path: Path, row_group_bytes: int) -> None:
        self.path = path
        self.writer = pq.ParquetWriter(
            path,
            HANDOFF_SCHEMA,
            compression="snappy",
            use_dictionary=["file_fingerprint"],
            write_statistics=["file_fingerprint", "start_offset", "line_count"],
        )
        self.rows = 0
        self.line_bytes = 0
        self.row_group_bytes = row_group_bytes


class HandoffWriter:
    """Writes chunks of lines into part files under ``_inflight`` and seals them at a barrier.

    Part files are Parquet (schema in :data:`HANDOFF_SCHEMA`: a row per chunk, as read), one
    series per source, with row groups of about ``row_group_bytes`` and files of about
    ``max_part_bytes`` of line data. A part's ``rows`` in the manifest counts its lines.
    Sealing flushes and fsyncs every part, writes ``_manifest.json`` last, renames the folder to
    the checkpoint's and fsyncs the parent: a sealed folder is complete or absent.

    Threading model: used by one thread (the sink group's event processor).
    """

    def __init__(
        self,
        staging_root: Path,
        pipeline: str,
        host: str,
        sources: Iterable[SourceConfig],
        *,
        max_part_bytes: int,
        row_group_bytes: int,
    ) -> None:
        self._root = staging_root
        self._pipeline = pipeline
        self._host = host
        self._sources = {s.name: s for s in sources}
        self._max_part_bytes = max_part_bytes
        self._row_group_bytes = row_group_bytes
        self._inflight = staging_root / pipeline / "_inflight" / host
        self._buffers: dict[str, list[Chunk]] = {}
        self._buffered: dict[str, int] = {}
        self._open: dict[str, _OpenPart] = {}
        self._closed: list[PartFile] = []
        self._sequence: dict[str, int] = {}

    def reset(self) -> None:
        """Forget unsealed output (left by a crash: its bytes will be read again)."""
        self._buffers.clear()
        self._buffered.clear()
        for part in self._open.values():
            part.writer.close()
        self._open.clear()
        self._closed.clear()
        self._sequence.clear()
        shutil.rmtree(self._inflight, ignore_errors=True)

    def append(self, chunk: Chunk) -> None:
        self._buffers.setdefault(chunk.source, []).append(chunk)
        size = self._buffered.get(chunk.source, 0) + len(chunk.data)
        self._buffered[chunk.source] = size
        if size >= self._row_group_bytes:
            self._flush(chunk.source)

    def seal(self, barrier: Barrier) -> SealedBatch:
        """Seal everything appended since the last barrier as checkpoint ``barrier``'s batch.

        Raises:
            SealError: a part or the manifest could not be written, or rows do not add up.
        """
        try:
            for source in list(self._buffers):
                self._flush(source)
            for source in list(self._open):
                self._close_part(source)
            return self._publish(barrier)
        except (OSError, ValueError) as exc:
            self.reset()  # nothing half-written may leak into the next batch
            raise SealError(f"cannot seal checkpoint {barrier.checkpoint_id}: {exc}") from exc

    # -- internals ---------------------------------------------------------------------------

    def _flush(self, source: str) -> None:
        chunks = self._buffers.pop(source, [])
        self._buffered.pop(source, None)
        if not chunks:
            return
        table = chunks_table(chunks)
        part = self._open.get(source)
        if part is None:
            part = self._open[source] = self._new_part(source)
        part.writer.write_table(table, row_group_size=max(1, table.num_rows))
        part.rows += sum(c.lines for c in chunks)
        part.line_bytes += sum(len(c.data) for c in chunks)
        if part.line_bytes >= self._max_part_bytes:
            self._close_part(source)

    def _new_part(self, source: str) -> _OpenPart:
        self._inflight.mkdir(parents=True, exist_ok=True)
        number = self._sequence.get(source, 0)
        self._sequence[source] = number + 1
        return _OpenPart(
            self._inflight / f"part-{source}-{number:05d}.parquet", self._row_group_bytes
        )

    def _close_part(self, source: str) -> None:
        part = self._open.pop(source)
        part.writer.close()
        crc, size = _fsync_and_crc(part.path)
        self._closed.append(PartFile(part.path.name, source, part.rows, size, f"{crc:08x}"))

    def _publish(self, barrier: Barrier) -> SealedBatch:
        parts = tuple(self._closed)
        self._closed = []
        self._sequence.clear()
        rows = sum(p.rows for p in parts)
        lines = sum(r.lines for r in barrier.ranges)
        if rows != lines:
            raise ValueError(f"parts hold {rows} lines but the barrier's ranges hold {lines}")
        checksum = f"{zlib.crc32(''.join(p.crc32 for p in parts).encode()):08x}"
        manifest = {
            "format_version": MANIFEST_FORMAT_VERSION,
            "pipeline": self._pipeline,
            "checkpoint_id": barrier.checkpoint_id,
            "host": self._host,
            "sealed_at": barrier.sealed_at.isoformat(),
            "line_count": lines,
            "byte_count": sum(r.end - r.start for r in barrier.ranges),
            "checksum": checksum,
            "sources": {
                name: {"format": s.format.value, "time_field": s.time_field}
                for name, s in self._sources.items()
            },
            "parts": [p.__dict__ for p in parts],
            "ranges": [r.__dict__ for r in barrier.ranges],
        }
        self._inflight.mkdir(parents=True, exist_ok=True)
        manifest_path = self._inflight / MANIFEST_NAME
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        _fsync_and_crc(manifest_path)
        target = checkpoint_dir(self._root, self._pipeline, barrier.checkpoint_id) / self._host
        if target.exists():
            log.warning("replacing %s, left unrecorded by an earlier seal", target)
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self._inflight, target)
        _fsync_dir(target.parent)
        _fsync_dir(self._inflight.parent)
        return SealedBatch(
            checkpoint_id=barrier.checkpoint_id,
            staging_path=target,
            parts=parts,
            line_count=lines,
            byte_count=int(manifest["byte_count"]),  # type: ignore[call-overload]
            checksum=checksum,
            manifest=manifest,
        )


def _fsync_and_crc(path: Path) -> tuple[int, int]:
    crc = 0
    size = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
        os.fsync(handle.fileno())
    return crc, size


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
