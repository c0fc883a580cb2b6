"""The Prometheus families: conventional names and units, types, every digit of a counter, the
build info and process metrics on a registry of the collector's own."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pipeline_core.collector import (
    FileMetrics,
    MetricsExporter,
    PipelineMetrics,
    QueueMetrics,
    SinkGroupMetrics,
    UploadMetrics,
    metrics_file,
    metrics_registry,
    prometheus_text,
)
from pipeline_core.collector import _metrics_export as export
from pipeline_core.collector._metric_families import sluice_version

BIG = 12_345_678_901


def metrics(
    pipeline: str = "web", *, bytes_read: int = BIG, blocked: float = 2.5
) -> PipelineMetrics:
    return PipelineMetrics(
        pipeline=pipeline,
        host="node-1",
        state="reading",
        priority=0,
        lines_read=1_000_001,
        bytes_read=bytes_read,
        bytes_sent=BIG - 1,
        blocked_seconds=blocked,
        trees_in_flight=3,
        trees_replayed=2,
        truncated_unread_bytes=0,
        queues={"process": QueueMetrics(5, 8, 4, True, 7), "send": QueueMetrics(0, 8, 4, True, 0)},
        sink_groups=(SinkGroupMetrics("lake", 11, 4, 1, 2),),
        files=(
            FileMetrics(f"/logs/{pipeline}.log", "fp", "active", 1000, 400, 300, 200, "access"),
            FileMetrics(f"/logs/{pipeline}.log.1", "fp1", "rotated", 50, 20, 20, 20, "access"),
        ),
    )


def families(text: str) -> dict[str, tuple[str, list[tuple[dict[str, str], float]]]]:
    """Family name -> (type, [(labels, value)]), sample names with their suffixes."""
    parsed: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            parsed.setdefault(sample.name, (family.type, []))[1].append(
                (sample.labels, sample.value)
            )
    return parsed


def test_should_name_families_with_units_and_types() -> None:
    parsed = families(prometheus_text([metrics()]))

    expected = {
        "sluice_pipeline_state": "gauge",
        "sluice_read_lines_total": "counter",
        "sluice_read_events_total": "counter",
        "sluice_held_event_files": "gauge",
        "sluice_held_event_seconds": "gauge",
        "sluice_read_bytes_total": "counter",
        "sluice_sent_bytes_total": "counter",
        "sluice_blocked_seconds_total": "counter",
        "sluice_unread_bytes": "gauge",
        "sluice_truncated_unread_bytes_total": "counter",
        "sluice_in_flight_chunks": "gauge",
        "sluice_replayed_chunks_total": "counter",
        "sluice_queue_items": "gauge",
        "sluice_queue_high_watermark_items": "gauge",
        "sluice_queue_low_watermark_items": "gauge",
        "sluice_queue_refusals_total": "counter",
        "sluice_sink_group_delivered_batches_total": "counter",
        "sluice_sink_group_failed_deliveries_total": "counter",
        "sluice_sink_group_backoffs_total": "counter",
        "sluice_source_files": "gauge",
        "sluice_source_unread_bytes": "gauge",
        "sluice_source_read_offset_bytes": "gauge",
        "sluice_build_info": "gauge",  # an info family, as the text format 0.0.4 writes it
    }
    assert {name: kind for name, (kind, _) in parsed.items()} == expected
    base = {"pipeline": "web", "host": "node-1"}
    assert parsed["sluice_queue_items"][1] == [
        ({**base, "queue": "process"}, 5.0),
        ({**base, "queue": "send"}, 0.0),
    ]
    assert parsed["sluice_sink_group_failed_deliveries_total"][1] == [
        ({**base, "sink_group": "lake"}, 3.0)
    ]
    assert parsed["sluice_source_unread_bytes"][1] == [({**base, "source": "access"}, 630.0)]
    assert parsed["sluice_source_read_offset_bytes"][1] == [({**base, "source": "access"}, 420.0)]
    assert parsed["sluice_source_files"][1] == [({**base, "source": "access"}, 2.0)]
    assert parsed["sluice_pipeline_state"][1] == [({**base, "state": "reading"}, 1.0)]
    assert parsed["sluice_blocked_seconds_total"][1] == [(base, 2.5)]


def test_should_label_no_series_with_a_file_path_unless_asked() -> None:
    folded = prometheus_text([metrics()])
    per_file = families(prometheus_text([metrics()], file_labels=True))

    assert "/logs/" not in folded and "path=" not in folded
    assert "sluice_file_unread_bytes" not in folded
    base = {"pipeline": "web", "host": "node-1"}
    assert per_file["sluice_file_unread_bytes"][1] == [
        ({**base, "path": "/logs/web.log"}, 600.0),
        ({**base, "path": "/logs/web.log.1"}, 30.0),
    ]
    assert per_file["sluice_file_read_offset_bytes"][1][0] == (
        {**base, "path": "/logs/web.log"},
        400.0,
    )
    assert per_file["sluice_source_unread_bytes"][1] == [({**base, "source": "access"}, 630.0)]


def test_should_serve_file_paths_on_the_ops_registry_only_when_asked(tmp_path: Path) -> None:
    def exported(file_labels: bool) -> str:
        exporter = MetricsExporter(
            lambda: [metrics()], lambda name: tmp_path, interval=60, file_labels=file_labels
        )
        exporter.write()  # metrics.prom, from the registry /metrics serves
        served = generate_latest(exporter.registry).decode()
        return served + (tmp_path / "collector" / "metrics.prom").read_text()

    assert "/logs/web.log" not in exported(file_labels=False)
    assert "/logs/web.log" in exported(file_labels=True)


def test_should_export_a_counter_of_twelve_billion_bytes_exactly() -> None:
    parsed = families(prometheus_text([metrics()]))

    (_labels, value), *_ = parsed["sluice_read_bytes_total"][1]
    assert value == BIG and int(value) == 12_345_678_901
    assert parsed["sluice_sent_bytes_total"][1][0][1] == BIG - 1
    assert parsed["sluice_read_lines_total"][1][0][1] == 1_000_001


def test_should_tell_the_version_and_python_in_build_info() -> None:
    parsed = families(prometheus_text([]))

    assert parsed["sluice_build_info"][1] == [
        ({"version": sluice_version(), "python_version": platform.python_version()}, 1.0)
    ]
    assert sluice_version() != "unknown"  # the project is installed in its environment


def test_should_hold_process_metrics_on_a_registry_of_its_own() -> None:
    registry = metrics_registry(lambda: [metrics()])

    parsed = families(generate_latest(registry).decode())

    assert "process_cpu_seconds_total" in parsed
    assert "process_resident_memory_bytes" in parsed
    assert "python_info" in parsed
    assert "sluice_read_bytes_total" in parsed
    assert "sluice_read_bytes_total" not in families(generate_latest(REGISTRY).decode())


def test_should_take_one_snapshot_per_scrape() -> None:
    scrapes: list[int] = []

    def snapshot() -> list[PipelineMetrics]:
        scrapes.append(1)
        return [metrics(bytes_read=len(scrapes))]

    registry = metrics_registry(snapshot, process=False)
    assert scrapes == []  # registering took none
    first = families(generate_latest(registry).decode())
    second = families(generate_latest(registry).decode())

    assert first["sluice_read_bytes_total"][1][0][1] == 1
    assert second["sluice_read_bytes_total"][1][0][1] == 2


def test_should_write_each_data_dirs_pipelines_to_its_textfile(tmp_path: Path) -> None:
    homes = {"web": tmp_path / "a", "api": tmp_path / "b"}
    exporter = MetricsExporter(
        lambda: [metrics("web"), metrics("api")], lambda name: homes[name], interval=60
    )

    exporter.write()

    web = families((homes["web"] / "collector" / "metrics.prom").read_text())
    api = families((homes["api"] / "collector" / "metrics.prom").read_text())
    assert [labels["pipeline"] for labels, _ in web["sluice_read_bytes_total"][1]] == ["web"]
    assert [labels["pipeline"] for labels, _ in api["sluice_read_bytes_total"][1]] == ["api"]
    assert web["sluice_read_bytes_total"][1][0][1] == BIG
    assert "sluice_build_info" in web and "process_cpu_seconds_total" in web
    assert not list((homes["web"] / "collector").glob("metrics.prom.*"))  # renamed into place


def test_should_only_touch_a_metrics_file_whose_text_has_not_changed(tmp_path: Path) -> None:
    """A collector at rest rewrote every pipeline's file at every interval: with a hundred
    pipelines, most of its idle cost. An unchanged file keeps its inode, its time moves on
    (readers tell a live collector's file by it); a changed or deleted one is written."""
    current = {"bytes_read": 10}
    exporter = MetricsExporter(
        lambda: [metrics("web", bytes_read=current["bytes_read"])],
        lambda _: tmp_path,
        interval=60,
    )
    path = metrics_file(tmp_path, "web")
    exporter.write()
    first = path.stat()
    os.utime(path, (first.st_atime - 100, first.st_mtime - 100))

    exporter.write()
    touched = path.stat()
    current["bytes_read"] = 11
    exporter.write()
    changed = path.stat()
    path.unlink()
    exporter.write()

    assert touched.st_ino == first.st_ino and touched.st_mtime >= first.st_mtime
    assert changed.st_ino != first.st_ino
    assert json.loads(path.read_text())["bytes_read"] == 11  # written again once deleted


def test_should_make_the_textfile_again_only_when_a_pipeline_changed_or_it_is_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    current = {"bytes_read": 10}
    exporter = MetricsExporter(
        lambda: [metrics("web", bytes_read=current["bytes_read"])],
        lambda _: tmp_path,
        interval=60,
    )
    textfile = tmp_path / "collector" / "metrics.prom"
    exporter.write()
    made = textfile.stat().st_ino

    exporter.write()
    unchanged = textfile.stat().st_ino
    current["bytes_read"] = 11
    exporter.write()
    after_change = textfile.stat().st_ino
    monkeypatch.setattr(export, "TEXTFILE_REFRESH_SECONDS", 0.0)
    exporter.write()

    assert unchanged == made
    assert after_change != made
    assert families(textfile.read_text())["sluice_read_bytes_total"][1][0][1] == 11
    assert textfile.stat().st_ino != after_change  # made again once old


def test_should_count_events_and_files_holding_an_unfinished_event() -> None:
    held = dataclasses.replace(
        metrics(),
        events_read=400_000,
        files=(
            FileMetrics("/logs/app.log", "fp", "active", 1000, 400, 300, 200, "app", 2.5),
            FileMetrics("/logs/app.log.1", "fp1", "rotated", 50, 50, 50, 50, "app", None),
        ),
    )

    parsed = families(generate_latest(metrics_registry(lambda: [held])).decode())

    assert parsed["sluice_read_events_total"][1][0][1] == 400_000
    assert parsed["sluice_held_event_files"][1][0][1] == 1
    assert parsed["sluice_held_event_seconds"][1][0][1] == 2.5


def test_should_write_the_metrics_file_as_the_dataclasses_fields_and_the_unread_bytes() -> None:
    uploads = UploadMetrics(1, 2, False, 0, 1, 3, 4, 0, None, 0.5)
    for item in (metrics(), dataclasses.replace(metrics("up"), uploads=uploads)):
        expected = dataclasses.asdict(item)
        expected["unread_bytes"] = 600 + 30  # the two files' size - read offset
        for file, data in zip(item.files, expected["files"], strict=True):
            data["unread_bytes"] = file.unread_bytes

        assert item.to_dict() == expected
