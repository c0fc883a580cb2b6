"""A sealed checkpoint as the landing job sees it: the part files of its batches, one per host.

``read_checkpoint`` reads ``<staging>/<pipeline>/<checkpoint:08d>/<host>/_manifest.json`` of
every batch with the staging contract (``pipeline_core.staging_contract``), which checks each
manifest on its own, and then checks what only the job can: that the manifest is its folder's
checkpoint's, that each source's format has a parser, that every part it lists is there and that
the batches agree on their sources. The checkpoint's folder is a path or an object store's URL
(``spark_jobs.part_files``); a part's ``path`` is then the part's URL.

A host folder without a manifest is an unsealed batch and fails the landing; a checkpoint
without any manifest, or whose manifests list no parts, is empty and lands zero rows.

What a checkpoint lands is counted in events (``Checkpoint.input_events``, ``staged_events``):
a row or reject per event, where a multiline event (a format 5 manifest's segment ``events``)
is one row of several lines. ``lines`` stays the manifests' physical lines
(``Checkpoint.input_lines``, ``staged_lines``).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline_core.errors import StorageError
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    Manifest,
    ManifestError,
    ManifestPart,
    SourceSpec,
    checkpoint_id_of,
)
from spark_jobs.formats import SourceFormat
from spark_jobs.part_files import (
    file_sizes,
    is_local,
    join,
    list_folders,
    local_path,
    parent_and_name,
    read_whole,
)

FileKey = tuple[int, str, str, str]
"""``(checkpoint_id, source, host, file_fingerprint)``: one source file's lines in one batch."""
FILE_KEY_COLUMNS = ("checkpoint_id", "source", "host", "file_fingerprint")


@dataclass(frozen=True)
class PartFile:
    """A part file of a sealed batch: where it is (an absolute path, seen alike by the driver
    and the executors, or its URL in an object store), its batch's checkpoint, ``host`` and
    ``sealed_at`` (UTC), and its manifest entry."""

    path: str
    checkpoint_id: int
    host: str
    sealed_at: datetime
    entry: ManifestPart


@dataclass(frozen=True)
class Checkpoint:
    """The sealed batches of one checkpoint, one per host."""

    checkpoint_id: int
    batches: int
    sources: Mapping[str, SourceSpec]
    parts: tuple[PartFile, ...]

    @property
    def input_lines(self) -> int:
        """The lines its parts hold (the manifests' ``rows``)."""
        return sum(part.entry.rows for part in self.parts)

    @property
    def input_events(self) -> int:
        """The events its parts hold: what lands as rows and rejects (its lines, less the
        lines that continue a multiline event)."""
        return sum(segment.event_count for part in self.parts for segment in part.entry.segments)


def read_checkpoint(
    checkpoint_dir: str | os.PathLike[str], hosts: Sequence[str] | None = None
) -> Checkpoint:
    """Read and validate the manifests of ``<staging>/<pipeline>/<checkpoint:08d>`` (a folder,
    or its URL in an object store).

    ``hosts``: the hosts whose batches the metastore recorded for the checkpoint; only their
    folders are read (a folder another host left by crashing between its rename and its
    metastore transaction is not part of the checkpoint: that host reads those lines again).
    ``None`` reads every batch folder.

    Raises:
        ManifestError: the directory is missing or misnamed, a batch has no manifest, a
            manifest is malformed or names a missing part, batches disagree on a source, a
            recorded host's batch folder is missing, or the store cannot be read (the store's
            error chained).
    """
    root = str(checkpoint_dir)
    if is_local(root):
        root = os.path.abspath(local_path(root))
    checkpoint_id = checkpoint_id_of(Path(parent_and_name(root)[1]))
    names = _listed(root)
    if names is None:
        raise ManifestError(f"checkpoint directory does not exist: {root}")
    if hosts is not None:
        missing = sorted(set(hosts) - set(names))
        if missing:
            raise ManifestError(f"recorded batches missing under {root}: {', '.join(missing)}")
        unrecorded = [name for name in names if name not in set(hosts)]
        if unrecorded:
            print(
                f"skipping batch folders the metastore did not record: {', '.join(unrecorded)}",
                file=sys.stderr,
            )
        names = [name for name in names if name in set(hosts)]
    sources: dict[str, SourceSpec] = {}
    parts: list[PartFile] = []
    for name in names:
        batch_dir = join(root, name)
        batch_sources, batch_parts = _read_batch(batch_dir, checkpoint_id)
        for source, spec in batch_sources.items():
            if sources.setdefault(source, spec) != spec:
                raise ManifestError(
                    f"source {source!r} is declared as {sources[source]} and as {spec} in "
                    f"{batch_dir}"
                )
        parts.extend(batch_parts)
    return Checkpoint(checkpoint_id, len(names), dict(sorted(sources.items())), tuple(parts))


