"""The collector's metrics as Prometheus metric families, on a registry of their own.

Per pipeline, labelled ``pipeline`` and ``host`` (and what is in brackets):

* ``sluice_pipeline_state`` gauge [``state``]: 1 for the pipeline's lifecycle state;
* ``sluice_read_lines_total``, ``sluice_read_bytes_total``, ``sluice_sent_bytes_total``
  counters;
* ``sluice_blocked_seconds_total`` counter: time reading was held back, growing while a block
  lasts;
* ``sluice_unread_bytes`` gauge, ``sluice_truncated_unread_bytes_total`` counter;
* ``sluice_in_flight_chunks`` gauge, ``sluice_replayed_chunks_total`` counter;
* ``sluice_queue_items``, ``sluice_queue_high_watermark_items``,
  ``sluice_queue_low_watermark_items`` gauges and ``sluice_queue_refusals_total`` counter
  [``queue``: ``process``, ``send``];
* ``sluice_sink_group_delivered_batches_total``, ``sluice_sink_group_failed_deliveries_total``,
  ``sluice_sink_group_backoffs_total`` counters [``sink_group``];
* ``sluice_source_files``, ``sluice_source_unread_bytes``, ``sluice_source_read_offset_bytes``
  gauges [``source``]: the files a source tracks, their bytes not read yet, and how far they
  were read, summed;
* with ``file_labels`` only (``sluice collect --metrics-file-labels``):
  ``sluice_file_unread_bytes``, ``sluice_file_read_offset_bytes`` gauges [``path``]. Off by
  default: a file's path is whatever a writer of the log folder named it (it may say more
  than the scraper should know), and every file is a series of its own.

Per process: ``sluice_build_info`` [``version``, ``python_version``], and prometheus-client's
process metrics (``process_cpu_seconds_total``, ``process_resident_memory_bytes``,
``process_open_fds``, ...) and ``python_info``. Values are written in full: a counter keeps
every digit a float holds exactly (integers up to 2**53).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from typing import TypeVar

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from pipeline_core.collector._metrics import PipelineMetrics, UploadMetrics

DISTRIBUTION = "sluice"
BASE_LABELS = ("pipeline", "host")
_Family = TypeVar("_Family", CounterMetricFamily, GaugeMetricFamily)


class PipelineMetricFamilies(Collector):
    """A prometheus-client collector: each scrape takes one snapshot of every pipeline
    (``snapshot()``, called on the scraping thread: it must be safe from any thread) and turns
    it into metric families."""

    def __init__(
        self, snapshot: Callable[[], Iterable[PipelineMetrics]], *, file_labels: bool = False
    ) -> None:
        self._snapshot = snapshot
        self._file_labels = file_labels

    def collect(self) -> Iterator[Metric]:
        yield from pipeline_families(self._snapshot(), file_labels=self._file_labels)

    def describe(self) -> list[Metric]:
        """No names up front: the families depend on what is served (and a registry that
        asked ``collect()`` instead would take a snapshot at registration)."""
        return []


class BuildInfo(Collector):
    """``sluice_build_info{version, python_version} 1``."""

    def __init__(self) -> None:
        family = InfoMetricFamily("sluice_build", "Sluice's version and the Python it runs on.")
        family.add_metric(
            [], {"version": sluice_version(), "python_version": platform.python_version()}
        )
        self._families: list[Metric] = [family]

    def collect(self) -> list[Metric]:
        return self._families


def metrics_registry(
    snapshot: Callable[[], Iterable[PipelineMetrics]],
    *,
    process: bool = True,
    file_labels: bool = False,
) -> CollectorRegistry:
    """A registry of its own (never prometheus-client's global one) holding the pipelines'
    families (with ``file_labels``, the per-file series too), ``sluice_build_info`` and, with
    ``process``, the process and platform collectors."""
    registry = process_registry() if process else CollectorRegistry()
    registry.register(PipelineMetricFamilies(snapshot, file_labels=file_labels))
    registry.register(BuildInfo())
    return registry


def process_registry() -> CollectorRegistry:
    """A registry of its own holding the process and platform collectors (CPU, memory,
    descriptors; the Python)."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def prometheus_text(metrics: Iterable[PipelineMetrics], *, file_labels: bool = False) -> str:
    """The Prometheus text exposition (0.0.4) of ``metrics`` and ``sluice_build_info``."""
    snapshot = list(metrics)
    registry = metrics_registry(lambda: snapshot, process=False, file_labels=file_labels)
    return generate_latest(registry).decode()


def sluice_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _upload_families(families: _Families, base: tuple[str, str], u: UploadMetrics) -> None:
    """The spool and upload series of a pipeline staging in an object store."""
    families.gauge(
        "sluice_spool_bytes", "Bytes in the local spool (unsealed and waiting for upload)."
    ).add_metric(base, u.spool_bytes)
    families.gauge(
        "sluice_spool_limit_bytes", "The spool's bound (handoff.max_spool_bytes)."
    ).add_metric(base, u.spool_limit_bytes)
    families.gauge(
        "sluice_spool_full", "1 while reading waits for uploads to free the spool."
    ).add_metric(base, int(u.spool_full))
    families.gauge(
        "sluice_upload_waiting_batches", "Sealed batches waiting for their upload."
    ).add_metric(base, u.waiting)
    families.counter(
        "sluice_uploaded_bytes_total", "Part bytes uploaded to the staging store."
    ).add_metric(base, u.uploaded_bytes)
    families.counter(
        "sluice_upload_failures_total", "Failed upload attempts (each retried)."
    ).add_metric(base, u.failures)
    families.counter(
        "sluice_upload_seconds_total",
        "Seconds spent uploading (a store slow or briefly away shows here first).",
    ).add_metric(base, u.upload_seconds)


def pipeline_families(
    metrics: Iterable[PipelineMetrics], *, file_labels: bool = False
) -> list[Metric]:
    """Every family of the pipelines' metrics (those with no sample left out); the per-file
    series (labelled with the file's path) only with ``file_labels``."""
    families = _Families()
    for m in metrics:
        base = (m.pipeline, m.host)
        families.gauge(
            "sluice_pipeline_state",
            "1 for the pipeline's lifecycle state (reading, finishing, removing, replacing, done).",
            ("state",),
        ).add_metric([*base, m.state], 1)
        families.counter("sluice_read_lines_total", "Lines read from the files.").add_metric(
            base, m.lines_read
        )
        families.counter(
            "sluice_read_events_total",
            "Events read from the files: the lines, but for multiline sources' events.",
        ).add_metric(base, m.events_read)
        families.counter("sluice_read_bytes_total", "Bytes read from the files.").add_metric(
            base, m.bytes_read
        )
        held = [f.held_event_s for f in m.files if f.held_event_s is not None]
        families.gauge(
            "sluice_held_event_files",
            "Files of multiline sources whose last event is held back, unfinished.",
        ).add_metric(base, len(held))
        families.gauge(
            "sluice_held_event_seconds",
            "The longest time a file's unfinished last event has been held back.",
        ).add_metric(base, max(held, default=0.0))
        families.counter("sluice_sent_bytes_total", "Bytes handed to the sink groups.").add_metric(
            base, m.bytes_sent
        )
        families.counter(
            "sluice_blocked_seconds_total",
            "Time reading was held back by a full queue or the acker's limit, the current "
            "block included.",
        ).add_metric(base, m.blocked_seconds)
        families.gauge("sluice_unread_bytes", "Bytes of the files not read yet.").add_metric(
            base, m.unread_bytes
        )
        if m.uploads is not None:
            _upload_families(families, base, m.uploads)
        families.counter(
            "sluice_truncated_unread_bytes_total",
            "Bytes a truncation (copytruncate) destroyed before they were read.",
        ).add_metric(base, m.truncated_unread_bytes)
        families.gauge(
            "sluice_in_flight_chunks", "Chunks sent and not acknowledged by every sink group."
        ).add_metric(base, m.trees_in_flight)
        families.counter(
            "sluice_replayed_chunks_total", "Chunks sent again after a failure or a timeout."
        ).add_metric(base, m.trees_replayed)
        for queue, q in m.queues.items():
            labels = [*base, queue]
            families.gauge("sluice_queue_items", "Items in a stage queue.", ("queue",)).add_metric(
                labels, q.size
            )
            families.gauge(
                "sluice_queue_high_watermark_items",
                "A stage queue's high watermark: full from here.",
                ("queue",),
            ).add_metric(labels, q.high)
            families.gauge(
                "sluice_queue_low_watermark_items",
                "A stage queue's low watermark: writable again from here.",
                ("queue",),
            ).add_metric(labels, q.low)
            families.counter(
                "sluice_queue_refusals_total", "Items a full stage queue refused.", ("queue",)
            ).add_metric(labels, q.refusals)
        for group in m.sink_groups:
            labels = [*base, group.name]
            families.counter(
                "sluice_sink_group_delivered_batches_total",
                "Batches a sink group delivered.",
                ("sink_group",),
            ).add_metric(labels, group.deliveries)
            families.counter(
                "sluice_sink_group_failed_deliveries_total",
                "Delivery attempts of a sink group that failed.",
                ("sink_group",),
            ).add_metric(labels, group.delivery_errors + group.errors)
            families.counter(
                "sluice_sink_group_backoffs_total",
                "Times a sink group's runner backed off (nothing to deliver, or a failure).",
                ("sink_group",),
            ).add_metric(labels, group.backoffs)
        _source_families(families, base, m)
        if not file_labels:
            continue
        for file in m.files:
            labels = [*base, file.path]
            families.gauge(
                "sluice_file_unread_bytes", "Bytes of a file not read yet.", ("path",)
            ).add_metric(labels, file.unread_bytes)
            families.gauge(
                "sluice_file_read_offset_bytes", "How far a file has been read.", ("path",)
            ).add_metric(labels, file.read_offset)
    return families.all()


def _source_families(families: _Families, base: tuple[str, str], m: PipelineMetrics) -> None:
    """The files of each source, summed: what the per-file series say, without a path."""
    totals: dict[str, list[int]] = {}
    for file in m.files:
        total = totals.setdefault(file.source, [0, 0, 0])
        total[0] += 1
        total[1] += file.unread_bytes
        total[2] += file.read_offset
    for source, (files, unread, read) in sorted(totals.items()):
        labels = [*base, source]
        families.gauge("sluice_source_files", "Files a source tracks now.", ("source",)).add_metric(
            labels, files
        )
        families.gauge(
            "sluice_source_unread_bytes", "Bytes of a source's files not read yet.", ("source",)
        ).add_metric(labels, unread)
        families.gauge(
            "sluice_source_read_offset_bytes",
            "How far a source's files have been read, summed.",
            ("source",),
        ).add_metric(labels, read)


class _Families:
    """Families by name, made at their first sample, in the order first sampled."""

    def __init__(self) -> None:
        self._by_name: dict[str, Metric] = {}

    def counter(
        self, name: str, documentation: str, labels: tuple[str, ...] = ()
    ) -> CounterMetricFamily:
        return self._family(CounterMetricFamily, name, documentation, labels)

    def gauge(
        self, name: str, documentation: str, labels: tuple[str, ...] = ()
    ) -> GaugeMetricFamily:
        return self._family(GaugeMetricFamily, name, documentation, labels)

    def _family(
        self, kind: type[_Family], name: str, documentation: str, labels: tuple[str, ...]
    ) -> _Family:
        """Family ``name`` of ``kind``, made on first use with the base labels."""
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = kind(name, documentation, labels=[*BASE_LABELS, *labels])
        assert isinstance(family, kind)
        return family

    def all(self) -> list[Metric]:
        return list(self._by_name.values())
