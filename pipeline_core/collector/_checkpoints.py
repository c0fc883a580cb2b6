"""Checkpoint barriers on the collector side: inject, remember, record when sealed."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import tenacity

from pipeline_core._file_names import stored_path
from pipeline_core.collector._sink_group import BarrierPassed
from pipeline_core.collector._spool import SpooledBatch
from pipeline_core.collector._uploads import UploadWorker
from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import (
    AckerTreeRecord,
    BatchRecord,
    ByteRange,
    Metastore,
    utcnow,
)
from pipeline_core.sinks import Barrier, SealedBatch
from pipeline_core.source import FileRecord, FileWatcher
from pipeline_core.staging_contract import ManifestRange

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SealedCheckpoint:
    """A checkpoint this collector sealed: the batch id and what it holds."""

    checkpoint_id: int
    batch_id: int
    lines: int
    bytes: int
    staging_path: str


@dataclass
class _PendingSeal:
    barrier: Barrier
    files: tuple[FileRecord, ...]
    forgotten: tuple[str, ...]
    """Fingerprints of the files the watcher forgot at the barrier: their rows go with the
    seal."""
    groups_passed: set[str] = field(default_factory=set)
    sealed: SealedBatch | None = None
    uploading: bool = False


class CheckpointCoordinator:
    """Turns checkpoint requests into barriers and sealed batches into metastore records.

    A barrier for checkpoint N goes into the stage queues behind the last chunk read. It carries
    the byte ranges read since the previous barrier; the files' offsets at that moment are kept
    here until every sink group has passed the barrier (the handoff group sealing the batch),
    then batch, ranges, offsets and the checkpoint's new state are recorded in one metastore
    transaction.

    With staging in an object store (``uploads`` given) the batch the handoff group sealed is
    in the local spool: it is handed to the upload thread, and recorded only once its upload
    is complete (:meth:`uploaded`); the spooled copy is released after the record. Until then
    the checkpoint stays in flight, so a pipeline that stops waits for its uploads.

    Threading model: owned by the collector's mailbox thread.
    """

    def __init__(
        self,
        metastore: Metastore,
        pipeline: str,
        host: str,
        groups: Iterable[str],
        uploads: UploadWorker | None = None,
    ) -> None:
        self._metastore = metastore
        self._uploads = uploads
        self._groups = frozenset(groups)
        self._pipeline = pipeline
        self._host = host
        self._pending: dict[int, _PendingSeal] = {}
        self._injected: set[int] = set()
        self.sealed: list[SealedCheckpoint] = []

    @property
    def in_flight(self) -> int:
        """Barriers injected whose batches are not recorded yet."""
        return len(self._pending)

    def knows(self, checkpoint_id: int) -> bool:
        return checkpoint_id in self._injected

    def barrier(self, checkpoint_id: int, watcher: FileWatcher) -> Barrier:
        """Cut the barrier for ``checkpoint_id`` at the files' current read offsets."""
        ranges = []
        for tracked in watcher.files:
            cut = tracked.cut_barrier()
            if cut is not None:
                start, end, lines = cut
                ranges.append(
                    ManifestRange(
                        fingerprint=tracked.fingerprint,
                        path=stored_path(tracked.path),  # text any manifest reader takes
                        source=tracked.source,
                        start=start,
                        end=end,
                        lines=lines,
                    )
                )
        barrier = Barrier(checkpoint_id, utcnow(), tuple(ranges))
        # Only the files that moved since the last barrier: with ten thousand files followed,
        # a checkpoint writes the rows of the few being written, not ten thousand.
        moved = (t.record_if_moved(t.barrier_offset) for t in watcher.files)
        files = tuple(record for record in moved if record is not None)
        self._pending[checkpoint_id] = _PendingSeal(barrier, files, tuple(watcher.forget_done()))
        self._injected.add(checkpoint_id)
        return barrier

    def passed(
        self,
        passed: BarrierPassed,
        watcher: FileWatcher,
        acker_trees: Callable[[], list[AckerTreeRecord]] | None = None,
    ) -> SealedCheckpoint | None:
        """A sink group passed a barrier; once every group has, record the sealed batch (with
        the acker's in-flight trees, when given, in the same transaction)."""
        pending = self._pending[passed.checkpoint_id]
        pending.groups_passed.add(passed.group)
        if passed.sealed is not None:
            pending.sealed = passed.sealed
        if pending.groups_passed < self._groups:
            return None
        if pending.sealed is None:
            raise AssertionError(f"no sink group sealed checkpoint {passed.checkpoint_id}")
        if self._uploads is not None:
            if not pending.uploading:
                pending.uploading = True
                self._uploads.submit(
                    SpooledBatch(passed.checkpoint_id, pending.sealed.staging_path, pending.files)
                )
            return None
        return self._record(
            pending.sealed,
            str(pending.sealed.staging_path),
            watcher,
            acker_trees() if acker_trees else None,
        )

    def uploaded(
        self,
        checkpoint_id: int,
        url: str,
        watcher: FileWatcher,
        acker_trees: Callable[[], list[AckerTreeRecord]] | None = None,
    ) -> SealedCheckpoint:
        """The batch of ``checkpoint_id`` is stored at ``url``: record it, then release its
        spooled copy."""
        pending = self._pending[checkpoint_id]
        assert pending.sealed is not None and self._uploads is not None
        spooled = SpooledBatch(checkpoint_id, pending.sealed.staging_path)
        result = self._record(pending.sealed, url, watcher, acker_trees() if acker_trees else None)
        self._uploads.release(spooled)
        return result

    def _record(
        self,
        sealed: SealedBatch,
        staging_path: str,
        watcher: FileWatcher,
        acker_trees: list[AckerTreeRecord] | None,
    ) -> SealedCheckpoint:
        """Record a sealed batch (one transaction); advance the files' sealed offsets."""
        pending = self._pending.pop(sealed.checkpoint_id)
        batch = BatchRecord(
            checkpoint_id=sealed.checkpoint_id,
            host=self._host,
            staging_path=staging_path,
            line_count=sealed.line_count,
            byte_count=sealed.byte_count,
            part_count=len(sealed.parts),
            checksum=sealed.checksum,
            event_count=sealed.event_count,
            ranges=tuple(
                ByteRange(r.fingerprint, r.start, r.end, r.lines) for r in pending.barrier.ranges
            ),
        )
        batch_id = _retrying_outages(
            lambda: self._metastore.seal(
                self._pipeline, batch, pending.files, self._host, acker_trees, pending.forgotten
            )
        )
        offsets = {f.fingerprint: f.sealed_offset for f in pending.files}
        for tracked in watcher.files:
            if tracked.fingerprint in offsets:
                tracked.mark_sealed(offsets[tracked.fingerprint])
        watcher.note_change()
        result = SealedCheckpoint(
            sealed.checkpoint_id,
            batch_id,
            sealed.line_count,
            sealed.byte_count,
            staging_path,
        )
        self.sealed.append(result)
        log.info(
            "sealed checkpoint %d: %d lines, %d bytes in %s",
            result.checkpoint_id,
            result.lines,
            result.bytes,
            result.staging_path,
        )
        return result


SEAL_RETRY_SECONDS = 120.0
"""How long a seal is retried while the metastore is unreachable before the collector stops."""


def _retrying_outages(seal: Callable[[], int]) -> int:
    """Run ``seal``, retrying it (jittered exponential waits up to 5 s, for at most
    ``SEAL_RETRY_SECONDS``) while the metastore cannot be reached; a seal is idempotent per
    (checkpoint, host), so a transaction that committed before its answer was lost is not
    recorded twice. Other errors (``CheckpointError``) are not retried."""
    for attempt in tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(MetastoreError),
        wait=tenacity.wait_random_exponential(multiplier=0.2, max=5.0),
        stop=tenacity.stop_after_delay(SEAL_RETRY_SECONDS),
        before_sleep=lambda state: log.warning(
            "sealing: the metastore is unreachable (%s); retrying",
            state.outcome.exception() if state.outcome else "?",
        ),
        reraise=True,
    ):
        with attempt:
            return seal()
    raise AssertionError("unreachable")
