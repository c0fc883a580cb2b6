"""Sealed staging batches built with pyarrow, exactly as the handoff sink writes them.

Layout (docs/architecture.md, "Staging (handoff) layout")::

    <staging>/<pipeline>/<checkpoint:08d>/<host>/part-<source>-<seq:05d>.parquet
    <staging>/<pipeline>/<checkpoint:08d>/<host>/_manifest.json

``write_batch`` may be called several times for the same host (one call per source or per
file); each call adds parts and a range to the batch's manifest.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

PART_SCHEMA = pa.schema(
    [
        pa.field("file_fingerprint", pa.dictionary(pa.int32(), pa.string())),
        pa.field("start_offset", pa.int64()),
        pa.field("line_count", pa.int32()),
        pa.field("data", pa.binary()),
    ]
)
LINES_PER_CHUNK = 1000
"""Lines per chunk row in the parts written here (the collector's chunks are byte-sized)."""
DEFAULT_SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC)
MANIFEST_NAME = "_manifest.json"


def checkpoint_dir(staging_root: Path, pipeline: str, checkpoint_id: int) -> Path:
    """``<staging>/<pipeline>/<checkpoint:08d>``."""
    return Path(staging_root) / pipeline / f"{checkpoint_id:08d}"


def line_offsets(lines: Sequence[bytes], start_offset: int) -> list[int]:
    """The byte offset of each line when the lines follow each other, ``\\n``-terminated."""
    offsets: list[int] = []
    offset = start_offset
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    return offsets


def write_part(
    path: Path, fingerprint: str, offsets: Sequence[int], lines: Sequence[bytes]
) -> None:
    """One Parquet part file with the staging schema: the lines (consecutive in their file
    from ``offsets[0]``, each ``\n``-terminated) in chunk rows of ``LINES_PER_CHUNK`` lines."""
    starts, counts, datas = [], [], []
    for begin in range(0, len(lines), LINES_PER_CHUNK):
        group = lines[begin : begin + LINES_PER_CHUNK]
        starts.append(offsets[begin])
        counts.append(len(group))
        datas.append(b"".join(line + b"\n" for line in group))
    table = pa.table(
        {
            "file_fingerprint": pa.array(
                [fingerprint] * len(starts), pa.string()
            ).dictionary_encode(),
            "start_offset": pa.array(starts, pa.int64()),
            "line_count": pa.array(counts, pa.int32()),
            "data": pa.array(datas, pa.binary()),
        },
        schema=PART_SCHEMA,
    )
    pq.write_table(table, path)


def empty_manifest(
    pipeline: str, checkpoint_id: int, host: str, sealed_at: datetime = DEFAULT_SEALED_AT
) -> dict[str, Any]:
    return {
        "format_version": 2,
        "pipeline": pipeline,
        "checkpoint_id": checkpoint_id,
        "batch_id": checkpoint_id,
        "host": host,
        "sealed_at": sealed_at.isoformat(),
        "line_count": 0,
        "byte_count": 0,
        "sources": {},
        "parts": [],
        "ranges": [],
    }


def write_empty_batch(staging_root: Path, pipeline: str, checkpoint_id: int, host: str) -> Path:
    """A sealed batch with a manifest and no parts (the host read nothing)."""
    batch = checkpoint_dir(staging_root, pipeline, checkpoint_id) / host
    batch.mkdir(parents=True, exist_ok=True)
    manifest = empty_manifest(pipeline, checkpoint_id, host)
    (batch / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2))
    return batch


def write_batch(
    staging_root: Path,
    pipeline: str,
    checkpoint_id: int,
    host: str,
    source: str,
    format: str,
    lines: list[bytes],
    fingerprint: str,
    start_offset: int = 0,
    *,
    time_field: str | None = None,
    sealed_at: datetime = DEFAULT_SEALED_AT,
    rows_per_part: int | None = None,
) -> Path:
    """Write ``lines`` of one source file as parts of a sealed batch and update its manifest.

    The lines are taken to be consecutive in the source file from ``start_offset``. Returns the
    batch directory ``<staging>/<pipeline>/<checkpoint:08d>/<host>``.
    """
    batch = checkpoint_dir(staging_root, pipeline, checkpoint_id) / host
    batch.mkdir(parents=True, exist_ok=True)
    manifest_path = batch / MANIFEST_NAME
    if manifest_path.exists():
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
    else:
        manifest = empty_manifest(pipeline, checkpoint_id, host, sealed_at)
    manifest["sources"][source] = {"format": format, "time_field": time_field}

    offsets = line_offsets(lines, start_offset)
    seq = sum(1 for part in manifest["parts"] if part["source"] == source)
    step = rows_per_part or max(len(lines), 1)
    for begin in range(0, len(lines), step):
        name = f"part-{source}-{seq:05d}.parquet"
        path = batch / name
        write_part(path, fingerprint, offsets[begin : begin + step], lines[begin : begin + step])
        data = path.read_bytes()
        manifest["parts"].append(
            {
                "name": name,
                "source": source,
                "rows": len(lines[begin : begin + step]),
                "bytes": len(data),
                "crc32": f"{zlib.crc32(data):08x}",
            }
        )
        seq += 1

    end = offsets[-1] + len(lines[-1]) + 1 if lines else start_offset
    manifest["ranges"].append(
        {
            "file_fingerprint": fingerprint,
            "path": f"/var/log/{source}/{fingerprint}.log",
            "source": source,
            "start": start_offset,
            "end": end,
            "lines": len(lines),
        }
    )
    manifest["line_count"] += len(lines)
    manifest["byte_count"] += end - start_offset
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return batch
