"""Finishing, at a pipeline's start, the uploads a stopped or killed collector left in its spool."""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum

import tenacity

from pipeline_core.collector._spool import SpooledBatch, spooled_batches
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CheckpointError, CorruptBatchError, StorageError
from pipeline_core.metastore import BatchRecord, ByteRange, Metastore
from pipeline_core.sinks import ReadBack, upload_sealed_batch, verify_local_batch
from pipeline_core.staging_contract import Manifest
from pipeline_core.storage import StorageLocation

log = logging.getLogger(__name__)


class Recovery(Enum):
    """What became of a batch found in the spool at start."""

    RECORDED = "recorded"
    """Uploaded (again) and recorded: its checkpoint has this host's batch."""
    ALREADY_RECORDED = "already_recorded"
    """It had been uploaded and recorded before the stop; only the spooled copy was left."""
    DROPPED = "dropped"
    """Not recordable (no seal record, damaged, or its checkpoint no longer waits for this
    host): deleted, locally and in the store; its lines were never recorded as sealed, so
    they are read again into a later checkpoint."""


def recover_spool(
    config: PipelineConfig,
    metastore: Metastore,
    host: str,
    take_lease: Callable[[], bool],
) -> list[tuple[int, Recovery]]:
    """Upload and record the batches ``host`` sealed into the spool of ``config`` and did not
    record, oldest first, and delete every spooled copy. Runs before the pipeline's files are
    opened (the offsets recorded here are where its reading resumes), and only under the
    pipeline's lease (``take_lease``; when another live collector holds it, nothing is done).

    Returns each batch's checkpoint and what became of it.

    Raises:
        StorageError: an upload kept failing for ``handoff.upload_retry_s`` (the batch stays
            in the spool for the next start).
        MetastoreError: the metastore could not be reached.
    """
    staging = config.staging_area
    batches = spooled_batches(config.seal_dir, config.name, host)
    if staging.is_local or not batches:
        return []
    if not take_lease():
        log.warning("%s: another collector holds the lease; its spool is left alone", config.name)
        return []
    outcomes = []
    for batch in batches:
        target = staging.batch(batch.checkpoint_id, host)
        outcome = _recover(config, metastore, host, batch, target)
        log.warning(
            "%s: checkpoint %d's batch left in the spool by the last run: %s",
            config.name,
            batch.checkpoint_id,
            outcome.value,
        )
        batch.remove()
        outcomes.append((batch.checkpoint_id, outcome))
    return outcomes


def _recover(
    config: PipelineConfig,
    metastore: Metastore,
    host: str,
    batch: SpooledBatch,
    target: StorageLocation,
) -> Recovery:
    pipeline = config.name
    if any(b.host == host for b in metastore.batches(batch.checkpoint_id)):
        return Recovery.ALREADY_RECORDED
    if batch.files is None:
        return Recovery.DROPPED  # sealed, never handed to the upload: read again
    try:
        manifest = verify_local_batch(batch.folder)
    except CorruptBatchError as exc:
        log.error("%s: %s", pipeline, exc)
        return Recovery.DROPPED
    read_back = ReadBack.VERIFY if config.handoff.upload_read_back else ReadBack.SIZE_ONLY
    _upload_retrying(batch, target, config.handoff.upload_retry_s, read_back)
    try:
        metastore.seal(pipeline, _batch_record(manifest, target), batch.files, host)
    except CheckpointError as exc:  # sealed without this host meanwhile, committed, failed
        log.warning("%s: %s", pipeline, exc)
        _delete_remote(target)
        return Recovery.DROPPED
    return Recovery.RECORDED


def _upload_retrying(
    batch: SpooledBatch, target: StorageLocation, retry_seconds: float, read_back: ReadBack
) -> None:
    for attempt in tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(StorageError),
        wait=tenacity.wait_random_exponential(multiplier=0.5, max=10.0),
        stop=tenacity.stop_after_delay(retry_seconds),
        before_sleep=lambda state: log.warning(
            "upload of %s failed (%s); retrying",
            batch.folder,
            state.outcome.exception() if state.outcome else "?",
        ),
        reraise=True,
    ):
        with attempt:
            upload_sealed_batch(batch.folder, target, read_back=read_back)


def _batch_record(manifest: Manifest, target: StorageLocation) -> BatchRecord:
    """The metastore's record of the batch ``manifest`` describes, stored at ``target``."""
    return BatchRecord(
        checkpoint_id=manifest.checkpoint_id,
        host=manifest.host,
        staging_path=target.url,
        line_count=manifest.line_count,
        byte_count=manifest.byte_count,
        part_count=len(manifest.parts),
        checksum=manifest.checksum,
        event_count=manifest.event_count,
        ranges=tuple(ByteRange(r.fingerprint, r.start, r.end, r.lines) for r in manifest.ranges),
    )


def _delete_remote(target: StorageLocation) -> None:
    filesystem, root = target.filesystem()
    try:
        filesystem.delete_dir(root)
    except (OSError, ValueError) as exc:
        log.warning("cannot delete %s (never recorded, never landed): %s", target, exc)
