"""A pipeline's files and the bytes behind each one that no sealed batch covers yet.

A tracked file is measured where it was at its last seal, or where the sources' globs find the
same device and inode now; its stored signature (CRC-32 of the first bytes) must still match,
so a reused inode or a truncated file is never measured as the file that was sealed. Files on
another collector host are not measured here. Files the globs match that the metastore does not
know yet are listed as ``untracked``. Paths are shown escaped (``_file_names.shown_path``: a
name of any bytes, control characters and all, is one printable line).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline_core._file_names import shown_path
from pipeline_core.config import PipelineConfig, SourceConfig, StartPosition
from pipeline_core.source import FileRecord, FileState, find_files, open_regular
from pipeline_core.state._models import FileSnapshot, FileStatus

_Inode = tuple[int, int]


def file_snapshots(
    config: PipelineConfig, by_host: Mapping[str, Sequence[FileRecord]]
) -> list[FileSnapshot]:
    """The tracked files (the metastore's files of every host), then the untracked ones."""
    found = _found_files(config.sources)
    return _tracked(config, by_host, found) + _untracked(config, by_host, found)


def _tracked(
    config: PipelineConfig,
    by_host: Mapping[str, Sequence[FileRecord]],
    found: Mapping[_Inode, tuple[str, str]],
) -> list[FileSnapshot]:
    local = config.collector.host
    snapshots = []
    for host, records in by_host.items():
        for row in records:
            snapshot = FileSnapshot(
                source=row.source,
                host=host,
                path=shown_path(row.path),
                fingerprint=row.fingerprint,
                state=FileStatus(row.state.value),
                sealed_offset=row.sealed_offset,
            )
            if host != local:
                update: dict[str, Any] = {"note": f"on host {host}: not measured here"}
            elif row.state is FileState.DONE:
                update = {"unread_bytes": 0, "note": "read to its end"}
            elif row.state is FileState.COPIED:
                update = _measure(row, found.get((row.dev, row.ino)))
                update.update(
                    note="a copytruncate copy: read (to its end or past it) as its original"
                )
                update["unread_bytes"] = max(update.get("size", 0) - row.sealed_offset, 0)
            else:
                update = _measure(row, found.get((row.dev, row.ino)))
            snapshots.append(snapshot.model_copy(update=update))
    return snapshots


def _measure(row: FileRecord, found_at: tuple[str, str] | None) -> dict[str, Any]:
    """Size and unread bytes of a tracked file, where it was sealed or where it is now."""
    candidates = [row.path] + ([found_at[1]] if found_at and found_at[1] != row.path else [])
    for path in candidates:
        try:
            info = os.stat(path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) != (row.dev, row.ino):
            continue
        if not _signature_matches(path, row):
            return {"note": f"{shown_path(path)} now holds other content (truncated or replaced)"}
        update: dict[str, Any] = {
            "current_path": shown_path(path),
            "size": info.st_size,
            "unread_bytes": max(info.st_size - row.sealed_offset, 0),
        }
        if info.st_size < row.sealed_offset:
            update["note"] = "smaller than its sealed offset (truncated)"
        return update
    return {"note": "not found: moved away from the source's paths or deleted"}


def _untracked(
    config: PipelineConfig,
    by_host: Mapping[str, Sequence[FileRecord]],
    found: Mapping[_Inode, tuple[str, str]],
) -> list[FileSnapshot]:
    """Files the sources' paths match that the metastore does not know yet (never sealed)."""
    local = config.collector.host
    known: dict[_Inode, list[FileRecord]] = {}
    for row in by_host.get(local, []):
        known.setdefault((row.dev, row.ino), []).append(row)
    snapshots = []
    for inode, (source_name, path) in sorted(found.items(), key=lambda i: i[1][1]):
        if any(_same_file(row, path) for row in known.get(inode, [])):
            continue
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        from_start = config.source(source_name).start_at is StartPosition.BEGINNING
        snapshots.append(
            FileSnapshot(
                source=source_name,
                host=local,
                path=shown_path(path),
                fingerprint=None,
                state=FileStatus.UNTRACKED,
                sealed_offset=0,
                current_path=shown_path(path),
                size=size,
                unread_bytes=size if from_start else None,
                note=None if from_start else "start_at: end (read from where it ends when seen)",
            )
        )
    return snapshots


def _same_file(row: FileRecord, path: str) -> bool:
    return row.state is not FileState.DONE or _signature_matches(path, row)


def _found_files(sources: Iterable[SourceConfig]) -> dict[_Inode, tuple[str, str]]:
    """``(dev, ino) -> (source, path)`` of the regular files the sources' globs match now,
    found as the collector finds them."""
    found: dict[_Inode, tuple[str, str]] = {}
    for source in sources:
        for inode, (path, _size) in find_files(source).items():
            found.setdefault(inode, (source.name, path))
    return found


def _signature_matches(path: str, row: FileRecord) -> bool:
    """True when the file at ``path`` is still ``row``'s (device and inode) and starts with the
    bytes its stored signature was taken from. Opened as the collector opens files (never
    blocking on a FIFO swapped in, never reading another file)."""
    if row.sig_size == 0:
        return True
    try:
        fd = open_regular(path, (row.dev, row.ino), follow_symlinks=True)
    except OSError:
        return False
    if fd is None:
        return False
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(row.sig_size)
    return len(head) == row.sig_size and zlib.crc32(head) == row.sig_crc
