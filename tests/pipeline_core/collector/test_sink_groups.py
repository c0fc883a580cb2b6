"""Sink groups through the whole collector: fan-out, failover and load balancing against real
HTTP servers, rewinds, penalty state in the metastore, and back-pressure from a slow sink."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.collector import Collector
from pipeline_core.collector import _checkpoint_driver as checkpoint_driver
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import EventDeliveryException
from pipeline_core.mailbox import ReportedThrowableError
from pipeline_core.metastore import Metastore, SinkStateRecord
from pipeline_core.testing import (
    FailingSink,
    FlakySink,
    RecordingSink,
    SlowSink,
    SwitchableSink,
    append,
    lines,
    staged_payloads,
    wait_until,
)
from tests.pipeline_core.collector.support import FAST_RUNNER, Tailing, delivered, with_stub_group
from tests.support.http_server import RecordingHttpServer
from tests.support.pipelines import load


def http_sink(server: RecordingHttpServer) -> dict[str, Any]:
    return {"type": "http", "url": server.url, "max_attempts": 1, "timeout_s": 2, "gzip": False}


def messages(*servers: RecordingHttpServer) -> list[bytes]:
    return [
        record["message"].encode()
        for server in servers
        for request in server.accepted()
        for record in request.ndjson()
    ]


def event_ids(*servers: RecordingHttpServer) -> set[str]:
    return {
        record["event_id"]
        for server in servers
        for request in server.accepted()
        for record in request.ndjson()
    }


def received_at_least(count: int, *servers: RecordingHttpServer) -> bool:
    return len(messages(*servers)) >= count


@pytest.fixture
def servers() -> Iterator[tuple[RecordingHttpServer, RecordingHttpServer]]:
    primary, backup = RecordingHttpServer().start(), RecordingHttpServer().start()
    try:
        yield primary, backup
    finally:
        primary.stop()
        backup.stop()


@pytest.mark.timeout(60)
def test_should_deliver_every_line_to_every_sink_group(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    out = tmp_path / "out" / "copy.log"
    config = load(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "copy": {"type": "file", "path": str(out)}},
    )
    append(tmp_path / "logs" / "access.log", *lines("a", 3000))

    Collector(config, metastore).run_once()
    assert out.read_bytes().splitlines() == lines("a", 3000)
    assert sorted(staged_payloads(config)) == lines("a", 3000)


@pytest.mark.timeout(90)
def test_should_fail_over_to_the_backup_and_back_without_losing_a_line(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    servers: tuple[RecordingHttpServer, RecordingHttpServer],
) -> None:
    primary, backup = servers
    config = failover_config(tmp_path, metastore_url, primary, backup)
    log = tmp_path / "logs" / "access.log"
    collector = Collector(config, metastore)
    tailing = Tailing(collector.run, collector.stop)
    append(log, *lines("first", 300))
    wait_until(lambda: len(messages(primary)) >= 300)

    primary.stop()
    append(log, *lines("second", 300))
    wait_until(lambda: set(lines("second", 300)) <= set(messages(backup)))

    primary.start()
    time.sleep(2.2)  # the primary's first penalty is 2 s; it is retried once that has passed
    append(log, *lines("third", 300))
    wait_until(lambda: set(lines("third", 300)) <= set(messages(primary, backup)))
    tailing.stop()

    written = lines("first", 300) + lines("second", 300) + lines("third", 300)
    assert set(messages(primary, backup)) == set(written)
    assert len(event_ids(primary, backup)) == len(written)
    assert set(lines("first", 300)) <= set(messages(primary))
    assert set(lines("third", 300)) & set(messages(primary)), "the primary was not re-elected"
    assert sorted(staged_payloads(config)) == sorted(written)


@pytest.mark.timeout(90)
def test_should_balance_over_both_servers_and_route_around_a_dead_one(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    servers: tuple[RecordingHttpServer, RecordingHttpServer],
) -> None:
    first, second = servers
    config = load(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "a": http_sink(first), "b": http_sink(second)},
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {
                "name": "web",
                "processor": "load_balance",
                "sinks": ["a", "b"],
                "backoff": True,
                **FAST_RUNNER,
            },
        ],
        collector={"read_chunk_bytes": 4096},
    )
    log = tmp_path / "logs" / "access.log"
    collector = Collector(config, metastore)
    tailing = Tailing(collector.run, collector.stop)
    for burst in range(10):  # one delivery batch per burst at least
        append(log, *lines("first", 2000)[burst * 200 : (burst + 1) * 200])
        wait_until(functools.partial(received_at_least, (burst + 1) * 200, first, second))
    assert messages(first) and messages(second), "both servers take a share"

    second.stop()
    append(log, *lines("second", 2000))
    wait_until(lambda: set(lines("second", 2000)) <= set(messages(first, second)))
    tailing.stop()

    written = lines("first", 2000) + lines("second", 2000)
    assert set(messages(first, second)) == set(written)
    assert len(event_ids(first, second)) == len(written)


@pytest.mark.timeout(60)
def test_should_skip_a_sink_the_metastore_says_is_penalised_after_a_restart(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    servers: tuple[RecordingHttpServer, RecordingHttpServer],
) -> None:
    primary, backup = servers
    config = failover_config(tmp_path, metastore_url, primary, backup)
    metastore.save_sink_states(
        config.name,
        config.collector.host,
        [SinkStateRecord("web", "primary", 4, time.time() + 600, time.time(), "ConnectionError")],
    )
    append(tmp_path / "logs" / "access.log", *lines("a", 500))

    Collector(config, metastore).run_once()

    assert primary.requests == []
    assert set(messages(backup)) == set(lines("a", 500))


@pytest.mark.timeout(60)
def test_should_remember_a_failed_sink_in_the_metastore(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    servers: tuple[RecordingHttpServer, RecordingHttpServer],
) -> None:
    primary, backup = servers
    config = failover_config(tmp_path, metastore_url, primary, backup)
    primary.stop()
    append(tmp_path / "logs" / "access.log", *lines("a", 500))
    started = time.time()

    Collector(config, metastore).run_once()

    (state,) = [s for s in metastore.sink_states(config.name, config.collector.host)]
    assert (state.sink_group, state.sink, state.consecutive_failures) == ("web", "primary", 1)
    assert state.excluded_until >= started + 2
    assert state.last_error
    assert set(messages(backup)) == set(lines("a", 500))


def failover_config(
    folder: Path, metastore_url: str, primary: RecordingHttpServer, backup: RecordingHttpServer
) -> PipelineConfig:
    return load(
        folder,
        metastore_url,
        sinks={
            "lake": {"type": "handoff"},
            "primary": http_sink(primary),
            "backup": http_sink(backup),
        },
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {
                "name": "web",
                "processor": "failover",
                "sinks": ["primary", "backup"],
                "priorities": {"primary": 10, "backup": 5},
                **FAST_RUNNER,
            },
        ],
    )


@pytest.mark.timeout(60)
def test_should_rewind_a_refused_batch_and_deliver_it_exactly_once(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub_group(tmp_path, metastore_url, collector={"read_chunk_bytes": 4096})
    flaky = FlakySink("stub", failures=3)
    append(tmp_path / "logs" / "access.log", *lines("a", 2000))

    Collector(config, metastore, sinks={"stub": flaky}).run_once()

    assert flaky.calls >= 4
    assert delivered(flaky) == lines("a", 2000)
    assert sorted(staged_payloads(config)) == lines("a", 2000)


@pytest.mark.timeout(60)
def test_should_stop_with_the_error_when_the_rewind_strategy_gives_up_and_seal_nothing(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub_group(
        tmp_path,
        metastore_url,
        group={"rewind": "eventually_give_up", "rewind_max_attempts": 2},
        collector={"read_chunk_bytes": 4096},
    )
    append(tmp_path / "logs" / "access.log", *lines("a", 200))

    with pytest.raises(ReportedThrowableError) as raised:
        Collector(config, metastore, sinks={"stub": FailingSink("stub")}).run_once()
    assert isinstance(raised.value.__cause__, ConnectionError | EventDeliveryException)
    (pending,) = metastore.unsealed_for_host(config.name, config.collector.host)
    assert metastore.batches(pending) == []  # the lake group's folder is not a sealed batch

    working = RecordingSink("stub")
    sealed = Collector(config, metastore, sinks={"stub": working}).run_once().sealed
    assert [s.checkpoint_id for s in sealed] == [pending]
    assert delivered(working) == lines("a", 200)
    assert sorted(staged_payloads(config)) == lines("a", 200)


@pytest.mark.timeout(90)
def test_should_hold_the_reader_back_while_a_sink_is_slow_and_lose_nothing(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(
        tmp_path,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "stub": {"type": "null"}},
        collector={
            "read_chunk_bytes": 4096,
            "ring_size": 4,
            "process_queue_size": 3,
            "send_queue_size": 3,
        },
    )
    slow = SlowSink("stub", delay_s=0.01)
    append(tmp_path / "logs" / "access.log", *lines("a", 20000))
    collector = Collector(config, metastore, sinks={"stub": slow})

    collector.run_once()

    stats = collector.stage_stats()
    assert stats["process"].feedbacks > 0, "the process queue never reached its high watermark"
    (metrics,) = collector.metrics()
    assert metrics.blocked_seconds > 0, "the reader was never held back"
    assert stats["process"].size == stats["send"].size == 0
    assert delivered(slow) == lines("a", 20000)
    assert sorted(staged_payloads(config)) == lines("a", 20000)


@pytest.mark.timeout(90)
def test_should_stop_unsealed_when_a_sink_group_cannot_deliver_until_the_stop_deadline(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stop waits for the last seal at most ``STOP_SEAL_SECONDS``: a group that never
    delivers does not keep the collector from stopping, and what it held back is read again
    (and sealed, once) by the next run."""
    monkeypatch.setattr(checkpoint_driver, "STOP_SEAL_SECONDS", 2.0)
    config = with_stub_group(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", *lines("a", 200))
    down = SwitchableSink("stub", up=False)
    collector = Collector(config, metastore, sinks={"stub": down})
    tailing = Tailing(collector.run, collector.stop)
    wait_until(lambda: down.calls > 0)

    started = time.monotonic()
    tailing.stop()
    stopped_after = time.monotonic() - started

    assert stopped_after < 15
    assert any("stopping without sealing" in r.getMessage() for r in caplog.records)
    checkpoints = metastore.checkpoints(config.name)
    assert checkpoints and not [c for c in checkpoints if metastore.batches(c.checkpoint_id)]
    up = RecordingSink("stub")
    Collector(config, metastore, sinks={"stub": up}).run_once()
    assert sorted(staged_payloads(config)) == lines("a", 200)
    assert sorted(delivered(up)) == lines("a", 200)
