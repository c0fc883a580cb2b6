"""Starting and retiring a pipeline inside a running collector."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pipeline_core.collector._feedback import Feedback
from pipeline_core.collector._lifecycle import PipelineState
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._registry import PipelineRegistry
from pipeline_core.collector._results import RunResults
from pipeline_core.collector._sink_group import BarrierPassed, ReportingExceptionHandler
from pipeline_core.collector._stages import StageQueues
from pipeline_core.config import PipelineConfig
from pipeline_core.mailbox import MailboxProcessor
from pipeline_core.metastore import LeaseHolder, Metastore
from pipeline_core.sinks import Sink

log = logging.getLogger(__name__)

BarrierFeedback = Callable[[str, BarrierPassed], None]
"""``(pipeline, passed)``, called on a sink group's thread when it passed a barrier."""


@dataclass(frozen=True)
class UploadFeedback:
    """What a pipeline's upload thread reports (with staging in an object store)."""

    uploaded: Callable[[str, int, str], None]
    """``(pipeline, checkpoint_id, url)``: a batch is stored."""
    failed: Callable[[str, BaseException], None]
    """``(pipeline, error)``: an upload failed for good."""


def lease_holder(config: PipelineConfig, nonce: str) -> str:
    """The name a collector holds the pipeline's lease under: one its machine can prove dead
    after a crash, so a restarted collector takes the lease over at once (``nonce`` tells
    collectors of one process apart)."""
    return LeaseHolder.of_this_process(config.collector.host, nonce).format()


class PipelineLauncher:
    """Puts a pipeline into service in a running collector, and takes it out.

    Serving a pipeline: register it (READING), start its sink groups' threads (their failures
    reported to the mailbox thread, their deliveries to ``feedback``, their barriers to the
    given ``BarrierFeedback``), and queue the re-deliveries its last run left; one launched
    here first gets its lease and its stage queues. Retiring it: record its result, stop its
    threads, release its files and lease, drop its queues and its registration.

    Threading model: mailbox thread only (each method checks it).
    """

    def __init__(
        self,
        processor: MailboxProcessor,
        registry: PipelineRegistry,
        queues: StageQueues,
        feedback: Feedback,
        results: RunResults,
        holder_nonce: str,
    ) -> None:
        self._processor = processor
        self._registry = registry
        self._queues = queues
        self._feedback = feedback
        self._results = results
        self._holder_nonce = holder_nonce

    def launch(
        self,
        config: PipelineConfig,
        metastore: Metastore,
        sinks: Mapping[str, Sink] | None,
        on_barrier_passed: BarrierFeedback,
        uploads: UploadFeedback,
    ) -> bool:
        """Serve a pipeline added while running, if it can be: not served already, the
        collector not stopping, its lease free. False (with an error in the log) if not."""
        self._processor.check_mailbox_thread("PipelineLauncher.launch()")
        if config.name in self._registry:
            log.error("pipeline %s is served already; not added again", config.name)
            return False
        if not self._registry.accepting:
            log.error("pipeline %s: the collector is stopping; not added", config.name)
            return False
        runtime = PipelineRuntime(
            config, metastore, lease_holder(config, self._holder_nonce), sinks
        )
        if not runtime.acquire_lease():
            holder_now = metastore.lease_holder(config.name, runtime.host)
            log.error("pipeline %s is being collected by %s: not added", config.name, holder_now)
            runtime.watcher.close()
            return False
        self._queues.add(runtime.name, config.collector)
        self.serve(runtime, on_barrier_passed, uploads)
        log.info("serving pipeline %s", config.name)
        return True

    def serve(
        self,
        runtime: PipelineRuntime,
        on_barrier_passed: BarrierFeedback,
        uploads: UploadFeedback,
    ) -> None:
        """Serve a pipeline whose lease is held and whose stage queues exist."""
        self._processor.check_mailbox_thread("PipelineLauncher.serve()")
        self._registry.add(runtime)
        report = self._processor.report_throwable
        runtime.start_consumers(
            lambda: ReportingExceptionHandler(report),
            functools.partial(on_barrier_passed, runtime.name),
            functools.partial(self._feedback.delivered, runtime.name),
            self._queues.send.wake,  # a slot is free: the send stage may publish
        )
        runtime.start_uploads(
            functools.partial(uploads.uploaded, runtime.name),
            functools.partial(uploads.failed, runtime.name),
        )
        runtime.tracking.restore(runtime.metastore.acker_trees(runtime.name, runtime.host))

    def retire(self, runtime: PipelineRuntime, final: PipelineState) -> None:
        """Stop serving a sealed pipeline, which becomes ``final`` (REMOVED or REPLACED)."""
        self._processor.check_mailbox_thread("PipelineLauncher.retire()")
        self._results.record_finished(runtime)
        self._feedback.forget(runtime.name)
        runtime.close()
        self._registry.remove(runtime, final)
        self._queues.remove(runtime.name)
        log.info("stopped serving pipeline %s", runtime.name)
