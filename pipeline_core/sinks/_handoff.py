"""The handoff sink: lines to raw part files, sealed into a checkpoint's staging folder.

The folders, the part names and the manifest are the staging contract's
(``pipeline_core.staging_contract``); this module writes them, durably.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipeline_core._fault_points import FaultPoint, reached
from pipeline_core._file_modes import (
    PRIVATE,
    FileModes,
    make_private,
    make_private_dirs,
)
from pipeline_core.config import SourceConfig
from pipeline_core.errors import SealError, StagingFullError
from pipeline_core.sinks import _writeback
from pipeline_core.sinks._handoff_part import OpenPart
from pipeline_core.sinks._spool_budget import SpoolBudget
from pipeline_core.source import Chunk
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    Manifest,
    ManifestPart,
    ManifestRange,
    SourceSpec,
    batch_dir,
    inflight_dir,
    part_name,
    write_manifest,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Barrier:
    """Checkpoint ``checkpoint_id``'s barrier: everything before it belongs to that batch."""

    checkpoint_id: int
    sealed_at: datetime
    ranges: tuple[ManifestRange, ...]


@dataclass(frozen=True)
class SealedBatch:
    """A batch written, fsynced and renamed into ``<staging>/<pipeline>/<N>/<host>/``."""

    checkpoint_id: int
    staging_path: Path
    parts: tuple[ManifestPart, ...]
    line_count: int
    byte_count: int
    checksum: str
    event_count: int
    """The events the lines make (``Manifest.event_count``)."""


