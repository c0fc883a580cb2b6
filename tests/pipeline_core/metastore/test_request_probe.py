"""Request probes: a new checkpoint request is noticed without querying for it."""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline_core.metastore import (
    DataVersionRequestProbe,
    ListeningRequestProbe,
    Metastore,
    MetastorePooling,
    PollingRequestProbe,
    QueryingRequestProbe,
    open_request_probe,
)
from pipeline_core.testing import holds_within

PIPELINE = "web_access"


@pytest.mark.timeout(60)
def test_should_notice_a_request_made_through_another_connection(
    metastore: Metastore, metastore_url: str
) -> None:
    probe = metastore.request_probe()
    requester = Metastore.open(metastore_url)
    try:
        assert probe.changed()  # the first call: nothing seen yet
        assert not holds_within(probe.changed, 0.2, 0.01)

        requester.request_checkpoint(PIPELINE)

        assert holds_within(probe.changed, 5.0, 0.01)
        assert not holds_within(probe.changed, 0.2, 0.01)  # reported once
    finally:
        probe.close()
        requester.close()


def test_should_use_the_cheapest_probe_of_the_database(
    metastore: Metastore, metastore_url: str
) -> None:
    probe = metastore.request_probe()
    try:
        expected = (
            DataVersionRequestProbe if metastore_url.startswith("sqlite") else ListeningRequestProbe
        )
        assert isinstance(probe, expected)
    finally:
        probe.close()


def test_should_query_behind_a_transaction_pooler_on_postgresql_only(
    metastore: Metastore, metastore_url: str
) -> None:
    probe = open_request_probe(metastore.engine, MetastorePooling.TRANSACTION)
    try:
        expected = (
            DataVersionRequestProbe if metastore_url.startswith("sqlite") else QueryingRequestProbe
        )
        assert isinstance(probe, expected)
    finally:
        probe.close()


@pytest.mark.timeout(60)
def test_should_notice_a_request_by_querying(metastore: Metastore, metastore_url: str) -> None:
    probe = QueryingRequestProbe(metastore.engine)
    requester = Metastore.open(metastore_url)
    try:
        assert probe.fileno() is None
        assert probe.changed()  # the first call: nothing seen yet
        assert not probe.changed()

        requester.request_checkpoint(PIPELINE)

        assert probe.changed()
        assert not probe.changed()  # reported once
    finally:
        probe.close()
        requester.close()


def test_should_say_maybe_when_a_query_fails(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'gone' / 'sluice.db'}")  # no folder
    probe = QueryingRequestProbe(engine)
    try:
        assert probe.changed()
        assert probe.changed()  # still answers, never raises
    finally:
        probe.close()
        engine.dispose()


def test_should_poll_where_no_cheap_signal_exists() -> None:
    store = Metastore.open("sqlite://")  # in memory: no other connection can see it
    try:
        probe = open_request_probe(store.engine)
        assert isinstance(probe, PollingRequestProbe)
        assert not probe.changed()  # the once-a-second query finds the requests
    finally:
        store.close()


def test_should_say_maybe_and_recover_when_the_database_goes_away(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    probe = DataVersionRequestProbe(str(folder / "sluice.db"))  # its folder does not exist

    assert probe.changed()
    assert probe.changed()  # still answers, never raises
    folder.mkdir()
    assert probe.changed()  # connects now (first sight of this file)
    assert not probe.changed()
    probe.close()


@pytest.mark.timeout(60)
def test_should_wake_a_waiter_on_its_descriptor_when_a_request_is_made(
    metastore: Metastore, metastore_url: str
) -> None:
    probe = metastore.request_probe()
    requester = Metastore.open(metastore_url)
    request = threading.Timer(0.2, requester.request_checkpoint, args=(PIPELINE,))
    try:
        descriptor = probe.fileno()
        assert descriptor is not None
        probe.changed()  # the first look, which drains what came before
        assert select.select([descriptor], [], [], 0.3)[0] == []  # nothing happens: no wake
        request.start()
        started = time.monotonic()
        assert select.select([descriptor], [], [], 10.0)[0] == [descriptor]
        assert time.monotonic() - started < 5.0
        assert holds_within(probe.changed, 5.0, 0.01)
    finally:
        # The request reads its checkpoint back after its commit woke the probe: it ends
        # before its database is dropped.
        if request.is_alive():
            request.join(timeout=10)
        probe.close()
        requester.close()


@pytest.mark.timeout(60)
def test_should_not_take_a_commit_that_requests_nothing_for_a_request(
    metastore: Metastore, metastore_url: str
) -> None:
    """Lease renewals commit every few seconds, the prober's own and other collectors': only
    a new request is news (each yes costs a query for every pipeline's requests)."""
    probe = metastore.request_probe()
    other = Metastore.open(metastore_url)
    try:
        assert probe.changed()  # the first call: nothing seen yet
        for store in (metastore, other, metastore):
            assert store.acquire_lease(PIPELINE, "test-host", "me", 30.0)
            assert not holds_within(probe.changed, 0.2, 0.01)

        other.request_checkpoint(PIPELINE)

        assert holds_within(probe.changed, 5.0, 0.01)
    finally:
        probe.close()
        other.close()
