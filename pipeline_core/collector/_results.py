"""What a collector's run did: per pipeline, and summed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline_core.collector._checkpoints import SealedCheckpoint
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.mailbox import TaskMailbox


@dataclass(frozen=True)
class AckerStats:
    """The acker's counters at the end of a run."""

    acked: int
    replayed: int
    timed_out: int
    pending: int
    lost: int
    committed_offsets: dict[str, int]


@dataclass(frozen=True)
class PipelineResult:
    sealed: tuple[SealedCheckpoint, ...]
    files: int
    lines: int
    bytes: int
    acker: AckerStats


@dataclass(frozen=True)
class CollectorResult:
    """What a run did, summed over its pipelines (``pipelines`` has each one)."""

    sealed: tuple[SealedCheckpoint, ...]
    files: int
    lines: int
    bytes: int
    seconds: float
    acker: AckerStats | None = None
    pipelines: Mapping[str, PipelineResult] | None = None


def pipeline_result(runtime: PipelineRuntime) -> PipelineResult:
    tracking = runtime.tracking
    return PipelineResult(
        sealed=tuple(runtime.coordinator.sealed),
        files=len(runtime.watcher.files),
        lines=runtime.lines,
        bytes=runtime.bytes,
        acker=AckerStats(
            acked=tracking.acker.acked,
            replayed=tracking.replayed,
            timed_out=tracking.acker.timed_out,
            pending=tracking.acker.pending,
            lost=tracking.lost,
            committed_offsets=tracking.offsets.snapshot(),
        ),
    )


class RunResults:
    """The checkpoints a run sealed, in the order it sealed them, and the result of each
    pipeline it stopped serving.

    Threading model: recorded on the mailbox thread only (each record checks it); read once the
    mailbox loop has ended.
    """

    def __init__(self, mailbox: TaskMailbox) -> None:
        self._mailbox = mailbox
        self._sealed: list[SealedCheckpoint] = []
        self._finished: dict[str, PipelineResult] = {}

    def record_sealed(self, sealed: SealedCheckpoint) -> None:
        self._mailbox.check_mailbox_thread("RunResults.record_sealed()")
        self._sealed.append(sealed)

    def record_finished(self, runtime: PipelineRuntime) -> None:
        """The pipeline is no longer served (removed, replaced, or the run ends)."""
        self._mailbox.check_mailbox_thread("RunResults.record_finished()")
        self._finished[runtime.name] = pipeline_result(runtime)

    def collector_result(self, seconds: float) -> CollectorResult:
        results = dict(self._finished)
        return CollectorResult(
            sealed=tuple(self._sealed),
            files=sum(r.files for r in results.values()),
            lines=sum(r.lines for r in results.values()),
            bytes=sum(r.bytes for r in results.values()),
            seconds=seconds,
            acker=next(iter(results.values())).acker if len(results) == 1 else None,
            pipelines=results,
        )
