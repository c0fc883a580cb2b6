"""One pipeline inside a collector: its files, reader, acker, checkpoints, ring and sink groups."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta

from pipeline_core._file_modes import GROUP, PRIVATE, FileModes, make_private_dirs
from pipeline_core.collector._blocked_time import BlockedClock
from pipeline_core.collector._checkpoints import CheckpointCoordinator
from pipeline_core.collector._delivery_tracking import DeliveryTracker
from pipeline_core.collector._events import PipelineEvent
from pipeline_core.collector._flow_control import SendRateLimit
from pipeline_core.collector._lifecycle import PipelineState
from pipeline_core.collector._read_progress import ReadProgressSampler
from pipeline_core.collector._sink_group import BarrierPassed, SinkGroupEventHandler
from pipeline_core.collector._sink_groups import SinkGroup, build_sink_groups
from pipeline_core.collector._sink_state_store import MetastoreSinkStateStore
from pipeline_core.collector._spool_recovery import recover_spool
from pipeline_core.collector._uploads import UploadWorker
from pipeline_core.config import PipelineConfig, StagingAccess
from pipeline_core.errors import ConfigError
from pipeline_core.metastore import Metastore
from pipeline_core.ring import BatchEventProcessor, ExceptionHandler, RingBuffer
from pipeline_core.sinks import HandoffWriter, ReadBack, Sink, SpoolBudget
from pipeline_core.source import FileWatcher, TimeSlicedReader, TrackedFile

log = logging.getLogger(__name__)

UploadDone = Callable[[int, str], None]
"""``(checkpoint_id, url)``: a pipeline's batch is stored (called on its upload thread)."""
UploadFailed = Callable[[BaseException], None]
"""An upload failed for good (called on the upload thread)."""


def _run_consumer(consumer: BatchEventProcessor[PipelineEvent]) -> None:
    """A sink group's thread. A failure has been mailed to the mailbox thread by the exception
    handler before it ends the loop: nothing is left to report here."""
    with contextlib.suppress(Exception):
        consumer.run()


