"""The control loop: it works from the snapshot it was sent, and nothing but a stop ends it."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import pytest

from pipeline_core.collector import Collector, CollectorMode, PipelineState
from pipeline_core.collector import _control_loop as control_loop
from pipeline_core.collector import _request_watch as request_watch
from pipeline_core.collector._control_loop import (
    CONTROL_POLL_SECONDS,
    ControlLoop,
    WatchedPipeline,
    WatchList,
)
from pipeline_core.collector._launcher import lease_holder
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import CheckpointState, Metastore, PollingRequestProbe, RequestProbe
from pipeline_core.testing import append, wait_until
from tests.pipeline_core.collector.support import PipeProbe, Tailing
from tests.support.pipelines import load


class AlwaysChanged(RequestProbe):
    def changed(self) -> bool:
        return True


class FlakyMetastore:
    """Unreachable for the first ``outages`` queries of each kind; one request pending."""

    def __init__(self, *, outages: int = 1, lease_free: bool = True) -> None:
        self.outages = outages
        self.lease_free = lease_free
        self.renewals = 0
        self.queries = 0

    def acquire_lease(self, name: str, host: str, holder: str, seconds: float) -> bool:
        self.renewals += 1
        if self.renewals <= self.outages:
            raise MetastoreError("the metastore is unreachable")
        return self.lease_free

    def acquire_leases(self, leases: list[tuple[str, str, str, float]]) -> list[bool]:
        return [self.acquire_lease(*lease) for lease in leases]

    def unsealed_for_hosts(
        self, pipelines: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], list[int]]:
        self.queries += 1
        if self.queries <= self.outages:
            raise MetastoreError("the metastore is unreachable")
        return {pipeline: [7] for pipeline in pipelines}

    def request_probe(self) -> RequestProbe:
        return AlwaysChanged()


def watching(metastore: FlakyMetastore, sweep_every: float = 0.05) -> WatchList:
    watched = WatchedPipeline("web", "test-host", "me", cast(Metastore, metastore), 1.5)
    return WatchList((watched,), sweep_every)


class Outbox:
    def __init__(self) -> None:
        self.sweeps = 0
        self.requests: list[tuple[str, int]] = []
        self.lost: list[str] = []
        self.threads: set[threading.Thread] = set()

    def sweep(self) -> None:
        self.threads.add(threading.current_thread())
        self.sweeps += 1

    def request(self, name: str, checkpoint_id: int) -> None:
        self.requests.append((name, checkpoint_id))

    def lease_lost(self, name: str) -> None:
        self.lost.append(name)

    def loop(self, mode: CollectorMode = CollectorMode.CONTINUOUS) -> ControlLoop:
        return ControlLoop(
            mode, sweep=self.sweep, request_checkpoint=self.request, lease_lost=self.lease_lost
        )


@pytest.mark.timeout(20)
def test_should_renew_forward_and_sweep_through_metastore_outages() -> None:
    outbox = Outbox()
    metastore = FlakyMetastore()
    loop = outbox.loop()
    loop.watch(watching(metastore))
    loop.start()
    try:
        wait_until(lambda: metastore.renewals >= 2 and bool(outbox.requests) and outbox.sweeps >= 3)
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert outbox.requests == [("web", 7)]  # once, after the outage
    assert outbox.lost == []
    assert outbox.threads != {threading.current_thread()}


@pytest.mark.timeout(20)
def test_should_forward_a_request_again_while_it_still_waits_for_this_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request the mailbox dropped (its pipeline not served yet) is not lost until stop."""
    monkeypatch.setattr(control_loop, "REFORWARD_SECONDS", 0.2)
    outbox = Outbox()
    metastore = FlakyMetastore(outages=0)
    loop = outbox.loop()
    loop.watch(watching(metastore))
    loop.start()
    try:
        wait_until(lambda: len(outbox.requests) >= 3)
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert set(outbox.requests) == {("web", 7)}


@pytest.mark.timeout(20)
def test_should_ask_a_metastore_once_a_turn_for_all_its_pipelines() -> None:
    """A hundred pipelines in one metastore: one query a turn, not one per pipeline (the
    control thread of an idle collector spent 6 % of a core asking each in turn)."""
    outbox = Outbox()
    metastore = FlakyMetastore(outages=0)
    names = [f"web-{index:03d}" for index in range(100)]
    watched = tuple(
        WatchedPipeline(name, "test-host", "me", cast(Metastore, metastore), 60.0) for name in names
    )
    loop = outbox.loop()
    loop.watch(WatchList(watched, 10.0))
    loop.start()
    try:
        wait_until(lambda: len(outbox.requests) >= len(names))
        queries = metastore.queries
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert sorted(outbox.requests) == [(name, 7) for name in names]
    assert queries <= 2  # the turn that forwarded them all, and perhaps a probe's


