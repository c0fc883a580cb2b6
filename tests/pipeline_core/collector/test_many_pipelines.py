"""One collector serving many pipelines: isolation, fairness, priorities, send rates, adding
and removing pipelines while running, config reload and metrics."""

from __future__ import annotations

import logging
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.collector import (
    Collector,
    CollectorService,
    ConfigChange,
    ConfigSource,
    prometheus_text,
)
from pipeline_core.collector import _service as service_module
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._scheduler import ReadScheduler
from pipeline_core.config import PipelineConfig
from pipeline_core.metastore import Metastore
from pipeline_core.source import Chunk
from pipeline_core.testing import (
    RecordingSink,
    SwitchableSink,
    append,
    lines,
    staged_payloads,
    wait_until,
)
from tests.pipeline_core.collector.support import FAST_RUNNER, Tailing, delivered
from tests.support.pipelines import load, write_config


def pipeline(
    folder: Path, metastore_url: str, name: str, *, stub: bool = True, **extra: Any
) -> PipelineConfig:
    """Pipeline ``name`` reading ``folder/<name>/*.log``, with a stub sink group when asked."""
    sinks: dict[str, Any] = {}
    if stub:
        sinks = {
            "sinks": {"lake": {"type": "handoff"}, "stub": {"type": "null"}},
            "sink_groups": [
                {"name": "lake", "sinks": ["lake"]},
                {"name": "stub", "sinks": ["stub"], **FAST_RUNNER},
            ],
        }
    collector = {"read_chunk_bytes": 4096, **extra.pop("collector", {})}
    return load(
        folder / name,
        metastore_url,
        name=name,
        pattern=f"{folder}/{name}/*.log",
        collector=collector,
        **sinks,
        **extra,
    )


