"""A pipeline's read progress samples, as the state page charts them."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pipeline_core.metastore import ReadProgressRecord
from pipeline_core.state._models import ReadProgressSnapshot

MAX_PROGRESS_POINTS = 360
"""Most samples shown per host: more in the window are merged, consecutive ones together."""


def read_progress(
    records: Sequence[ReadProgressRecord], max_points: int = MAX_PROGRESS_POINTS
) -> list[ReadProgressSnapshot]:
    """``records`` (oldest first) as snapshots, at most ``max_points`` per host: when a host
    has more, each run of ``ceil(n / max_points)`` consecutive samples becomes one."""
    by_host: dict[str, list[ReadProgressRecord]] = {}
    for record in records:
        by_host.setdefault(record.host, []).append(record)
    merged: list[ReadProgressSnapshot] = []
    for samples in by_host.values():
        step = max(1, math.ceil(len(samples) / max_points))
        merged += [_merged(samples[i : i + step]) for i in range(0, len(samples), step)]
    return sorted(merged, key=lambda s: (s.sampled_at, s.host))


def _merged(samples: Sequence[ReadProgressRecord]) -> ReadProgressSnapshot:
    last = samples[-1]
    return ReadProgressSnapshot(
        host=last.host,
        sampled_at=last.sampled_at,
        elapsed_s=sum(s.elapsed_s for s in samples),
        bytes_read=sum(s.bytes_read for s in samples),
        lines_read=sum(s.lines_read for s in samples),
        unread_bytes=max(s.unread_bytes for s in samples),
        samples=len(samples),
    )