@pytest.mark.timeout(20)
def test_should_report_a_lease_another_collector_took_over() -> None:
    outbox = Outbox()
    metastore = FlakyMetastore(outages=0, lease_free=False)
    loop = outbox.loop(CollectorMode.ONCE)
    loop.watch(watching(metastore))
    loop.start()
    try:
        wait_until(lambda: outbox.lost == ["web"])
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert outbox.requests == []  # one-shot runs forward no requests
    assert metastore.queries == 0


@pytest.mark.timeout(20)
def test_should_watch_only_what_the_last_snapshot_names() -> None:
    outbox = Outbox()
    metastore = FlakyMetastore(outages=0)
    loop = outbox.loop()
    loop.watch(watching(metastore))
    loop.watch(WatchList((), CONTROL_POLL_SECONDS))  # the pipeline was removed meanwhile
    loop.start()
    try:
        wait_until(lambda: outbox.sweeps >= 1, timeout=5)
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert (metastore.renewals, metastore.queries, outbox.requests) == (0, 0, [])


def test_should_snapshot_the_pipelines_not_done_and_the_shortest_sweep(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    configs = [
        load(tmp_path / "fast", metastore_url, name="fast", collector={"acker_timeout_s": 0.9}),
        load(tmp_path / "slow", metastore_url, name="slow"),
    ]
    runtimes = [
        PipelineRuntime(config, metastore, lease_holder(config, "test"), None) for config in configs
    ]

    snapshot = WatchList.of(runtimes)
    runtimes[0].state = PipelineState.DONE  # its lease is no longer renewed

    assert [(p.name, p.holder, p.lease_seconds) for p in snapshot.pipelines] == [
        (r.name, r.holder, r.config.collector.lease_seconds) for r in runtimes
    ]
    assert [p.name for p in WatchList.of(runtimes).pipelines] == ["slow"]
    assert snapshot.sweep_every == pytest.approx(0.3)
    assert WatchList.of(runtimes).sweep_every == pytest.approx(0.3)
    assert WatchList.of([]).sweep_every == CONTROL_POLL_SECONDS
    for runtime in runtimes:
        runtime.watcher.close()


@pytest.mark.timeout(20)
def test_should_publish_what_it_learns_of_the_lease_and_the_metastore() -> None:
    outbox = Outbox()
    metastore = FlakyMetastore(outages=1)
    loop = outbox.loop()
    loop.watch(watching(metastore))
    loop.start()
    try:
        wait_until(lambda: metastore.queries >= 1 and metastore.renewals >= 1)
        wait_until(lambda: loop.status.pipelines[0].error is None and metastore.renewals >= 2)
        recovered, seen_at = loop.status, time.monotonic()
        metastore.lease_free = False
        wait_until(lambda: loop.status.pipelines[0].lost)
    finally:
        loop.stop()
        loop.join(timeout=5)

    (web,) = recovered.pipelines
    assert (web.pipeline, web.host, web.lost) == ("web", "test-host", False)
    assert recovered.readiness(seen_at, grace=0.0).ok
    assert outbox.lost == ["web"]
    assert "lost" in loop.status.readiness(time.monotonic()).reason


@pytest.mark.timeout(20)
def test_should_report_a_failing_metastore_in_its_status() -> None:
    outbox = Outbox()
    metastore = FlakyMetastore(outages=10**6)
    loop = outbox.loop()
    loop.watch(watching(metastore))
    loop.start()
    try:
        wait_until(lambda: any(p.error for p in loop.status.pipelines))
    finally:
        loop.stop()
        loop.join(timeout=5)

    (web,) = loop.status.pipelines
    assert web.error == "MetastoreError: the metastore is unreachable"
    assert not loop.status.readiness(time.monotonic(), grace=0.0).ok


@pytest.mark.timeout(60)
def test_should_forward_a_request_as_it_is_made_without_looking_every_so_often(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control thread waits on the metastore's request probe (inotify on SQLite's folder,
    PostgreSQL's LISTEN socket): with its once-a-second query and its fallback look both set
    far off, a request is still sealed at once."""
    monkeypatch.setattr(control_loop, "CONTROL_POLL_SECONDS", 30.0)
    monkeypatch.setattr(request_watch, "REQUEST_PROBE_SECONDS", 30.0)
    config = load(tmp_path, metastore_url, collector={"acker_timeout_s": 90.0})
    append(tmp_path / "logs" / "access.log", b"a line")
    collector = Collector(config, metastore)
    tailing = Tailing(collector.run, collector.stop)
    try:
        wait_until(lambda: metastore.lease_holder(config.name, config.collector.host) is not None)
        time.sleep(0.5)  # the control thread is waiting
        requested = metastore.request_checkpoint(config.name, "run-1").checkpoint_id
        started = time.monotonic()
        wait_until(lambda: metastore.checkpoint(requested).state is CheckpointState.SEALED, 20)
        elapsed = time.monotonic() - started
    finally:
        tailing.stop()

    assert elapsed < 5.0


@pytest.mark.timeout(20)
def test_should_write_nothing_into_a_reused_descriptor_when_told_again_after_it_ended() -> None:
    """A stop or watch after the loop ended (a lost lease ends it, then the collector stops it)
    must not write its wake byte into the descriptor number its closed pipe left: the next
    socket or file opened gets that number (an ops-server reply once began with that byte)."""
    outbox = Outbox()
    loop = outbox.loop()
    loop.start()
    loop.stop()
    loop.join(timeout=5)
    assert not loop.alive
    read_end, write_end = os.pipe()  # the lowest free numbers: those the loop's pipe had
    os.set_blocking(read_end, False)
    try:
        loop.stop()
        loop.watch(watching(FlakyMetastore()))

        with pytest.raises(BlockingIOError):
            os.read(read_end, 16)
    finally:
        os.close(read_end)
        os.close(write_end)


class BatchRecordingMetastore(FlakyMetastore):
    def __init__(self) -> None:
        super().__init__(outages=0)
        self.batches: list[list[str]] = []

    def acquire_leases(self, leases: list[tuple[str, str, str, float]]) -> list[bool]:
        self.batches.append(sorted(lease[0] for lease in leases))
        return super().acquire_leases(leases)


@pytest.mark.timeout(30)
def test_should_renew_the_leases_of_one_metastore_together() -> None:
    """Renewed every 1.0, 1.1 and 1.2 s: once the first is due, the others (due within half
    their period) are renewed with it, in one transaction, instead of one each at later
    turns."""
    metastore = BatchRecordingMetastore()
    pipelines = tuple(
        WatchedPipeline(f"p{n}", "test-host", "me", cast(Metastore, metastore), 3.0 + 0.3 * n)
        for n in range(3)
    )
    outbox = Outbox()
    loop = outbox.loop()
    loop.watch(WatchList(pipelines, CONTROL_POLL_SECONDS))
    loop.start()
    try:
        wait_until(lambda: len(metastore.batches) >= 2, timeout=20)
    finally:
        loop.stop()
        loop.join(timeout=5)

    assert metastore.batches[:2] == [["p0", "p1", "p2"]] * 2


class SlowRenewingMetastore(FlakyMetastore):
    """Each renewal takes ``seconds`` (a commit on a loaded server); records when each began,
    the moment a database's clock measures its lease from."""

    def __init__(self, seconds: float) -> None:
        super().__init__(outages=0)
        self.seconds = seconds
        self.started: list[float] = []

    def acquire_leases(self, leases: list[tuple[str, str, str, float]]) -> list[bool]:
        self.started.append(time.monotonic())
        time.sleep(self.seconds)
        return super().acquire_leases(leases)


def renewal_gaps(metastore: SlowRenewingMetastore, lease: float, count: int) -> list[float]:
    """The time between the starts of ``count`` renewals of a ``lease``-second lease."""
    pipeline = WatchedPipeline("web", "test-host", "me", cast(Metastore, metastore), lease)
    loop = Outbox().loop()
    loop.watch(WatchList((pipeline,), 10.0))
    loop.start()
    try:
        wait_until(lambda: len(metastore.started) >= count + 1, timeout=30)
    finally:
        loop.stop()
        loop.join(timeout=5)
    starts = metastore.started
    return [later - earlier for earlier, later in itertools.pairwise(starts)]


@pytest.mark.timeout(40)
def test_should_renew_a_lease_shorter_than_three_polls_a_third_of_it_apart() -> None:
    """A 1.2 s lease is renewed every 0.4 s, not at the next of the thread's 1 s polls:
    renewed at the polls, a late poll let it lapse."""
    gaps = renewal_gaps(SlowRenewingMetastore(0.0), lease=1.2, count=4)

    assert max(gaps) < 0.8, gaps  # 1.0 s apart at the polls


@pytest.mark.timeout(40)
def test_should_time_the_next_renewal_from_the_start_of_a_slow_one() -> None:
    """A renewal that takes 0.8 s of a 2 s lease: the database measured the lease from its
    start, so the next is due a third of the lease after that, not after it returned (then
    the next poll found it not due yet, and the one after came as the lease lapsed)."""
    gaps = renewal_gaps(SlowRenewingMetastore(0.8), lease=2.0, count=3)

    assert max(gaps) < 1.5, gaps  # 2.0 s apart: the lease lapsed between them


class QuietProbedMetastore(FlakyMetastore):
    def __init__(self, probe: RequestProbe) -> None:
        super().__init__(outages=0)
        self.probe = probe

    def request_probe(self) -> RequestProbe:
        return self.probe


@pytest.mark.timeout(30)
@pytest.mark.parametrize("wakes", [True, False], ids=["probe-with-descriptor", "probe-without"])
def test_should_query_for_requests_only_now_and_then_when_the_probe_wakes_it(
    wakes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polls every 50 ms for 1.5 s: a metastore whose probe wakes the thread is asked for
    requests every REQUEST_QUERY_SECONDS (0.6 s here: 3 times), one whose probe cannot at
    every poll (about 30 times)."""
    monkeypatch.setattr(control_loop, "CONTROL_POLL_SECONDS", 0.05)
    monkeypatch.setattr(request_watch, "REQUEST_QUERY_SECONDS", 0.6)
    probe = PipeProbe() if wakes else PollingRequestProbe()
    metastore = QuietProbedMetastore(probe)
    loop = Outbox().loop()
    loop.watch(watching(metastore, sweep_every=10.0))
    loop.start()
    try:
        time.sleep(1.5)
    finally:
        loop.stop()
        loop.join(timeout=5)

    if wakes:
        assert 2 <= metastore.queries <= 4
    else:
        assert metastore.queries >= 10


@pytest.mark.timeout(60)
def test_should_not_ask_for_requests_after_each_of_its_own_lease_renewals(
    metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease renewal is a commit, which wakes the request probe (SQLite: inotify on the
    database's folder, then its version changed); only a commit that requests a checkpoint
    makes the control thread ask the metastore for every pipeline's requests."""
    monkeypatch.setattr(control_loop, "CONTROL_POLL_SECONDS", 0.05)
    monkeypatch.setattr(request_watch, "REQUEST_QUERY_SECONDS", 60.0)
    queries: list[float] = []
    renewals: list[float] = []
    ask, renew = Metastore.unsealed_for_hosts, Metastore.acquire_leases

    def asked(self: Metastore, pipelines: Iterable[tuple[str, str]]) -> object:
        queries.append(time.monotonic())
        return ask(self, pipelines)

    def renewed(self: Metastore, leases: list[tuple[str, str, str, float]]) -> list[bool]:
        granted = renew(self, leases)
        renewals.append(time.monotonic())
        return granted

    monkeypatch.setattr(Metastore, "unsealed_for_hosts", asked)
    monkeypatch.setattr(Metastore, "acquire_leases", renewed)
    outbox = Outbox()
    loop = outbox.loop()
    loop.watch(WatchList((WatchedPipeline("web", "test-host", "me", metastore, 1.5),), 10.0))
    requester = Metastore.open(metastore_url)
    loop.start()
    try:
        wait_until(lambda: len(renewals) >= 1, 10)
        time.sleep(0.3)  # the first query, at the start, is behind it
        queried, renewed_before = len(queries), len(renewals)
        time.sleep(2.5)
        at_rest, renewed_at_rest = len(queries) - queried, len(renewals) - renewed_before
        requested = requester.request_checkpoint("web").checkpoint_id
        wait_until(lambda: ("web", requested) in outbox.requests, 5)
    finally:
        loop.stop()
        loop.join(timeout=5)
        requester.close()

    assert renewed_at_rest >= 3  # every 0.5 s
    assert at_rest == 0  # one after each renewal before
