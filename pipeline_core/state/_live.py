"""What a running collector reported: its metrics file, while it is fresh.

Only a running collector knows its stage queue depths, read offsets and trees in flight now; it
rewrites its metrics file every few seconds, and a report older than a minute is not used.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pipeline_core.collector import metrics_file, read_metrics
from pipeline_core.config import PipelineConfig
from pipeline_core.queues import QueueStats
from pipeline_core.state._models import FileSnapshot, LiveCollectorSnapshot, StageQueueSnapshot

log = logging.getLogger(__name__)


def live_collector(
    config: PipelineConfig,
) -> tuple[LiveCollectorSnapshot | None, Mapping[str, Any] | None]:
    """The running collector's fresh report for the pipeline (its metrics file), if any."""
    document = read_metrics(config.data_dir, config.name)
    if document is None:
        return None, None
    try:
        reported_at = metrics_file(config.data_dir, config.name).stat().st_mtime
        live = LiveCollectorSnapshot(
            host=document["host"],
            state=document["state"],
            reported_at=datetime.fromtimestamp(reported_at, timezone.utc),
            lines_read=document["lines_read"],
            bytes_read=document["bytes_read"],
            bytes_sent=document["bytes_sent"],
            trees_in_flight=document["trees_in_flight"],
            trees_replayed=document["trees_replayed"],
            blocked_seconds=document["blocked_seconds"],
        )
    except (OSError, KeyError, TypeError, ValueError) as exc:
        log.warning("Ignoring the metrics file of pipeline %s: %s", config.name, exc)
        return None, None
    return live, document


def reported_queues(document: Mapping[str, Any]) -> dict[str, QueueStats] | None:
    """The stage queues of a collector's report, as the ``QueueStats`` fields they carry."""
    try:
        return {
            name: QueueStats(
                size=int(q["size"]),
                high=int(q["high"]),
                low=int(q["low"]),
                writable=bool(q["writable"]),
                pushes=0,
                urgent_pushes=0,
                refusals=int(q["refusals"]),
                pops=0,
                feedbacks=0,
            )
            for name, q in dict(document["queues"]).items()
        }
    except (KeyError, TypeError, ValueError):
        return None


def with_read_offsets(
    files: list[FileSnapshot], document: Mapping[str, Any] | None
) -> list[FileSnapshot]:
    """``files`` with the read offsets a running collector reported, matched by fingerprint."""
    if document is None:
        return files
    reported: dict[str, int] = {}
    for item in document.get("files", []):
        if isinstance(item, dict) and isinstance(item.get("read_offset"), int):
            reported[str(item.get("fingerprint"))] = item["read_offset"]
    return [
        f.model_copy(update={"read_offset": reported[f.fingerprint]})
        if f.fingerprint in reported
        else f
        for f in files
    ]


def stage_queues(
    config: PipelineConfig, stats: Mapping[str, QueueStats] | None
) -> list[StageQueueSnapshot]:
    configured = {
        "process": config.collector.process_queue_size,
        "send": config.collector.send_queue_size,
    }
    queues = []
    for name, high in configured.items():
        reported = stats.get(name) if stats is not None else None
        queues.append(
            StageQueueSnapshot(
                name=name,
                high_watermark=reported.high if reported else high,
                low_watermark=reported.low if reported else high * 2 // 3,
                depth=reported.size if reported else None,
            )
        )
    return queues
