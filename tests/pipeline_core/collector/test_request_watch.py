"""The request watch: which descriptors the control thread waits on, and when it looks anyway."""

from __future__ import annotations

from typing import cast

import pytest

from pipeline_core.collector._request_watch import (
    PROBE_RECHECKS_SECONDS,
    REQUEST_PROBE_SECONDS,
    REQUEST_QUERY_SECONDS,
    RequestWatch,
)
from pipeline_core.metastore import Metastore, PollingRequestProbe, RequestProbe
from tests.pipeline_core.collector.support import PipeProbe


class SignallingProbe(RequestProbe):
    """A probe with no descriptor that can still say yes: asked every so often."""

    def changed(self) -> bool:
        return True


class PeriodicProbe(RequestProbe):
    """A probe that reads the database itself on a period of its own (a query behind a
    transaction-mode pooler): it sees every request, and counts its looks."""

    def __init__(self) -> None:
        self.looks = 0

    def changed(self) -> bool:
        self.looks += 1
        return True

    @property
    def look_every(self) -> float | None:
        return 0.5


class ProbedMetastore:
    def __init__(self, probe: RequestProbe) -> None:
        self.probe = probe
        self.probes_made = 0

    def request_probe(self) -> RequestProbe:
        self.probes_made += 1
        return self.probe


def metastore_with(probe: RequestProbe) -> tuple[Metastore, ProbedMetastore]:
    fake = ProbedMetastore(probe)
    return cast(Metastore, fake), fake


@pytest.fixture
def descriptor_probe() -> PipeProbe:
    return PipeProbe()


def test_should_wait_on_the_descriptor_and_after_a_wake_look_again_a_few_times(
    descriptor_probe: PipeProbe,
) -> None:
    metastore, fake = metastore_with(descriptor_probe)
    watch = RequestWatch(continuous=True)
    try:
        assert watch.waiting([metastore, metastore], 100.0) == (
            [descriptor_probe.read],
            float("inf"),
        )
        watch.woken(100.0)
        looks = []
        now = 100.0
        while True:
            _, look_by = watch.waiting([metastore], now)
            if look_by == float("inf"):
                break
            looks.append(round(look_by - 100.0, 6))
            now = look_by
    finally:
        watch.close()

    assert looks == list(PROBE_RECHECKS_SECONDS)
    assert fake.probes_made == 1  # one probe per metastore, kept


def test_should_look_every_so_often_at_a_probe_without_a_descriptor_that_can_signal() -> None:
    signalling, _ = metastore_with(SignallingProbe())
    silent, _ = metastore_with(PollingRequestProbe())
    watch = RequestWatch(continuous=True)

    assert watch.waiting([silent], 10.0) == ([], float("inf"))
    assert watch.waiting([silent, signalling], 10.0) == ([], 10.0 + REQUEST_PROBE_SECONDS)
    assert watch.changed([silent, signalling], 10.0) == {id(signalling)}


def test_should_ask_a_woken_metastore_only_now_and_then_and_others_at_every_poll(
    descriptor_probe: PipeProbe,
) -> None:
    woken, _ = metastore_with(descriptor_probe)
    polled, _ = metastore_with(PollingRequestProbe())
    watch = RequestWatch(continuous=True)
    try:
        assert watch.query_due(woken, 0.0)
        watch.asked(woken, 0.0)
        assert not watch.query_due(woken, REQUEST_QUERY_SECONDS - 0.1)
        assert watch.query_due(woken, REQUEST_QUERY_SECONDS)
        watch.asked(polled, 0.0)
        assert watch.query_due(polled, 0.1)
    finally:
        watch.close()


def test_should_ask_a_probe_with_a_period_of_its_own_once_a_period_and_query_as_a_safety_net() -> (
    None
):
    probe = PeriodicProbe()
    metastore, _ = metastore_with(probe)
    watch = RequestWatch(continuous=True)

    assert watch.waiting([metastore], 10.0) == ([], 10.0)  # never asked: at once
    assert watch.changed([metastore], 10.0) == {id(metastore)}
    assert watch.waiting([metastore], 10.0) == ([], 10.5)
    assert watch.changed([metastore], 10.2) == set()  # a turn for another reason: not asked
    assert watch.changed([metastore], 10.5) == {id(metastore)}
    assert probe.looks == 2

    watch.asked(metastore, 10.0)
    assert not watch.query_due(metastore, 11.0)  # not at every poll: the probe sees requests
    assert watch.query_due(metastore, 10.0 + REQUEST_QUERY_SECONDS)


def test_should_probe_nothing_in_one_shot_mode() -> None:
    metastore, fake = metastore_with(SignallingProbe())
    watch = RequestWatch(continuous=False)

    assert watch.waiting([metastore], 0.0) == ([], float("inf"))
    assert watch.changed([metastore], 0.0) == set()
    assert watch.query_due(metastore, 0.0)
    assert fake.probes_made == 0
