"""The metastore's PostgreSQL server stopped (``pg_ctl stop -m fast``) and started again under a
running collector: during a seal's transaction, and while the collector renews its lease. No
line is lost or sealed twice, the collector goes on by itself once the server is back, and
what an operator sees names the fault (a warning in the log, ``/ready``'s reason).

Each test runs a server of its own (``tests/support/postgres_server.py``), since the pass's
server is shared; they run in the PostgreSQL pass.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Transaction
from pyspark.sql import SparkSession

from pipeline_core import _fault_points as fault_points
from pipeline_core._fault_points import FaultPoint
from pipeline_core.collector import METASTORE_GRACE_SECONDS, ProbeResult
from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import UniqueAccessLines, append, wait_until
from tests.support.faults import FaultSeed, RunningCollector, assert_staged_once
from tests.support.landing_pipeline import LandingPipeline
from tests.support.pipelines import load
from tests.support.postgres_server import PrivatePostgres, private_postgres

pytestmark = [pytest.mark.slow, pytest.mark.postgres_pass]

COLLECTOR = {"lease_seconds": 2.0, "discovery_interval_s": 0.1, "rotated_grace_s": 0.5}


@pytest.fixture
def server() -> Iterator[PrivatePostgres]:
    with private_postgres() as started:
        yield started


@pytest.fixture
def metastore(server: PrivatePostgres) -> Iterator[Metastore]:
    store = Metastore.open(server.url)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def no_fault_handler() -> Iterator[None]:
    yield
    fault_points.install(None)


def sealed(metastore: Metastore, checkpoint_id: int) -> bool:
    """Whether ``checkpoint_id`` is sealed (False while the server is down)."""
    try:
        return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED
    except Exception:  # the server is down: ask again later
        return False


@pytest.mark.timeout(180)
def test_a_server_stopped_inside_a_seals_transaction_is_waited_out_and_the_seal_recorded_once(
    tmp_path: Path,
    server: PrivatePostgres,
    metastore: Metastore,
    fault_seed: FaultSeed,
    no_fault_handler: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = load(tmp_path, server.url, collector=COLLECTOR)
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, during = source.lines(0, 3000), source.lines(3000, 2000)
    outage_seconds = fault_seed.rng.uniform(3.0, 6.0)
    outages: list[threading.Event] = []

    def stop_the_server_once(point: FaultPoint) -> None:
        # Inside the transaction: the batch and its ranges inserted, nothing committed.
        if point is FaultPoint.SEAL_TRANSACTION_OPEN and not outages:
            outages.append(server.outage(outage_seconds))

    fault_points.install(stop_the_server_once)
    append(log, *before)
    caplog.set_level(logging.WARNING, logger="pipeline_core")
    with RunningCollector(config, metastore) as running:
        down_id = metastore.request_checkpoint(config.name, "outage-run").checkpoint_id
        wait_until(lambda: bool(outages), 60, "the seal to begin")
        wait_until(lambda: outages[0].is_set(), 60, "the server to be back")
        append(log, *during)
        wait_until(
            lambda: not running.alive or sealed(metastore, down_id), 90, "the seal after the stop"
        )
        assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
        next_id = metastore.request_checkpoint(config.name, "next-run").checkpoint_id
        wait_until(lambda: sealed(metastore, next_id), 60, "the next checkpoint")
    running.raise_error()

    assert_staged_once(config, before + during, fault_seed)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("metastore is unreachable" in w for w in warnings), warnings
    batches = [b for c in (down_id, next_id) for b in metastore.batches(c)]
    assert len(batches) == len({(b.checkpoint_id, b.host) for b in batches})


@pytest.mark.timeout(180)
def test_a_server_stopped_while_the_collector_renews_its_lease_makes_it_unready_until_back(
    tmp_path: Path,
    server: PrivatePostgres,
    metastore: Metastore,
    fault_seed: FaultSeed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Longer than the lease and than the readiness grace: ``/ready`` says the metastore is
    unreachable, the log says so once (its control loop retries every second), and once the
    server is back the collector holds its lease again and seals what was written
    meanwhile."""
    caplog.set_level(logging.INFO, logger="pipeline_core.collector")
    config = load(tmp_path, server.url, collector=COLLECTOR)
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, during, after = source.lines(0, 2000), source.lines(2000, 1000), source.lines(3000, 500)
    append(log, *before)
    with RunningCollector(config, metastore) as running:
        collector = running.collector
        wait_until(lambda: collector.readiness().ok, 60, "the collector to be ready")
        first = metastore.request_checkpoint(config.name, "before-run").checkpoint_id
        wait_until(lambda: sealed(metastore, first), 60, "the first checkpoint")
        back = server.outage(METASTORE_GRACE_SECONDS + fault_seed.rng.uniform(2.0, 4.0))
        append(log, *during)
        unready: list[ProbeResult] = []

        def not_ready() -> bool:
            answer = collector.readiness()
            if not answer.ok:
                unready.append(answer)
            return not answer.ok

        wait_until(not_ready, 60, "the collector to say it is not ready")
        assert "metastore" in unready[0].reason, unready[0].reason
        assert running.alive and collector.liveness().ok
        wait_until(back.is_set, 60, "the server to be back")
        wait_until(lambda: collector.readiness().ok, 60, "the collector ready again")
        assert metastore.lease_holder(config.name, config.collector.host) is not None
        append(log, *after)
        last = metastore.request_checkpoint(config.name, "after-run").checkpoint_id
        wait_until(lambda: not running.alive or sealed(metastore, last), 60, "the next seal")
        assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
    running.raise_error()

    assert_staged_once(config, before + during + after, fault_seed)
    control = [r.getMessage() for r in caplog.records if r.name.endswith("_control_loop")]
    assert [m for m in control if "cannot be reached" in m] == [
        next(m for m in control if "cannot be reached" in m)
    ], control
    assert any("reachable again after" in m for m in control), control


