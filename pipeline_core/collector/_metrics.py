"""Per-pipeline collector metrics, and their Prometheus text exposition."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pipeline_core.queues import QueueStats
from pipeline_core.source import TrackedFile

if TYPE_CHECKING:
    from pipeline_core.collector._pipeline import PipelineRuntime


@dataclass(frozen=True)
class FileMetrics:
    path: str
    fingerprint: str
    state: str
    size: int
    read_offset: int
    sealed_offset: int
    committed_offset: int | None

    @property
    def unread_bytes(self) -> int:
        """Bytes of the file not read yet (the lag users ask about first)."""
        return max(0, self.size - self.read_offset)


@dataclass(frozen=True)
class QueueMetrics:
    size: int
    high: int
    low: int
    writable: bool
    refusals: int


@dataclass(frozen=True)
class SinkGroupMetrics:
    name: str
    deliveries: int
    backoffs: int
    delivery_errors: int
    errors: int


@dataclass(frozen=True)
class PipelineMetrics:
    """One pipeline in a running collector, at one moment."""

    pipeline: str
    host: str
    state: str
    priority: int
    lines_read: int
    bytes_read: int
    bytes_sent: int
    blocked_seconds: float
    trees_in_flight: int
    trees_replayed: int
    truncated_unread_bytes: int
    """Bytes seen in files that a truncation (copytruncate) destroyed before they were read."""
    queues: Mapping[str, QueueMetrics]
    sink_groups: tuple[SinkGroupMetrics, ...]
    files: tuple[FileMetrics, ...]

    @property
    def unread_bytes(self) -> int:
        return sum(f.unread_bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["unread_bytes"] = self.unread_bytes
        for file, data in zip(self.files, document["files"], strict=True):
            data["unread_bytes"] = file.unread_bytes
        return document


def pipeline_metrics(runtime: PipelineRuntime, queues: Mapping[str, QueueStats]) -> PipelineMetrics:
    """A snapshot of ``runtime`` (read from any thread: plain attribute reads, no locks)."""
    committed = runtime.tracking.offsets.snapshot()
    blocked = runtime.blocked_seconds
    files = []
    for tracked in list(runtime.watcher.files):
        files.append(
            FileMetrics(
                path=tracked.path,
                fingerprint=tracked.fingerprint,
                state=tracked.state.value,
                size=_size(tracked),
                read_offset=tracked.read_offset,
                sealed_offset=tracked.sealed_offset,
                committed_offset=committed.get(tracked.fingerprint),
            )
        )
    return PipelineMetrics(
        pipeline=runtime.name,
        host=runtime.host,
        state=runtime.state.value,
        priority=runtime.priority,
        lines_read=runtime.lines,
        bytes_read=runtime.bytes,
        bytes_sent=runtime.bytes_sent,
        blocked_seconds=blocked,
        trees_in_flight=runtime.tracking.acker.pending,
        trees_replayed=runtime.tracking.replayed,
        truncated_unread_bytes=runtime.watcher.truncated_unread_bytes,
        queues={
            name: QueueMetrics(s.size, s.high, s.low, s.writable, s.refusals)
            for name, s in queues.items()
        },
        sink_groups=tuple(
            SinkGroupMetrics(
                group.name,
                group.runner.counters.deliveries,
                group.runner.counters.backoffs,
                group.runner.counters.delivery_errors,
                group.runner.counters.errors,
            )
            for group in runtime.groups
        ),
        files=tuple(files),
    )


def unread_bytes(files: Iterable[TrackedFile]) -> int:
    """Bytes of ``files`` past their read offsets now (what :class:`FileMetrics` sums)."""
    return sum(max(0, _size(tracked) - tracked.read_offset) for tracked in files)


def _size(tracked: TrackedFile) -> int:
    """The file's size: through its descriptor, or (closed after a run) its path while it is
    still the same file."""
    if tracked.fd is not None:
        return tracked.size()
    try:
        info = os.stat(tracked.path)
    except OSError:
        return tracked.read_offset
    if (info.st_dev, info.st_ino) != (tracked.dev, tracked.ino):
        return tracked.read_offset
    return info.st_size


def prometheus_text(metrics: Iterable[PipelineMetrics]) -> str:
    """The Prometheus text exposition format (version 0.0.4) of ``metrics``."""
    families: dict[str, tuple[str, str, list[str]]] = {}

    def sample(name: str, kind: str, help_text: str, labels: dict[str, str], value: float) -> None:
        family = families.setdefault(name, (kind, help_text, []))
        rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        family[2].append(f"{name}{{{rendered}}} {value:g}")

    for m in metrics:
        base = {"pipeline": m.pipeline, "host": m.host}
        sample("sluice_lines_read_total", "counter", "Lines read.", base, m.lines_read)
        sample("sluice_bytes_read_total", "counter", "Bytes read.", base, m.bytes_read)
        sample("sluice_bytes_sent_total", "counter", "Bytes sent to the sinks.", base, m.bytes_sent)
        sample(
            "sluice_blocked_seconds_total",
            "counter",
            "Time reading waited on a full queue or on acks.",
            base,
            m.blocked_seconds,
        )
        sample("sluice_unread_bytes", "gauge", "Bytes not read yet.", base, m.unread_bytes)
        sample(
            "sluice_truncated_unread_bytes_total",
            "counter",
            "Bytes a truncation destroyed before they were read.",
            base,
            m.truncated_unread_bytes,
        )
        sample("sluice_trees_in_flight", "gauge", "Chunks not acked yet.", base, m.trees_in_flight)
        for queue, q in m.queues.items():
            labels = {**base, "queue": queue}
            sample("sluice_queue_size", "gauge", "Items in a stage queue.", labels, q.size)
            sample("sluice_queue_high_watermark", "gauge", "High watermark.", labels, q.high)
            sample("sluice_queue_low_watermark", "gauge", "Low watermark.", labels, q.low)
        for group in m.sink_groups:
            labels = {**base, "sink_group": group.name}
            sample(
                "sluice_sink_deliveries_total",
                "counter",
                "Batches delivered.",
                labels,
                group.deliveries,
            )
            sample(
                "sluice_sink_failures_total",
                "counter",
                "Failed delivery attempts.",
                labels,
                group.delivery_errors + group.errors,
            )
        for file in m.files:
            labels = {**base, "path": file.path}
            sample(
                "sluice_file_unread_bytes",
                "gauge",
                "Bytes of a file not read yet.",
                labels,
                file.unread_bytes,
            )
    lines = []
    for name, (kind, help_text, samples) in families.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
