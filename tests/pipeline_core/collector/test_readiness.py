"""Readiness and liveness: the rules, and a running collector's /health and /ready answers when
its lease is lost or its metastore is unreachable."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline_core.collector import Collector, MetricsExporter
from pipeline_core.collector import _feedback as feedback
from pipeline_core.collector import _readiness as readiness
from pipeline_core.collector._readiness import ControlStatus, LeaseStatus
from pipeline_core.errors import CollectorBusyError, MetastoreError
from pipeline_core.mailbox import ReportedThrowableError
from pipeline_core.metastore import Metastore
from pipeline_core.testing import SwitchableSink, append, lines, wait_until
from tests.pipeline_core.collector.support import Tailing, with_stub_group
from tests.support.lease_holders import HolderProcess
from tests.support.metastore_outages import metastore_write_lock, take_database_down
from tests.support.pipelines import load
from tests.support.postgres import postgres_url

LEASE_SECONDS = 3.0
"""Renewed every second (the control loop's poll): a short lease, not one that lapses."""


def lease(**changes: object) -> LeaseStatus:
    status = LeaseStatus("web", "node-1", lease_until=110.0, reached_at=100.0)
    return LeaseStatus(**{**status.__dict__, **changes})  # type: ignore[arg-type]


# -- the rules -----------------------------------------------------------------------------------


def test_should_be_ready_while_leases_are_held_and_metastores_answer() -> None:
    status = ControlStatus((lease(), lease(pipeline="api")))

    assert status.readiness(now=105.0, grace=10.0).ok
    assert ControlStatus().readiness(now=105.0).ok  # nothing served: nothing missing


def test_should_not_be_ready_with_a_lease_lost_or_expired() -> None:
    lost = ControlStatus((lease(), lease(pipeline="api").taken_over()))
    expired = ControlStatus((lease(lease_until=104.0),))

    assert lost.readiness(now=105.0).reason == (
        "lease of api on node-1 lost: another collector took it over"
    )
    assert expired.readiness(now=105.0).reason == (
        "lease of web on node-1 expired 1.0 s ago (not renewed)"
    )


def test_should_name_the_metastore_when_a_lease_expired_because_it_cannot_be_reached() -> None:
    """A metastore down longer than the lease: the reason is the outage, not only the lease
    it made expire (first seen with the metastore's PostgreSQL stopped under a collector)."""
    unreachable = ControlStatus(
        (lease(lease_until=104.0).failed(MetastoreError("connection refused")),)
    )

    assert unreachable.readiness(now=105.0, grace=10.0).reason == (
        "lease of web on node-1 expired 1.0 s ago (not renewed): metastore unreachable for "
        "5.0 s: MetastoreError: connection refused"
    )


def test_should_ride_out_a_metastore_blip_and_not_an_outage() -> None:
    failing = ControlStatus((lease().failed(MetastoreError("connection refused\nmore")),))

    assert failing.readiness(now=105.0, grace=10.0).ok
    result = failing.readiness(now=108.0, grace=5.0)
    assert not result.ok
    assert result.reason == (
        "metastore of web on node-1 unreachable for 8.0 s: MetastoreError: connection refused"
    )
    assert ControlStatus((lease().failed(OSError("x")).reached(107.0),)).readiness(108.0, 5.0).ok


def test_should_not_be_ready_while_a_metastore_query_hangs() -> None:
    waiting = ControlStatus((lease(),), waiting_since=101.0)

    assert waiting.readiness(now=102.0, grace=5.0).ok
    assert waiting.readiness(now=107.0, grace=5.0).reason == (
        "the metastore has not answered for 6.0 s"
    )


# -- a running collector -------------------------------------------------------------------------


def probe(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=5) as response:
            return response.status, json.loads(response.read())["reason"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["reason"]


@contextmanager
def serving(tmp_path: Path, collector: Collector) -> Iterator[MetricsExporter]:
    exporter = MetricsExporter(
        collector.metrics,
        lambda _: tmp_path / "data",
        address="127.0.0.1:0",
        probes=collector,
        interval=60,
    ).start()
    try:
        yield exporter
    finally:
        exporter.stop()


@pytest.fixture
def collector(tmp_path: Path, metastore_url: str, metastore: Metastore) -> Collector:
    config = load(tmp_path, metastore_url, collector={"lease_seconds": LEASE_SECONDS})
    append(tmp_path / "logs" / "access.log", *lines("a", 100))
    return Collector(config, metastore)


@pytest.mark.timeout(60)
def test_should_be_live_and_ready_while_collecting_and_neither_once_stopped(
    tmp_path: Path, collector: Collector
) -> None:
    with serving(tmp_path, collector) as exporter:
        port = exporter.port
        assert port is not None
        assert probe(port, "health") == (200, "starting")
        assert probe(port, "ready") == (503, "starting: no lease taken yet")
        tailing = Tailing(collector.run, collector.stop)
        wait_until(lambda: probe(port, "ready") == (200, "ok"))
        time.sleep(2 * LEASE_SECONDS)  # renewed meanwhile
        assert probe(port, "ready") == (200, "ok")
        assert probe(port, "health") == (200, "ok")
        tailing.stop()

        assert probe(port, "health") == (503, "stopped")
        assert probe(port, "ready") == (503, "stopped")


@pytest.mark.timeout(60)
def test_should_not_be_ready_once_another_collector_took_the_lease(
    tmp_path: Path, collector: Collector, metastore: Metastore
) -> None:
    with serving(tmp_path, collector) as exporter, HolderProcess("test-host") as other:
        port = exporter.port
        assert port is not None
        tailing = Tailing(collector.run, collector.stop)
        wait_until(lambda: probe(port, "ready") == (200, "ok"))
        ours = metastore.lease_holder("web_access", "test-host")
        assert ours is not None

        def take_over() -> bool:  # between our renewals
            metastore.release_lease("web_access", "test-host", ours)
            return metastore.acquire_lease("web_access", "test-host", other.holder, 60)

        wait_until(take_over)
        wait_until(lambda: "lost" in probe(port, "ready")[1])
        status, reason = probe(port, "ready")
        wait_until(lambda: tailing.error is not None)  # the run ends: it may not read on
        with pytest.raises(ReportedThrowableError) as raised:
            tailing.stop()

        assert status == 503
        assert "lease of web_access on test-host lost: another collector took it over" in reason
        assert isinstance(raised.value.__cause__, CollectorBusyError), raised.value
        assert probe(port, "health") == (503, "stopped")


@contextmanager
def metastore_unreachable(metastore_url: str, seconds: float) -> Iterator[None]:
    """The metastore out of reach for about ``seconds``: its PostgreSQL database refusing
    connections, or a SQLite database write-locked (the lease's renewal hangs)."""
    server = postgres_url()
    if server is None:
        with metastore_write_lock(metastore_url):
            yield
            time.sleep(max(0.0, seconds))
        return
    database = sa.make_url(metastore_url).database
    assert database is not None
    back = take_database_down(server, database, seconds)
    yield
    assert back.wait(seconds + 30)


@pytest.mark.timeout(90)
def test_should_not_be_ready_while_the_metastore_is_unreachable_and_be_again_after(
    tmp_path: Path,
    collector: Collector,
    metastore_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readiness, "METASTORE_GRACE_SECONDS", 0.3)
    with serving(tmp_path, collector) as exporter:
        port = exporter.port
        assert port is not None
        tailing = Tailing(collector.run, collector.stop)
        wait_until(lambda: probe(port, "ready") == (200, "ok"))
        reasons: list[str] = []
        with metastore_unreachable(metastore_url, seconds=4.0):

            def unready() -> bool:
                status, reason = probe(port, "ready")
                reasons.append(reason)
                return status == 503

            wait_until(unready, timeout=10)
            assert probe(port, "health") == (200, "ok")  # alive all the same
        wait_until(lambda: probe(port, "ready") == (200, "ok"), timeout=30)
        tailing.stop()

    assert any("metastore" in reason or "expired" in reason for reason in reasons), reasons


@pytest.mark.timeout(60)
def test_should_sweep_every_second_only_while_trees_are_in_flight_and_stay_live_idle(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acker's timeout sweep is mail to the mailbox thread: every second, it woke an idle
    collector for nothing. Idle, it is the liveness probe's heartbeat alone."""
    monkeypatch.setattr(feedback, "IDLE_SWEEP_SECONDS", 3.0)
    monkeypatch.setattr(readiness, "MAILBOX_STALL_SECONDS", 4.0)
    sweeps: list[float] = []
    on_sweep = feedback.Feedback._on_sweep

    def counted(self: feedback.Feedback) -> None:
        sweeps.append(time.monotonic())
        on_sweep(self)

    monkeypatch.setattr(feedback.Feedback, "_on_sweep", counted)
    sink = SwitchableSink("stub", up=False)  # deliveries fail: the trees stay in flight
    config = with_stub_group(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", *lines("a", 10))
    collector = Collector(config, metastore, sinks={"stub": sink})
    tailing = Tailing(collector.run, collector.stop)
    try:
        wait_until(lambda: collector.metrics()[0].trees_in_flight > 0)
        started = len(sweeps)
        time.sleep(3.0)
        in_flight = len(sweeps) - started
        sink.up = True
        wait_until(lambda: collector.metrics()[0].trees_in_flight == 0, 20)
        time.sleep(1.5)
        started = len(sweeps)
        time.sleep(6.0)
        idle = len(sweeps) - started
        live = collector.liveness()
    finally:
        tailing.stop()

    assert in_flight >= 2, in_flight
    assert idle <= 3, idle  # 6 at one a second
    assert live.ok, live.reason
