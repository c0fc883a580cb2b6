"""A pipeline's charts, drawn from a snapshot: what each one shows, and in what order."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

from sluice_airflow.web.pipeline_charts import Chart, pipeline_charts

from pipeline_core.state import (
    BatchSnapshot,
    CheckpointSnapshot,
    PipelineSnapshot,
    ReadProgressSnapshot,
)

SVG = "{http://www.w3.org/2000/svg}"
T0 = datetime(2026, 11, 22, 10, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def progress(
    seconds: float, elapsed: float, read: int, unread: int, host: str = "web-1"
) -> ReadProgressSnapshot:
    return ReadProgressSnapshot(
        host=host,
        sampled_at=at(seconds),
        elapsed_s=elapsed,
        bytes_read=read,
        lines_read=read // 100,
        unread_bytes=unread,
    )


def checkpoint(
    checkpoint_id: int,
    *,
    sealed_after: float | None,
    committed_after: float | None = None,
    lines: int = 0,
    rejects: int | None = None,
) -> CheckpointSnapshot:
    requested = at(checkpoint_id * 300)
    sealed = requested + timedelta(seconds=sealed_after) if sealed_after is not None else None
    committed = (
        sealed + timedelta(seconds=committed_after)
        if sealed is not None and committed_after is not None
        else None
    )
    batches = [
        BatchSnapshot(host="web-1", lines=lines, bytes=lines * 80, parts=1, staging_path="/s")
    ]
    return CheckpointSnapshot(
        checkpoint_id=checkpoint_id,
        state="committed" if committed else "sealed" if sealed else "requested",
        run_id=None,
        requested_at=requested,
        sealed_at=sealed,
        committed_at=committed,
        data_interval_start=None,
        data_interval_end=None,
        lines=lines if sealed else 0,
        bytes=lines * 80 if sealed else 0,
        landing_rows=lines - (rejects or 0) if committed else None,
        landing_rejects=rejects,
        error=None,
        batches=batches if sealed else [],
    )


def snapshot(**fields: object) -> PipelineSnapshot:
    return PipelineSnapshot.model_validate(
        {"name": "web_access", "dag_id": "sluice_web_access", "config_path": "/p.yaml"}
        | {"taken_at": at(3600)}
        | fields
    )


def svg_of(charts: list[Chart], key: str) -> ET.Element:
    (chart,) = [c for c in charts if c.key == key]
    return ET.fromstring(str(chart.svg))


def titled(svg: ET.Element, tag: str | None = None) -> list[str]:
    """The hover texts of the marks (of one tag), left to right."""
    found = svg.iter(SVG + tag) if tag else svg.iter()
    return [
        e.findtext(SVG + "title") or ""
        for e in found
        if e is not svg and e.find(SVG + "title") is not None
    ]


def test_should_draw_six_charts_in_the_pages_order() -> None:
    charts = pipeline_charts(snapshot())

    assert [c.key for c in charts] == [
        "read-rate",
        "unread-bytes",
        "seal-latency",
        "commit-latency",
        "lines",
        "rejects",
    ]
    assert all(c.title and c.subtitle for c in charts)
    empty = [e.text for c in charts for e in ET.fromstring(str(c.svg)).iter(SVG + "text")]
    assert empty == [
        "No samples yet: a collector stores them while it reads.",
        "No samples yet: a collector stores them while it reads.",
        *["No checkpoints yet."] * 4,
    ]


def test_should_draw_each_samples_read_rate_over_the_span_it_counts() -> None:
    samples = [progress(60, 0.5, 0, 4096), progress(62, 2.0, 4096, 0), progress(120, 0.0, 0, 0)]

    svg = svg_of(pipeline_charts(snapshot(read_progress=samples)), "read-rate")

    assert titled(svg, "rect") == [
        "web-1: 0 B/s, 2026-11-22 10:00:59 UTC to 2026-11-22 10:01:00 UTC",
        "web-1: 2 KiB/s, 2026-11-22 10:01:00 UTC to 2026-11-22 10:01:02 UTC",
    ]  # the last sample covers no time: it has no rate


def test_should_join_a_collector_runs_lag_but_not_across_runs() -> None:
    one_run = [progress(0, 0.01, 0, 5000), progress(3, 3.0, 5000, 0)]
    next_run = [progress(300, 0.01, 0, 800), progress(301, 1.0, 800, 0)]

    svg = svg_of(pipeline_charts(snapshot(read_progress=one_run + next_run)), "unread-bytes")

    assert len([e for e in svg.iter(SVG + "polyline")]) == 2
    assert titled(svg, "circle")[0] == "web-1: 4.88 KiB at 2026-11-22 10:00:00 UTC"


def test_should_give_each_collector_host_its_own_series() -> None:
    samples = [progress(0, 1.0, 100, 10), progress(1, 1.0, 100, 20, host="web-2")]

    svg = svg_of(pipeline_charts(snapshot(read_progress=samples)), "unread-bytes")

    tones = {e.get("class") for e in svg.iter(SVG + "circle")}
    assert tones == {"mark dot tone-blue", "mark dot tone-amber"}
    assert [e.findtext(SVG + "text") for e in svg.iter(SVG + "g")] == ["web-1", "web-2"]


def test_should_show_checkpoints_oldest_first_with_what_is_not_known_yet() -> None:
    checkpoints = [  # newest first, as the snapshot lists them
        checkpoint(3, sealed_after=None),
        checkpoint(2, sealed_after=0.2, lines=40),
        checkpoint(1, sealed_after=0.1, committed_after=42.0, lines=25, rejects=2),
    ]
    charts = pipeline_charts(snapshot(checkpoints=checkpoints))

    assert titled(svg_of(charts, "seal-latency"), "rect") == [
        "#1: request \u2192 sealed: 100 ms",
        "#2: request \u2192 sealed: 200 ms",
    ]
    assert titled(svg_of(charts, "seal-latency"), "line") == [
        "#3: request \u2192 sealed: not sealed yet"
    ]
    assert titled(svg_of(charts, "commit-latency")) == [
        "#1: sealed \u2192 committed: 42 s",
        "#2: sealed \u2192 committed: not committed yet",
        "#3: sealed \u2192 committed: not committed yet",
    ]
    assert titled(svg_of(charts, "lines")) == [
        "#1: lines: 25",
        "#2: lines: 40",
        "#3: lines: not sealed yet",
    ]
    assert titled(svg_of(charts, "rejects"), "rect") == ["#1: rejects: 2"]