class PipelineRuntime:
    """Everything a collector keeps for one pipeline.

    Threading model: the fields are owned by the collector's mailbox thread, except the ring
    (written by the send stage, read by the sink groups' threads), ``rate_limit`` and
    ``bytes_sent`` (send stage thread), and the sink groups (their own threads). Other threads
    may read fields (metrics), never write them; ``blocked`` is read through its own lock (see
    :class:`BlockedClock`).
    """

    def __init__(
        self,
        config: PipelineConfig,
        metastore: Metastore,
        holder: str,
        sinks: Mapping[str, Sink] | None = None,
    ) -> None:
        tuning = config.collector
        _check_writable(config)
        self.config = config
        self.metastore = metastore
        self.name = config.name
        self.host = tuning.host
        self.holder = holder
        staging = config.staging_area
        self.spool: SpoolBudget | None = None
        """With staging in an object store: the local spool's bytes against its bound."""
        self.uploads: UploadWorker | None = None
        """With staging in an object store: the thread uploading sealed batches."""
        self._upload_feedback: tuple[UploadDone, UploadFailed] | None = None
        if not staging.is_local:
            # Before the files are opened: what it records is where reading resumes.
            recover_spool(config, metastore, self.host, self.acquire_lease)
            self.spool = SpoolBudget(config.handoff.max_spool_bytes)
            self.uploads = UploadWorker(
                config.name,
                self.host,
                staging,
                self.spool,
                self._batch_uploaded,
                self._upload_failed,
                retry_seconds=config.handoff.upload_retry_s,
                read_back=ReadBack.VERIFY
                if config.handoff.upload_read_back
                else ReadBack.SIZE_ONLY,
            )
        self.watcher = FileWatcher(
            config.sources,
            self.host,
            tuning.signature_bytes,
            metastore.files(config.name, self.host),
            max_open_files=tuning.max_open_files,
            close_idle_after=tuning.close_idle_after_s,
            forget_done_after=tuning.forget_done_files_after_h * 3600,
        )
        self.reader = TimeSlicedReader(
            self.watcher,
            chunk_bytes=tuning.read_chunk_bytes,
            max_line_bytes=tuning.max_line_bytes,
            slice_seconds=tuning.read_slice_ms / 1000,
        )
        writer = HandoffWriter(
            config.seal_dir,
            config.name,
            self.host,
            config.sources,
            max_part_bytes=config.handoff.max_part_bytes,
            budget=self.spool,
            modes=seal_modes(config),
        )
        self.sink_states = MetastoreSinkStateStore(metastore, config.name, self.host)
        self.groups: list[SinkGroup] = build_sink_groups(config, writer, self.sink_states, sinks)
        self.coordinator = CheckpointCoordinator(
            metastore,
            config.name,
            self.host,
            [group.name for group in self.groups],
            self.uploads,
        )
        self.tracking = DeliveryTracker(
            self.watcher,
            timeout=tuning.acker_timeout_s,
            max_pending=tuning.max_pending_trees,
            replays_wanted=any(not group.holds_handoff for group in self.groups),
            max_line_bytes=tuning.max_line_bytes,
            framing=self.reader.framing,
        )
        self.ring = RingBuffer.create_single_producer(PipelineEvent, tuning.ring_size)
        self.rate_limit = SendRateLimit(tuning.max_send_bytes_per_s)
        self.priority = config.priority
        self.state = PipelineState.READING
        """Moved by ``PipelineRegistry.move`` only (read from any thread by metrics)."""
        self.last_scan = float("-inf")
        self.last_snapshot = time.monotonic()
        self.progress = ReadProgressSampler(
            metastore,
            config.name,
            self.host,
            every_s=tuning.progress_sample_s,
            retention=timedelta(hours=tuning.progress_retain_hours),
        )
        self.lines = 0
        self.events = 0
        self.bytes = 0
        self.bytes_sent = 0
        self.blocked = BlockedClock()
        """Time reading was held back (a full queue, the acker at its limit), the current
        block included."""
        self.lease_acquired_at: float | None = None
        """When (``time.monotonic()``) this collector last took the lease itself; the control
        loop renews it from then on."""
        self._consumers: list[tuple[BatchEventProcessor[PipelineEvent], threading.Thread]] = []

    def __repr__(self) -> str:
        return f"PipelineRuntime({self.name!r}, {self.state.value})"

    # -- lease ---------------------------------------------------------------------------------

    def acquire_lease(self) -> bool:
        lease = self.config.collector.lease_seconds
        taken_at = time.monotonic()
        taken = self.metastore.acquire_lease(self.name, self.host, self.holder, lease)
        if taken:
            self.lease_acquired_at = taken_at
        return taken

    # -- sink groups ---------------------------------------------------------------------------

    def start_consumers(
        self,
        exception_handler: Callable[[], ExceptionHandler[PipelineEvent]],
        on_barrier_passed: Callable[[BarrierPassed], None],
        on_delivered: Callable[[list[tuple[int, int]]], None],
        on_released: Callable[[], None] | None = None,
    ) -> None:
        """Put one ``BatchEventProcessor`` per sink group on the ring and start their threads.

        ``on_released`` runs on a group's thread each time it gives ring slots back."""
        for index, group in enumerate(self.groups):
            handler = SinkGroupEventHandler(
                group.processor,
                group.runner,
                group.channel,
                on_barrier_passed,
                index=index,
                skip_replays=group.holds_handoff,
                on_delivered=on_delivered,
                sole_consumer=len(self.groups) == 1,
                on_released=on_released,
            )
            consumer = BatchEventProcessor(
                self.ring,
                self.ring.new_barrier(),
                handler,
                # A group's sequence advances once per batch: batches of a quarter of the ring
                # let the send stage refill the ring while the group delivers.
                max_batch_size=max(1, self.ring.buffer_size // 4),
                exception_handler=exception_handler(),
                rewind_strategy=group.rewind_strategy,
            )
            self.ring.add_gating_sequences(consumer.sequence)
            thread = threading.Thread(
                target=_run_consumer,
                args=(consumer,),
                name=f"sluice-sink-{self.name}-{group.name}",
                daemon=True,
            )
            self._consumers.append((consumer, thread))
            thread.start()

    def start_uploads(self, on_uploaded: UploadDone, on_failed: UploadFailed) -> None:
        """Start the upload thread (staging in an object store; otherwise nothing to do):
        ``on_uploaded(checkpoint_id, url)`` and ``on_failed(error)`` run on it."""
        if self.uploads is not None:
            self._upload_feedback = (on_uploaded, on_failed)
            self.uploads.start()

    def _batch_uploaded(self, checkpoint_id: int, url: str) -> None:
        assert self._upload_feedback is not None
        self._upload_feedback[0](checkpoint_id, url)

    def _upload_failed(self, error: BaseException) -> None:
        assert self._upload_feedback is not None
        self._upload_feedback[1](error)

    @property
    def spool_full(self) -> bool:
        """Whether reading waits for uploads to free the spool (any thread)."""
        return self.spool is not None and self.spool.full

    def stop_consumers(self) -> None:
        for group in self.groups:
            group.runner.stop()
        for consumer, thread in self._consumers:
            consumer.halt()
            thread.join(timeout=30)
            self.ring.remove_gating_sequence(consumer.sequence)
        self._consumers.clear()

    # -- bookkeeping ---------------------------------------------------------------------------

    def save_in_flight(self) -> None:
        save_in_flight([self])

    def record_progress(self) -> None:
        """Sample what was read and what is left to read into the metastore (see
        :class:`ReadProgressSampler`)."""
        self.progress.sample(*self.read_totals())

    def read_totals(self) -> tuple[int, int, list[TrackedFile]]:
        """What a read-progress sample counts: the lines and bytes read, and the files."""
        return self.lines, self.bytes, list(self.watcher.files)

    def mark_blocked(self, blocked: bool) -> None:
        """Reading is held back (or not) from now on (mailbox thread)."""
        self.blocked.mark(blocked)

    @property
    def is_blocked(self) -> bool:
        """Whether its reading was held back at its last turn (queue, acker, spool)."""
        return self.blocked.value.blocked

    @property
    def blocked_seconds(self) -> float:
        """Seconds reading was held back, the current block included (any thread)."""
        return self.blocked.seconds()

    def close(self) -> None:
        """Stop the sink groups, save what is in flight, release the files and the lease."""
        self.stop_consumers()
        if self.uploads is not None:
            self.uploads.stop()
        self.sink_states.flush()
        self.save_in_flight()
        self.watcher.close()
        try:
            self.metastore.release_lease(self.name, self.host, self.holder)
        except Exception as exc:
            log.warning("%s: cannot release the lease (it expires): %s", self.name, exc)


def _check_writable(config: PipelineConfig) -> None:
    """Refuse, before anything starts, a staging folder (or, with staging in an object store,
    the spool folder) that cannot be created or written
    (it would otherwise surface at the first part written, after a checkpoint was requested).

    Raises:
        ConfigError: naming ``handoff.staging_dir`` (or ``data_dir`` when it is the default).
    """
    staging = config.seal_dir
    try:
        make_private_dirs(staging, seal_modes(config))  # as every folder the handoff makes
        probe = staging / f".sluice-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        key = (
            "handoff.spool_dir"
            if config.handoff.spool_dir is not None
            else "handoff.staging"
            if config.handoff.staging is not None and config.staging_location.is_local
            else "handoff.staging_dir"
            if config.handoff.staging_dir is not None
            else "data_dir"
        )
        raise ConfigError(
            str(config.config_path or config.name),
            [f"{key}: cannot create or write the staging folder {staging}: {exc}"],
        ) from exc


