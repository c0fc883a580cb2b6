"""The metastore behind a real PgBouncer in transaction pooling mode (``metastore.pooling:
transaction``), as a fleet of collectors reaches it past some tens of hosts.

The module's PostgreSQL server is its own (``tests/support/postgres_server.py``) and so is the
pgbouncer in front of it (``tests/support/pgbouncer.py``), which has fewer server connections
than the clients here open: consecutive transactions of a client land on different server
connections. Through it, without the setting, psycopg's prepared statements fail ("prepared
statement "_pg3_0" already exists" / "does not exist") and a ``LISTEN`` hears nothing, so a
request waits for the collector's 15-second safety-net query. pgbouncer not installed fails the
tests (``scripts/pgbouncer.sh install``); they are not skipped.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline_core.lake import LakeCatalog, LakeLocation
from pipeline_core.metastore import (
    CheckpointState,
    Metastore,
    MetastorePooling,
    QueryingRequestProbe,
    ReadProgressRecord,
    Repositories,
    open_view,
    utcnow,
)
from pipeline_core.testing import UniqueAccessLines, append, holds_within, wait_until
from tests.support.pgbouncer import PrivatePgBouncer, pgbouncer_in_front
from tests.support.pipelines import write_config
from tests.support.postgres_server import private_postgres
from tests.support.tailing import TailingCollector

pytestmark = [pytest.mark.slow, pytest.mark.postgres_pass]

POOLED = MetastorePooling.TRANSACTION
ROUNDS = 8
"""Checkpoints requested of the collector, each sealed before the next: more than psycopg's
default ``prepare_threshold`` (5) runs of each statement."""
SEALED_WITHIN_SECONDS = 4.0
"""Request -> sealed through the pooler (the probe looks every 0.5 s; a ``LISTEN`` that hears
nothing leaves it to the 15-second query)."""


def is_sealed(metastore: Metastore, checkpoint_id: int) -> bool:
    return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED


@pytest.fixture(scope="module")
def pooler() -> Iterator[PrivatePgBouncer]:
    with private_postgres() as server, pgbouncer_in_front(server.url) as started:
        yield started


@pytest.fixture
def pooled_metastore(pooler: PrivatePgBouncer) -> Iterator[Metastore]:
    store = Metastore.open(pooler.url, pooling=POOLED)  # migrated through the pooler
    try:
        yield store
    finally:
        store.close()


@pytest.mark.timeout(120)
def test_metastores_sharing_the_pooler_run_each_statement_many_times(
    pooler: PrivatePgBouncer, pooled_metastore: Metastore
) -> None:
    """Three clients (three collectors' engines), each statement run a dozen times: psycopg
    would prepare each on the server after five runs, and the pooler hands the next run
    another server connection."""
    stores = [pooled_metastore, *(Metastore.open(pooler.url, pooling=POOLED) for _ in range(2))]
    try:
        for round_number in range(12):
            for n, store in enumerate(stores):
                host, holder = f"host-{n}", f"holder-{n}"
                assert store.acquire_leases([("statements", host, holder, 30.0)]) == [True]
                assert store.lease_holder("statements", host) == holder
                requested = store.request_checkpoint("statements", f"run-{round_number}-{n}")
                waiting = store.unsealed_for_hosts([("statements", host)])
                assert requested.checkpoint_id in waiting[("statements", host)]
                store.record_read_progress(
                    "statements",
                    ReadProgressRecord(host, utcnow(), 1.0, 100 * round_number, round_number, 0),
                )
    finally:
        for store in stores[1:]:
            store.close()
    with open_view(pooler.url, POOLED) as view:
        assert view is not None
        samples = view.read_progress("statements", utcnow() - timedelta(hours=1))
    assert samples is not None and len(samples) == 12 * len(stores)


@pytest.mark.timeout(60)
def test_should_notice_requests_through_the_pooler_by_querying(
    pooler: PrivatePgBouncer, pooled_metastore: Metastore
) -> None:
    probe = pooled_metastore.request_probe()
    requester = Metastore.open(pooler.url, pooling=POOLED)
    try:
        assert isinstance(probe, QueryingRequestProbe)
        assert probe.fileno() is None  # a LISTEN socket would hear nothing through the pooler
        assert probe.look_every is not None and probe.look_every <= 1.0
        assert probe.changed()  # the first call: nothing seen yet
        assert not probe.changed()

        requester.request_checkpoint("probed")
        assert probe.changed()
        assert not probe.changed()  # reported once

        # A request whose transaction took its id first but commits after a later request:
        # it shows below the newest id the probe has seen, and is still noticed.
        with requester.transaction() as connection:
            early = Repositories.on(connection).checkpoints.insert(
                "probed", None, None, [], utcnow()
            )
            later = requester.request_checkpoint("probed").checkpoint_id
            assert early < later
            assert probe.changed()
            assert not probe.changed()
        assert probe.changed()
        assert not probe.changed()
    finally:
        probe.close()
        requester.close()


@pytest.mark.timeout(240)
def test_a_collector_behind_the_pooler_seals_each_request_within_seconds(
    tmp_path: Path, pooler: PrivatePgBouncer, pooled_metastore: Metastore
) -> None:
    """``sluice collect`` with ``metastore.pooling: transaction``: each checkpoint requested
    through the pooler is sealed within seconds with every line written before it, the lease
    and the read progress are kept, and a landing's commit goes through."""
    config_path = write_config(
        tmp_path,
        pooler.url,
        name="pooled",
        metastore={"url": pooler.url, "pooling": POOLED.value},
        landing_jar=False,
    )
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(7)
    append(log, *source.lines(0, 100))
    written = 100
    latencies: list[float] = []
    ids: list[int] = []
    started = utcnow()
    with TailingCollector(config_path, tmp_path / "collector") as collector:
        wait_until(lambda: pooled_metastore.lease_holder("pooled", "test-host") is not None, 30)
        holder = pooled_metastore.lease_holder("pooled", "test-host")
        assert not pooled_metastore.acquire_lease("pooled", "test-host", "intruder", 30.0)
        for round_number in range(ROUNDS):
            append(log, *source.lines(written, 50))
            written += 50
            assert collector.wait_caught_up(settle=0.2, timeout=30), collector.files()
            checkpoint = pooled_metastore.request_checkpoint("pooled", f"run-{round_number}")
            asked = time.monotonic()
            sealed = holds_within(
                functools.partial(is_sealed, pooled_metastore, checkpoint.checkpoint_id), 30.0, 0.01
            )
            latencies.append(time.monotonic() - asked)
            assert sealed, f"checkpoint {checkpoint.checkpoint_id} not sealed within 30 s"
            ids.append(checkpoint.checkpoint_id)
        assert pooled_metastore.lease_holder("pooled", "test-host") == holder
        assert collector.stop() == 0
        warnings = collector.warnings()

    assert max(latencies) < SEALED_WITHIN_SECONDS, [f"{s:.2f}" for s in latencies]
    assert warnings == []
    sealed_lines = sum(
        batch.line_count for checkpoint in ids for batch in pooled_metastore.batches(checkpoint)
    )
    assert sealed_lines == written  # each round's lines, sealed by the request after them
    with open_view(pooler.url, POOLED) as view:
        assert view is not None
        progress = view.read_progress("pooled", started - timedelta(seconds=1))
    assert progress and {sample.host for sample in progress} == {"test-host"}
    assert sum(sample.lines_read for sample in progress) == written

    committed = pooled_metastore.commit_checkpoint(ids[-1], {"rows": 50, "rejects": 0})
    assert committed.state is CheckpointState.COMMITTED
    print(f"request -> sealed through pgbouncer: {', '.join(f'{s:.2f}' for s in latencies)} s")


@pytest.mark.timeout(120)
def test_the_lake_catalog_commits_through_the_pooler(
    tmp_path: Path, pooler: PrivatePgBouncer, pooled_metastore: Metastore
) -> None:
    """The Iceberg catalog in the metastore's database (pyiceberg's own engine), opened twice:
    its tables created, then committed to a few times from each, as landings do."""
    location = LakeLocation(pooler.url, tmp_path / "lake", "pooled_lake", POOLED)
    with LakeCatalog.open(location) as first, LakeCatalog.open(location) as second:
        first.ensure_tables({"access": "nginx_combined"})
        for commit in range(6):
            for catalog in (first, second):
                table = catalog.load("access")
                assert table is not None
                with table.transaction() as transaction:
                    transaction.set_properties({"sluice.test.commit": str(commit)})
        table = second.load("access")
        assert table is not None and table.properties["sluice.test.commit"] == "5"