NO_ROOM = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a full filesystem (or quota): waited out, never a reason to give lines up."""


class HandoffWriter:
    """Writes chunks of lines into part files under ``_inflight`` and seals them at a barrier.

    A part file holds one source's chunks as raw bytes, one after the other, and is indexed by
    segments in the manifest (docs/architecture.md, "Part files"); a new part is started past
    ``max_part_bytes``. Bytes are written as they arrive and written back to disk in the
    background (:class:`IncrementalWriteback`), so a seal only waits for the last few MiB.
    Sealing fsyncs every part, writes ``_manifest.json`` last, renames the folder to the
    checkpoint's and fsyncs the parent: a sealed folder is complete or absent. Parts and
    manifests are created 0600 in folders created 0700 (``modes``: ``PRIVATE``; ``GROUP`` for
    ``handoff.staging_access: group``).

    With a ``budget`` (staging in an object store, sealed into a local spool), every byte
    written is added to it; unsealed bytes dropped by :meth:`reset` are freed, sealed ones
    stay until their upload frees them.

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
        budget: SpoolBudget | None = None,
        modes: FileModes = PRIVATE,
    ) -> None:
        self._root = staging_root
        self._modes = modes
        self._budget = budget
        self._unsealed_bytes = 0
        self._pipeline = pipeline
        self._host = host
        self._sources = {s.name: s for s in sources}
        self._max_part_bytes = max_part_bytes
        self._inflight = inflight_dir(staging_root, pipeline, host)
        self._open: dict[str, OpenPart] = {}
        self._closed: list[ManifestPart] = []
        self._sequence: dict[str, int] = {}

    def reset(self) -> None:
        """Forget unsealed output (left by a crash: its bytes will be read again)."""
        for part in self._open.values():
            part.abandon()
        self._open.clear()
        self._closed.clear()
        self._sequence.clear()
        shutil.rmtree(self._inflight, ignore_errors=True)
        if self._budget is not None:
            self._budget.free(self._unsealed_bytes)
        self._unsealed_bytes = 0

    def append(self, chunks: Sequence[Chunk]) -> None:
        """Stage ``chunks`` (in order; any sources): each source's run goes to its part, and
        a part that reaches ``max_part_bytes`` is closed at the end of the chunk that filled
        it (however many chunks one call brings, a part passes the bound by one chunk at most).

        All or nothing: when a write fails (the disk is full), what this call wrote is taken
        back (parts cut back to their size before it, parts it started removed) and the
        ``OSError`` raised, so the same chunks can be appended again later. Parts are closed
        only once every write succeeded; a part that cannot be closed raises ``SealError``:
        its lines cannot be taken back.

        Raises:
            OSError: a write failed; nothing of ``chunks`` is staged.
            SealError: a full part could not be closed."""
        already_open = dict(self._open)
        marks = {source: part.mark() for source, part in already_open.items()}
        sequence = dict(self._sequence)
        filled: list[OpenPart] = []  # reached the bound in this call: closed once all is written
        try:
            for chunk in chunks:
                part = self._open.get(chunk.source)
                if part is None:
                    part = self._open[chunk.source] = self._new_part(chunk.source)
                part.write((chunk,))
                if part.size >= self._max_part_bytes:
                    filled.append(self._open.pop(chunk.source))
        except OSError:
            for part in [*filled, *self._open.values()]:
                if already_open.get(part.source) is part:
                    part.rewind(marks[part.source])
                else:
                    part.discard()
            self._open = already_open
            self._sequence = sequence
            raise
        added = sum(p.size for p in [*filled, *self._open.values()]) - sum(
            m.size for m in marks.values()
        )
        if self._budget is not None:
            self._budget.add(added)
        self._unsealed_bytes += added
        for part in filled:
            try:
                self._closed.append(part.close())
            except OSError as exc:
                # The lines are written and cannot be taken back from a closed part: not
                # to be delivered again, the batch is given up (the next run reads them).
                raise SealError(f"cannot close part {part.path.name}: {exc}") from exc

    def seal(self, barrier: Barrier) -> SealedBatch:
        """Seal everything appended since the last barrier as checkpoint ``barrier``'s batch.

        Raises:
            StagingFullError: the filesystem has no room for the manifest or the batch's
                folder; the closed parts are kept, and ``seal`` may be called again.
            SealError: a part or the manifest could not be written, or rows do not add up.
        """
        try:
            for source in list(self._open):
                self._closed.append(self._open.pop(source).close())
            return self._publish(barrier)
        except (OSError, ValueError) as exc:
            self.reset()  # nothing half-written may leak into the next batch
            raise SealError(f"cannot seal checkpoint {barrier.checkpoint_id}: {exc}") from exc

    # -- internals ---------------------------------------------------------------------------

    def _new_part(self, source: str) -> OpenPart:
        make_private_dirs(self._inflight, self._modes)
        number = self._sequence.get(source, 0)
        self._sequence[source] = number + 1
        return OpenPart(self._inflight / part_name(source, number), source, self._modes)

    def _publish(self, barrier: Barrier) -> SealedBatch:
        """Write the manifest and move the batch in place. A full filesystem before the move
        raises :class:`StagingFullError` with the parts still listed: the seal can be tried
        again."""
        reached(FaultPoint.PARTS_WRITTEN)
        parts = tuple(self._closed)
        rows = sum(p.rows for p in parts)
        lines = sum(r.lines for r in barrier.ranges)
        if rows != lines:
            raise ValueError(f"parts hold {rows} lines but the barrier's ranges hold {lines}")
        manifest = Manifest.of(
            pipeline=self._pipeline,
            checkpoint_id=barrier.checkpoint_id,
            host=self._host,
            sealed_at=barrier.sealed_at,
            sources={
                name: SourceSpec(
                    s.format.value,
                    s.time_field,
                    s.log_format,
                    s.timezone,
                    s.pattern,
                    {column: kind.value for column, kind in s.columns.items()} or None,
                    s.time_column,
                    s.time_layout,
                )
                for name, s in self._sources.items()
            },
            parts=parts,
            ranges=barrier.ranges,
        )
        target = batch_dir(self._root, self._pipeline, barrier.checkpoint_id, self._host)
        try:
            make_private_dirs(self._inflight, self._modes)
            manifest_path = write_manifest(self._inflight, manifest)
            make_private(manifest_path, self._modes)  # in a folder of these modes meanwhile
            _writeback.fsync_path(manifest_path)
            reached(FaultPoint.MANIFEST_WRITTEN)
            if target.exists():
                log.warning("replacing %s, left unrecorded by an earlier seal", target)
                shutil.rmtree(target)
            make_private_dirs(target.parent, self._modes)
            os.replace(self._inflight, target)
        except OSError as exc:
            if exc.errno not in NO_ROOM:
                raise
            (self._inflight / MANIFEST_NAME).unlink(missing_ok=True)
            raise StagingFullError(
                f"cannot seal checkpoint {barrier.checkpoint_id}: {exc.strerror} (the staging "
                "folder's filesystem is full); its parts are kept and the seal is tried again "
                "once there is room"
            ) from exc
        self._closed = []
        self._sequence.clear()
        self._unsealed_bytes = 0  # sealed: the upload frees them, when there is one
        _writeback.fsync_path(target.parent)
        _writeback.fsync_path(self._inflight.parent)
        reached(FaultPoint.BATCH_IN_PLACE)
        return SealedBatch(
            checkpoint_id=barrier.checkpoint_id,
            staging_path=target,
            parts=parts,
            line_count=manifest.line_count,
            byte_count=manifest.byte_count,
            checksum=manifest.checksum,
            event_count=manifest.event_count,
        )