def seal_modes(config: PipelineConfig) -> FileModes:
    """The modes of what the collector seals: ``handoff.staging_access`` in a local staging
    folder; the owner's alone in the spool (an object store's staging)."""
    shared = config.handoff.staging_access is StagingAccess.GROUP
    return GROUP if shared and config.staging_location.is_local else PRIVATE


def save_in_flight(runtimes: Sequence[PipelineRuntime]) -> list[PipelineRuntime]:
    """:meth:`PipelineRuntime.save_in_flight` of several pipelines, those of one metastore in
    one transaction (each commit wakes every collector watching the metastore for requests);
    returns those saved. A metastore that refuses is warned of: retried at the next
    snapshot."""
    by_metastore: dict[int, list[PipelineRuntime]] = {}
    for runtime in runtimes:
        runtime.last_snapshot = time.monotonic()
        by_metastore.setdefault(id(runtime.metastore), []).append(runtime)
    saved: list[PipelineRuntime] = []
    for batch in by_metastore.values():
        try:
            batch[0].metastore.save_acker_trees_many(
                [(r.name, r.host, r.tracking.records()) for r in batch]
            )
        except Exception as exc:  # retried at the next snapshot
            names = ", ".join(r.name for r in batch)
            log.warning("%s: cannot save the acker's in-flight trees: %s", names, exc)
            continue
        saved += batch
    return saved
