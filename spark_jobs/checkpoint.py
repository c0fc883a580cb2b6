"""A sealed checkpoint as the landing job sees it: the part files of its batches, one per host.

``read_checkpoint`` reads ``<staging>/<pipeline>/<checkpoint:08d>/<host>/_manifest.json`` of
every batch with the staging contract (``pipeline_core.staging_contract``), which checks each
manifest on its own, and then checks what only the job can: that the manifest is its folder's
checkpoint's, that each source's format has a parser, that every part it lists is there and that
the batches agree on their sources.

A host folder without a manifest is an unsealed batch and fails the landing; a checkpoint
without any manifest, or whose manifests list no parts, is empty and lands zero rows.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    ManifestError,
    ManifestPart,
    SourceSpec,
    checkpoint_id_of,
    read_manifest,
)
from spark_jobs.formats import SourceFormat

FileKey = tuple[int, str, str, str]
"""``(checkpoint_id, source, host, file_fingerprint)``: one source file's lines in one batch."""
FILE_KEY_COLUMNS = ("checkpoint_id", "source", "host", "file_fingerprint")


@dataclass(frozen=True)
class PartFile:
    """A part file of a sealed batch: where it is (an absolute path, seen alike by the driver
    and the executors), its batch's checkpoint, ``host`` and ``sealed_at`` (UTC), and its
    manifest entry."""

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
        return sum(part.entry.rows for part in self.parts)


def read_checkpoint(
    checkpoint_dir: str | os.PathLike[str], hosts: Sequence[str] | None = None
) -> Checkpoint:
    """Read and validate the manifests of ``<staging>/<pipeline>/<checkpoint:08d>``.

    ``hosts``: the hosts whose batches the metastore recorded for the checkpoint; only their
    folders are read (a folder another host left by crashing between its rename and its
    metastore transaction is not part of the checkpoint: that host reads those lines again).
    ``None`` reads every batch folder.

    Raises:
        ManifestError: the directory is missing or misnamed, a batch has no manifest, a
            manifest is malformed or names a missing part, batches disagree on a source, or a
            recorded host's batch folder is missing.
    """
    root = Path(os.path.abspath(checkpoint_dir))
    if not root.is_dir():
        raise ManifestError(f"checkpoint directory does not exist: {root}")
    checkpoint_id = checkpoint_id_of(root)
    sources: dict[str, SourceSpec] = {}
    parts: list[PartFile] = []
    batch_dirs = sorted(entry for entry in root.iterdir() if entry.is_dir())
    if hosts is not None:
        missing = sorted(set(hosts) - {entry.name for entry in batch_dirs})
        if missing:
            raise ManifestError(f"recorded batches missing under {root}: {', '.join(missing)}")
        unrecorded = [entry.name for entry in batch_dirs if entry.name not in set(hosts)]
        if unrecorded:
            print(
                f"skipping batch folders the metastore did not record: {', '.join(unrecorded)}",
                file=sys.stderr,
            )
        batch_dirs = [entry for entry in batch_dirs if entry.name in set(hosts)]
    for batch_dir in batch_dirs:
        batch_sources, batch_parts = _read_batch(batch_dir, checkpoint_id)
        for name, spec in batch_sources.items():
            if sources.setdefault(name, spec) != spec:
                raise ManifestError(
                    f"source {name!r} is declared as {sources[name]} and as {spec} in {batch_dir}"
                )
        parts.extend(batch_parts)
    return Checkpoint(checkpoint_id, len(batch_dirs), dict(sorted(sources.items())), tuple(parts))


def _read_batch(
    batch_dir: Path, checkpoint_id: int
) -> tuple[Mapping[str, SourceSpec], list[PartFile]]:
    """The sources and the part files of one host's batch of ``checkpoint_id``.

    Raises:
        ManifestError: the batch is unsealed, its manifest is malformed, is another
            checkpoint's, declares a format without a parser or names a missing part (the
            message starts with the manifest's path).
    """
    manifest = read_manifest(batch_dir)
    where = batch_dir / MANIFEST_NAME
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
        path = batch_dir / entry.name
        if not path.is_file():
            raise ManifestError(f"{where}: part listed in the manifest is missing: {path}")
        parts.append(PartFile(str(path), checkpoint_id, manifest.host, sealed_at, entry))
    return manifest.sources, parts


def staged_lines(parts: Iterable[PartFile]) -> Counter[FileKey]:
    """Input lines per ``(checkpoint_id, source, host, file_fingerprint)``: the manifests'
    segment counts."""
    lines: Counter[FileKey] = Counter()
    for part in parts:
        for fingerprint, rows in part.entry.lines_by_file().items():
            lines[(part.checkpoint_id, part.entry.source, part.host, fingerprint)] += rows
    return lines
