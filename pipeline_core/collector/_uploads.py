"""The upload thread of a pipeline whose staging is in an object store."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import tenacity

from pipeline_core.collector._spool import SpooledBatch
from pipeline_core.config import mask_url_passwords
from pipeline_core.errors import StorageError
from pipeline_core.sinks import ReadBack, SpoolBudget, upload_sealed_batch
from pipeline_core.staging_contract import StagingArea
from pipeline_core.storage import StorageLocation

log = logging.getLogger(__name__)

MAX_RETRY_WAIT_SECONDS = 30.0
"""The longest wait between two attempts at an upload (jittered exponential waits up to it)."""


@dataclass(frozen=True)
class UploadStats:
    """A snapshot of a pipeline's uploads.

    ``waiting``: batches sealed into the spool and not yet uploaded and recorded;
    ``uploaded``/``uploaded_bytes``: batches and part bytes stored since the start;
    ``failures``: failed attempts (each retried); ``last_error``: the last failure's message,
    None once an upload succeeded after it; ``seconds``: time spent uploading.
    """

    waiting: int
    uploaded: int
    uploaded_bytes: int
    failures: int
    last_error: str | None
    seconds: float


@dataclass(frozen=True)
class _Upload:
    batch: SpooledBatch


@dataclass(frozen=True)
class _Release:
    batch: SpooledBatch


class UploadWorker:
    """Uploads a pipeline's spooled batches to its staging location, one at a time in the
    order they were sealed, on a thread of its own, so that the mailbox thread never waits for
    the store.

    For each batch: the seal record is saved into its spool folder, the batch is uploaded
    (``upload_sealed_batch``: parts, then the manifest), and ``on_uploaded(checkpoint_id,
    url)`` tells the mailbox thread (by mail), which records it in the metastore and then
    calls :meth:`release`: the upload thread deletes the spooled copy and frees its bytes
    from the budget. A failed attempt (``StorageError``) is retried with jittered exponential
    waits up to ``MAX_RETRY_WAIT_SECONDS``, for as long as the worker runs, each failure
    logged and counted (:meth:`stats`); any other error (``CorruptBatchError``: the spooled
    copy is damaged) goes to ``on_failed`` and the thread ends.

    Threading model: :meth:`submit`, :meth:`release`, :meth:`start` and :meth:`stop` are
    called by the mailbox thread; the callbacks run on the upload thread and only send mail;
    :meth:`stats` may be called from any thread (the counters are guarded by a lock).

    Lifecycle: created, :meth:`start`\\ ed, :meth:`stop`\\ ped once. A stop ends the upload in
    progress at its next retry (or lets it finish); batches not uploaded stay in the spool,
    for the next start's recovery.
    """

    def __init__(
        self,
        pipeline: str,
        host: str,
        staging: StagingArea,
        budget: SpoolBudget,
        on_uploaded: Callable[[int, str], None],
        on_failed: Callable[[BaseException], None],
        *,
        retry_seconds: float,
        read_back: ReadBack = ReadBack.VERIFY,
    ) -> None:
        self._pipeline = pipeline
        self._host = host
        self._staging = staging
        self._budget = budget
        self._on_uploaded = on_uploaded
        self._on_failed = on_failed
        self._read_back = read_back
        self._retry_seconds = retry_seconds
        self._commands: queue.SimpleQueue[_Upload | _Release | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"sluice-upload-{pipeline}", daemon=True
        )
        self._lock = threading.Lock()
        self._waiting = 0  # guarded by _lock
        self._uploaded = 0  # guarded by _lock
        self._uploaded_bytes = 0  # guarded by _lock
        self._failures = 0  # guarded by _lock
        self._last_error: str | None = None  # guarded by _lock
        self._seconds = 0.0  # guarded by _lock

    def target(self, checkpoint_id: int) -> StorageLocation:
        """Where the batch of ``checkpoint_id`` is uploaded to."""
        return self._staging.batch(checkpoint_id, self._host)

    # -- mailbox thread --------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def submit(self, batch: SpooledBatch) -> None:
        """Upload ``batch`` (sealed into the spool, with the files' offsets at its barrier)."""
        with self._lock:
            self._waiting += 1
        self._commands.put(_Upload(batch))

    def release(self, batch: SpooledBatch) -> None:
        """``batch`` is recorded: delete its spooled copy."""
        self._commands.put(_Release(batch))

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the commands queued (an upload failing meanwhile is given up)."""
        self._stopping.set()
        self._commands.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def stats(self) -> UploadStats:
        with self._lock:
            return UploadStats(
                self._waiting,
                self._uploaded,
                self._uploaded_bytes,
                self._failures,
                self._last_error,
                self._seconds,
            )

    # -- upload thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while (command := self._commands.get()) is not None:
            try:
                if isinstance(command, _Upload):
                    self._upload(command.batch)
                else:
                    self._remove(command.batch)
            except StorageError as exc:
                if self._stopping.is_set():
                    log.warning("%s: upload given up as the collector stops", self._pipeline)
                    return
                log.error(
                    "%s: upload failed for %.0f s: %s", self._pipeline, self._retry_seconds, exc
                )
                self._on_failed(exc)
                return
            except Exception as exc:
                log.error("%s: upload failed for good: %s", self._pipeline, exc)
                self._on_failed(exc)
                return

    def _upload(self, batch: SpooledBatch) -> None:
        batch.save_record()
        target = self.target(batch.checkpoint_id)
        started = time.monotonic()
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(StorageError),
            wait=tenacity.wait_random_exponential(multiplier=0.5, max=MAX_RETRY_WAIT_SECONDS),
            stop=self._give_up,
            sleep=self._pause,
            before_sleep=self._failed_attempt,
            reraise=True,
        ):
            with attempt:
                uploaded = upload_sealed_batch(batch.folder, target, read_back=self._read_back)
        with self._lock:
            self._uploaded += 1
            self._uploaded_bytes += uploaded.bytes
            self._last_error = None
            self._seconds += time.monotonic() - started
        log.info(
            "%s: uploaded checkpoint %d's batch (%d bytes) to %s",
            self._pipeline,
            batch.checkpoint_id,
            uploaded.bytes,
            target,
        )
        self._on_uploaded(batch.checkpoint_id, target.url)

    def _give_up(self, state: tenacity.RetryCallState) -> bool:
        """Stop retrying when the worker stops, or ``retry_seconds`` after the first attempt."""
        elapsed = state.seconds_since_start or 0.0
        return self._stopping.is_set() or elapsed >= self._retry_seconds

    def _pause(self, seconds: float) -> None:
        """Wait between attempts; a stop cuts the wait short."""
        self._stopping.wait(seconds)

    def _failed_attempt(self, state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        shown = mask_url_passwords(str(error))  # a store's URL may carry a signature or key
        with self._lock:
            self._failures += 1
            self._last_error = shown
        log.warning(
            "%s: upload attempt %d failed (%s); retrying",
            self._pipeline,
            state.attempt_number,
            shown,
        )

    def _remove(self, batch: SpooledBatch) -> None:
        size = batch.part_bytes()
        batch.remove()
        self._budget.free(size)
        with self._lock:
            self._waiting -= 1