def _listed(folder: str) -> list[str] | None:
    """The batch folders of a checkpoint's folder (``None``: there is none).

    Raises:
        ManifestError: it cannot be listed.
    """
    try:
        return list_folders(folder)
    except (OSError, StorageError) as exc:
        raise ManifestError(f"cannot list the checkpoint directory {folder}: {exc}") from exc


def _read_batch(
    batch_dir: str, checkpoint_id: int
) -> tuple[Mapping[str, SourceSpec], list[PartFile]]:
    """The sources and the part files of one host's batch of ``checkpoint_id``.

    Raises:
        ManifestError: the batch is unsealed, its manifest is malformed, is another
            checkpoint's, declares a format without a parser or names a missing part (the
            message starts with the manifest's path).
    """
    where = join(batch_dir, MANIFEST_NAME)
    try:
        sizes = file_sizes(batch_dir)
        document = read_whole(where) if MANIFEST_NAME in sizes else None
    except (OSError, StorageError) as exc:
        raise ManifestError(f"{where}: cannot be read: {exc}") from exc
    if document is None:
        raise ManifestError(f"batch is not sealed (no {MANIFEST_NAME}): {batch_dir}")
    try:
        manifest = Manifest.from_json(json.loads(document))
    except (ValueError, ManifestError) as exc:
        raise ManifestError(f"{where}: {exc}") from exc
    if manifest.checkpoint_id != checkpoint_id:
        raise ManifestError(
            f"{where}: checkpoint_id {manifest.checkpoint_id} != directory {checkpoint_id}"
        )
    formats = {f.value for f in SourceFormat}
    for name, spec in manifest.sources.items():
        if spec.format not in formats:
            known = ", ".join(sorted(formats))
            raise ManifestError(
                f"{where}: source {name}: format {spec.format!r} is not one of {known}"
            )
    sealed_at = manifest.sealed_at.astimezone(timezone.utc)
    parts: list[PartFile] = []
    for entry in manifest.parts:
        path = join(batch_dir, entry.name)
        if entry.name not in sizes:
            raise ManifestError(f"{where}: part listed in the manifest is missing: {path}")
        parts.append(PartFile(path, checkpoint_id, manifest.host, sealed_at, entry))
    return manifest.sources, parts


def staged_lines(parts: Iterable[PartFile]) -> Counter[FileKey]:
    """Input lines per ``(checkpoint_id, source, host, file_fingerprint)``: the manifests'
    segment counts."""
    lines: Counter[FileKey] = Counter()
    for part in parts:
        for fingerprint, rows in part.entry.lines_by_file().items():
            lines[(part.checkpoint_id, part.entry.source, part.host, fingerprint)] += rows
    return lines


def staged_events(parts: Iterable[PartFile]) -> Counter[FileKey]:
    """Input events per ``(checkpoint_id, source, host, file_fingerprint)``: what lands of each
    source file as rows and rejects, its segments' lines less those that continue a multiline
    event (``Segment.event_count``); the same as ``staged_lines`` where no segment lists
    events."""
    events: Counter[FileKey] = Counter()
    for part in parts:
        for segment in part.entry.segments:
            key = (part.checkpoint_id, part.entry.source, part.host, segment.file_fingerprint)
            events[key] += segment.event_count
    return events