@pytest.mark.spark
@pytest.mark.timeout(300)
def test_a_server_stopped_during_a_landings_commits_fails_it_whole_and_its_retry_lands_once(
    tmp_path: Path,
    server: PrivatePostgres,
    fault_seed: FaultSeed,
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lake's catalog is in the metastore's database: the server stops as the landing's
    Iceberg commit opens (after its files are written), then as the run's commit step marks
    the checkpoint committed. The landing fails and nothing of it is committed; once the
    server is back, the run's retry lands every line once and commits."""
    pipeline = LandingPipeline(tmp_path, server.url, fault_seed)
    checkpoint = pipeline.seal("scheduled__1", malformed=2)
    commit_transaction = Transaction.commit_transaction
    outages: list[threading.Event] = []

    def stop_the_server_first(self: Transaction) -> Any:
        if not outages:
            outages.append(server.outage(fault_seed.rng.uniform(2.0, 4.0)))
        return commit_transaction(self)

    with monkeypatch.context() as patch:
        patch.setattr(Transaction, "commit_transaction", stop_the_server_first)
        with pytest.raises(Exception) as failed:
            pipeline.land(spark, checkpoint, landing_id="scheduled__1")
    assert "connect" in str(failed.value).lower() or "server" in str(failed.value).lower(), (
        failed.value
    )
    wait_until(outages[0].is_set, 60, "the server to be back")
    assert pipeline.rows_of(checkpoint) == 0  # nothing of the failed landing committed
    assert pipeline.info(checkpoint).state is CheckpointState.SEALED

    pipeline.land(spark, checkpoint, landing_id="scheduled__1")  # the task's retry
    back = server.outage(fault_seed.rng.uniform(2.0, 4.0))  # ... down again at the commit step
    with pytest.raises(MetastoreError):
        pipeline.operations.commit([checkpoint])
    wait_until(back.is_set, 60, "the server to be back")
    pipeline.operations.commit([checkpoint])  # the commit task's retry

    assert pipeline.info(checkpoint).state is CheckpointState.COMMITTED
    pipeline.assert_exactly_once(fault_seed)
