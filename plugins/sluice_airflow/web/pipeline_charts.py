"""The charts of a pipeline on the Sluice page, drawn from its snapshot.

Over time, from the read progress samples each collector host stores (one when it starts
reading, every ``collector.progress_sample_s`` and at each seal):

* ``read-rate`` -- bytes read per second, each sample's rate held over the span it counts;
* ``unread-bytes`` -- bytes of the files past the collector's read offsets (its lag), a line
  per collector run.

Per checkpoint, oldest to newest, from the checkpoints the page lists:

* ``seal-latency`` -- seconds from its request to its seal;
* ``commit-latency`` -- seconds from its seal to its (latest) commit;
* ``lines`` -- lines its batches hold;
* ``rejects`` -- lines the landing rejected (known once committed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from markupsafe import Markup

from pipeline_core.state import CheckpointSnapshot, PipelineSnapshot, ReadProgressSnapshot
from sluice_airflow.web.charts import (
    BYTES,
    BYTES_PER_S,
    COUNT,
    SECONDS,
    Bars,
    Line,
    Steps,
    Unit,
    bar_chart,
    time_chart,
)

HOST_TONES = ("blue", "amber", "violet", "teal", "green")
"""The tone of each collector host's series, in the order the hosts first appear."""

RUN_GAP = timedelta(seconds=5)
"""A sample whose span starts later than this after its host's previous sample begins a new
run of the collector: its lag line is not joined to the one before."""

NO_SAMPLES = "No samples yet: a collector stores them while it reads."
NO_CHECKPOINTS = "No checkpoints yet."


@dataclass(frozen=True)
class Chart:
    """One chart of the page: ``key`` names it in the HTML (``data-chart``)."""

    key: str
    title: str
    subtitle: str
    svg: Markup


def pipeline_charts(snapshot: PipelineSnapshot) -> list[Chart]:
    """The six charts of a pipeline, in the order the page shows them."""
    progress = snapshot.read_progress
    hosts = list(dict.fromkeys(sample.host for sample in progress))
    tones = {host: HOST_TONES[i % len(HOST_TONES)] for i, host in enumerate(hosts)}
    rate = [
        Steps(
            host,
            [
                (s.sampled_at - timedelta(seconds=s.elapsed_s), s.sampled_at, s.bytes_per_s)
                for s in progress
                if s.host == host and s.bytes_per_s is not None
            ],
            tone=tones[host],
        )
        for host in hosts
    ]
    lag = [
        Line(host, _runs([s for s in progress if s.host == host]), tone=tones[host])
        for host in hosts
    ]
    checkpoints = snapshot.checkpoints[::-1]  # oldest first
    labels = [f"#{c.checkpoint_id}" for c in checkpoints]
    return [
        Chart(
            "read-rate",
            "Read rate",
            "bytes read per second, between samples",
            time_chart(rate, BYTES_PER_S, label="Read rate over time", empty=NO_SAMPLES),
        ),
        Chart(
            "unread-bytes",
            "Unread bytes",
            "the collector's lag: file bytes past its read offsets",
            time_chart(lag, BYTES, label="Unread bytes over time", empty=NO_SAMPLES),
        ),
        _per_checkpoint(
            "seal-latency",
            "Request \u2192 sealed",
            "seconds from a checkpoint's request to its seal",
            labels,
            Bars(
                "request \u2192 sealed",
                _values(checkpoints, "seal_latency_s"),
                "teal",
                "not sealed yet",
            ),
            SECONDS,
        ),
        _per_checkpoint(
            "commit-latency",
            "Sealed \u2192 committed",
            "seconds from the seal to the commit of its landing",
            labels,
            Bars(
                "sealed \u2192 committed",
                _values(checkpoints, "commit_latency_s"),
                "violet",
                "not committed yet",
            ),
            SECONDS,
        ),
        _per_checkpoint(
            "lines",
            "Lines",
            "lines each checkpoint's batches hold",
            labels,
            Bars(
                "lines",
                [c.lines if c.batches else None for c in checkpoints],
                "blue",
                "not sealed yet",
            ),
            COUNT,
        ),
        _per_checkpoint(
            "rejects",
            "Rejects",
            "lines the landing could not parse (counted at commit)",
            labels,
            Bars("rejects", _values(checkpoints, "landing_rejects"), "red", "not committed yet"),
            COUNT,
        ),
    ]


def _per_checkpoint(
    key: str, title: str, subtitle: str, labels: Sequence[str], bars: Bars, unit: Unit
) -> Chart:
    svg = bar_chart(
        labels,
        [bars],
        unit,
        label=f"{title} per checkpoint",
        axis_label="checkpoint",
        empty=NO_CHECKPOINTS,
    )
    return Chart(key, title, subtitle, svg)


def _values(checkpoints: Sequence[CheckpointSnapshot], field: str) -> list[float | None]:
    return [getattr(c, field) for c in checkpoints]


def _runs(samples: Sequence[ReadProgressSnapshot]) -> list[tuple[datetime, float] | None]:
    """One host's unread bytes, broken where a sample does not follow the one before (the
    collector was not running in between)."""
    points: list[tuple[datetime, float] | None] = []
    previous: datetime | None = None
    for sample in samples:
        begins = sample.sampled_at - timedelta(seconds=sample.elapsed_s)
        if previous is not None and begins - previous > RUN_GAP:
            points.append(None)
        points.append((sample.sampled_at, float(sample.unread_bytes)))
        previous = sample.sampled_at
    return points