@pytest.mark.timeout(60)
def test_should_seal_each_pipeline_of_one_run_into_its_own_batches(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    a = pipeline(tmp_path, metastore_url, "alpha", stub=False)
    b = pipeline(tmp_path, metastore_url, "beta", stub=False)
    append(tmp_path / "alpha" / "app.log", *lines("alpha", 1000))
    append(tmp_path / "beta" / "app.log", *lines("beta", 700))
    collector = Collector()
    collector.add_pipeline(a, metastore)
    collector.add_pipeline(b, metastore)

    result = collector.run_once()

    assert result.pipelines is not None
    assert {name: r.lines for name, r in result.pipelines.items()} == {"alpha": 1000, "beta": 700}
    assert len(result.sealed) == 2
    assert sorted(staged_payloads(a)) == lines("alpha", 1000)
    assert sorted(staged_payloads(b)) == lines("beta", 700)


@pytest.mark.timeout(90)
def test_should_keep_serving_a_pipeline_while_another_ones_sink_is_down(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    stuck = pipeline(tmp_path, metastore_url, "stuck")
    healthy = pipeline(tmp_path, metastore_url, "healthy")
    down, up = SwitchableSink("stub", up=False), RecordingSink("stub")
    collector = Collector()
    collector.add_pipeline(stuck, metastore, sinks={"stub": down})
    collector.add_pipeline(healthy, metastore, sinks={"stub": up})
    tailing = Tailing(collector.run, collector.stop)
    append(tmp_path / "stuck" / "app.log", *lines("stuck", 20000))
    for burst in range(5):
        append(tmp_path / "healthy" / "app.log", *lines(f"healthy{burst}", 2000))
        wait_until(lambda n=burst: len(delivered(up)) >= (n + 1) * 2000)  # type: ignore[misc]
    metrics = {m.pipeline: m for m in collector.metrics()}
    assert metrics["stuck"].queues["process"].size <= metrics["stuck"].queues["process"].high
    assert delivered(down) == []

    down.up = True
    wait_until(lambda: set(delivered(down)) == set(lines("stuck", 20000)), timeout=40)
    result = tailing.stop()

    expected = [line for n in range(5) for line in lines(f"healthy{n}", 2000)]
    assert delivered(up) == expected
    assert result.pipelines is not None and set(result.pipelines) == {"stuck", "healthy"}


@pytest.mark.timeout(60)
def test_should_interleave_pipelines_fairly_and_read_higher_priorities_first(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    publish = ReadScheduler._publish_chunk

    def recording_publish(self: ReadScheduler, runtime: PipelineRuntime, chunk: Chunk) -> bool:
        published = publish(self, runtime, chunk)
        if published:
            order.append(runtime.name)
        return published

    monkeypatch.setattr(ReadScheduler, "_publish_chunk", recording_publish)
    collector = Collector()
    for name, priority in (("low", 0), ("high", 5), ("mid", 1)):
        config = pipeline(tmp_path, metastore_url, name, priority=priority)
        append(tmp_path / name / "app.log", *lines(name, 3000))
        collector.add_pipeline(config, metastore)

    collector.run_once()

    assert collector.pipelines == ["high", "mid", "low"]
    first_half = order[: len(order) // 2]
    counts = {name: first_half.count(name) for name in ("low", "mid", "high")}
    assert max(counts.values()) - min(counts.values()) <= 3, counts  # one chunk a turn
    assert order[:3] == ["high", "mid", "low"]


@pytest.mark.timeout(60)
def test_should_hold_a_pipeline_to_its_send_rate(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = pipeline(tmp_path, metastore_url, "paced", collector={"max_send_bytes_per_s": 100_000})
    append(tmp_path / "paced" / "app.log", *lines("paced", 15000))  # about 250 kB
    size = (tmp_path / "paced" / "app.log").stat().st_size
    sink = RecordingSink("stub")
    started = time.monotonic()

    Collector(config, metastore, sinks={"stub": sink}).run_once()

    # One second's worth goes at once; the rest at 100 kB/s.
    assert time.monotonic() - started >= (size - 100_000) / 100_000 * 0.9
    assert delivered(sink) == lines("paced", 15000)


@pytest.mark.timeout(90)
def test_should_add_and_remove_pipelines_while_running_and_lose_nothing(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    first = pipeline(tmp_path, metastore_url, "first", stub=False)
    second = pipeline(tmp_path, metastore_url, "second", stub=False)
    collector = Collector(first, metastore)
    tailing = Tailing(collector.run, collector.stop)
    append(tmp_path / "first" / "app.log", *lines("first", 500))
    wait_until(lambda: collector.metrics()[0].lines_read >= 500)

    collector.add_pipeline(second, metastore)
    append(tmp_path / "second" / "app.log", *lines("second", 300))
    wait_until(lambda: "second" in collector.pipelines)
    collector.remove_pipeline("first")
    wait_until(lambda: collector.pipelines == ["second"])
    result = tailing.stop()

    assert sorted(staged_payloads(first)) == lines("first", 500)
    assert sorted(staged_payloads(second)) == lines("second", 300)
    assert result.pipelines is not None and set(result.pipelines) == {"first", "second"}


@pytest.mark.timeout(90)
def test_should_follow_changes_of_a_pipeline_that_arrive_while_it_seals(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    web = pipeline(tmp_path, metastore_url, "web")
    down = SwitchableSink("stub", up=False)  # holds the barrier back: it stays sealing
    collector = Collector(web, metastore, sinks={"stub": down})
    tailing = Tailing(collector.run, collector.stop)
    append(tmp_path / "web" / "app.log", *lines("web", 300))
    wait_until(lambda: collector.metrics()[0].lines_read == 300)

    def state() -> tuple[str, int]:
        """The state of the pipeline served as ``web`` and the lines it read; none a moment
        while it is replaced."""
        served = collector.metrics()
        return (served[0].state, served[0].lines_read) if served else ("", 0)

    collector.remove_pipeline("web")
    wait_until(lambda: state() == ("removing", 300))
    collector.remove_pipeline("web")  # removed again: nothing changes
    changed = web.model_copy(
        update={"collector": web.collector.model_copy(update={"read_chunk_bytes": 8192})}
    )
    collector.replace_pipeline(changed, metastore)  # its config is back, changed
    wait_until(lambda: state() == ("replacing", 300))
    down.up = True
    wait_until(lambda: state() == ("reading", 0))  # served again, from its sealed offsets
    append(tmp_path / "web" / "app.log", *lines("after", 50))
    wait_until(lambda: state() == ("reading", 50))
    result = tailing.stop()

    assert delivered(down) == lines("web", 300)
    assert sorted(staged_payloads(web)) == sorted(lines("web", 300) + lines("after", 50))
    assert result.pipelines is not None and set(result.pipelines) == {"web"}


@pytest.mark.timeout(90)
def test_should_reload_a_folder_of_configs_and_serve_metrics(
    tmp_path: Path, metastore_url: str
) -> None:
    configs = tmp_path / "pipelines"
    write_config(configs, metastore_url, name="one", pattern=f"{tmp_path}/one/*.log")
    append(tmp_path / "one" / "app.log", *lines("one", 400))
    service = CollectorService(configs, metrics_port=0)
    tailing = Tailing(service.run, service.stop)
    wait_until(lambda: service.exporter is not None and service.exporter.port is not None)
    assert service.exporter is not None
    wait_until(lambda: any(m.lines_read >= 400 for m in service.collector.metrics()))

    write_config(configs, metastore_url, name="two", pattern=f"{tmp_path}/two/*.log")
    append(tmp_path / "two" / "app.log", *lines("two", 250))
    service.reload()
    wait_until(lambda: "two" in service.collector.pipelines)
    url = f"http://127.0.0.1:{service.exporter.port}/metrics"
    wait_until(lambda: 'sluice_read_lines_total{host="test-host",pipeline="two"}' in _get(url))

    changed = yaml.safe_load((configs / "one.yaml").read_text())
    changed["collector"]["read_chunk_bytes"] = 8192
    (configs / "one.yaml").write_text(yaml.safe_dump(changed))
    append(tmp_path / "one" / "app.log", *lines("one-after", 100))
    (configs / "two.yaml").unlink()
    service.reload()
    wait_until(lambda: service.collector.pipelines == ["one"])
    tailing.stop()

    one = pipeline(tmp_path, metastore_url, "one", stub=False)
    two = pipeline(tmp_path, metastore_url, "two", stub=False)
    staged_one = sorted(staged_payloads(one.model_copy(update={"data_dir": configs / "data"})))
    staged_two = sorted(staged_payloads(two.model_copy(update={"data_dir": configs / "data"})))
    assert staged_one == sorted(lines("one", 400) + lines("one-after", 100))
    assert staged_two == lines("two", 250)
    assert (configs / "data" / "collector" / "one.json").exists()


@pytest.mark.timeout(90)
def test_should_follow_config_changes_by_file_events_without_a_reload_or_a_poll(
    tmp_path: Path,
    metastore_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A config added to the folder, and one changed as Kubernetes changes a ConfigMap's (its
    files are symlinks through ``..data``, which is swapped by a rename), are served within
    seconds though the configs are looked at every minute only."""
    monkeypatch.setattr(service_module, "RELOAD_FALLBACK_SECONDS", 60.0)
    monkeypatch.setattr(service_module, "RELOAD_POLL_SECONDS", 60.0)
    caplog.set_level(logging.INFO, logger=service_module.__name__)
    configs = tmp_path / "pipelines"
    version = configs / "..v1"
    write_config(version, metastore_url, name="one", pattern=f"{tmp_path}/one/*.log")
    configs.mkdir(exist_ok=True)
    (configs / "..data").symlink_to("..v1")
    (configs / "one.yaml").symlink_to("..data/one.yaml")
    append(tmp_path / "one" / "app.log", *lines("one", 50))
    service = CollectorService(configs)
    tailing = Tailing(service.run, service.stop)
    wait_until(lambda: any(m.lines_read >= 50 for m in service.collector.metrics()))

    write_config(configs, metastore_url, name="two", pattern=f"{tmp_path}/two/*.log")
    wait_until(lambda: "two" in service.collector.pipelines, timeout=10)

    changed = yaml.safe_load((version / "one.yaml").read_text())
    changed["collector"]["read_chunk_bytes"] = 8192
    (configs / "..v2").mkdir()
    (configs / "..v2" / "one.yaml").write_text(yaml.safe_dump(changed))
    (configs / "..data_tmp").symlink_to("..v2")
    (configs / "..data_tmp").rename(configs / "..data")

    wait_until(lambda: "pipeline one changed" in caplog.messages, timeout=10)
    tailing.stop()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        text: str = response.read().decode()
        return text


def test_should_render_prometheus_text_with_labels(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = pipeline(tmp_path, metastore_url, "shown", stub=False)
    log = tmp_path / "shown" / "app.log"
    append(log, *lines("shown", 100))
    collector = Collector(config, metastore)
    collector.run_once()
    append(log, *lines("later", 10))

    (metrics,) = collector.metrics()
    text = prometheus_text([metrics], file_labels=True)

    assert metrics.lines_read == 100
    assert metrics.unread_bytes == len(b"".join(line + b"\n" for line in lines("later", 10)))
    assert "# TYPE sluice_read_bytes_total counter" in text
    assert f'sluice_file_unread_bytes{{host="test-host",path="{log}",pipeline="shown"}}' in text
    labels = 'host="test-host",pipeline="shown",queue="process"'
    high = float(config.collector.process_queue_size)
    assert f"sluice_queue_high_watermark_items{{{labels}}} {high}" in text


def test_config_source_reports_added_changed_and_removed_pipelines(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = tmp_path / "pipelines"
    write_config(folder, metastore_url, name="one")
    source = ConfigSource(folder)
    assert [c.name for c in source.load()] == ["one"]
    assert source.changes() == []

    write_config(folder, metastore_url, name="two")
    write_config(folder, metastore_url, name="one", collector={"read_chunk_bytes": 8192})
    events = {(e.change, e.name) for e in source.changes()}
    assert events == {(ConfigChange.ADDED, "two"), (ConfigChange.CHANGED, "one")}

    (folder / "two.yaml").unlink()
    (folder / "one.yaml").write_text("name: one\nsources: 3\n")  # invalid: keeps its config
    assert [(e.change, e.name) for e in source.changes()] == [(ConfigChange.REMOVED, "two")]
