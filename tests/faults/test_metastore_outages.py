"""The metastore locked or down for a while: a tailing collector waits (or retries) and goes on,
and no line is lost or sealed twice.

The PostgreSQL cases run in the PostgreSQL pass only (``SLUICE_TEST_POSTGRES_URL``). They take
the test's own database down (sessions terminated, connections refused) instead of restarting
the server, which other test runs on this machine share.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.staging_contract import checkpoint_dir
from pipeline_core.testing import UniqueAccessLines, append, wait_until
from tests.support.faults import FaultSeed, RunningCollector, assert_staged_once
from tests.support.metastore_outages import metastore_write_lock, take_database_down
from tests.support.pipelines import load
from tests.support.postgres import postgres_url

COLLECTOR = {"lease_seconds": 2.0, "discovery_interval_s": 0.1, "rotated_grace_s": 0.5}


def sealed(metastore: Metastore, checkpoint_id: int) -> bool:
    return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED


def request_behind_a_write_lock(
    metastore: Metastore, url: str, pipeline: str
) -> tuple[int, contextlib.ExitStack]:
    """Request a checkpoint whose seal finds the metastore's write lock taken. Returns the
    checkpoint and the held lock (release it by closing the stack).

    PostgreSQL: the batch table is locked first (the request writes none, the seal does).
    SQLite locks the whole database, the request too: the lock is taken after the request,
    and as the collector can seal a checkpoint in the moment between them (it hears of a
    request at once), that checkpoint is left sealed and another is requested."""
    if sa.make_url(url).get_backend_name() != "sqlite":
        stack = contextlib.ExitStack()
        stack.enter_context(metastore_write_lock(url, tables=("sluice_batches",)))
        return metastore.request_checkpoint(pipeline, "locked-run").checkpoint_id, stack
    for attempt in range(5):
        checkpoint_id = metastore.request_checkpoint(
            pipeline, f"locked-run-{attempt}"
        ).checkpoint_id
        with contextlib.ExitStack() as stack:
            stack.enter_context(metastore_write_lock(url))
            if not sealed(metastore, checkpoint_id):
                return checkpoint_id, stack.pop_all()
    raise AssertionError("each checkpoint was sealed before the write lock could be taken")


@pytest.mark.timeout(120)
def test_a_collector_waits_out_a_write_lock_held_while_it_seals(
    tmp_path: Path, metastore_url: str, metastore: Metastore, fault_seed: FaultSeed
) -> None:
    config = load(tmp_path, metastore_url, collector=COLLECTOR)
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, during = source.lines(0, 3000), source.lines(3000, 2000)
    hold = fault_seed.rng.uniform(3.0, 5.0)
    append(log, *before)
    with RunningCollector(config, metastore) as running:
        wait_until(
            lambda: metastore.lease_holder(config.name, config.collector.host) is not None,
            30,
            "the collector to start",
        )
        # The checkpoint holds what was read before its barrier: request it once ``before``
        # is read, however loaded the machine.
        wait_until(
            lambda: any(m.lines_read >= len(before) for m in running.collector.metrics()),
            30,
            "the lines before the checkpoint read",
        )
        locked_id, lock = request_behind_a_write_lock(metastore, metastore_url, config.name)
        folder = checkpoint_dir(config.staging_dir, config.name, locked_id)
        with lock:
            # The batch is staged, its metastore transaction waits for the lock, held for
            # ``hold`` seconds once the batch is there.
            wait_until(folder.exists, 30, "the batch folder of the locked checkpoint")
            started = time.monotonic()
            append(log, *during)
            time.sleep(max(0.0, hold - (time.monotonic() - started)))
            assert not sealed(metastore, locked_id), "sealed through the lock?"
            assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
        wait_until(lambda: sealed(metastore, locked_id), 60, "the seal after the lock")
        next_id = metastore.request_checkpoint(config.name, "next-run").checkpoint_id
        wait_until(lambda: sealed(metastore, next_id), 60, "the next checkpoint")
    running.raise_error()

    # The lines read before the locked checkpoint's barrier are in it (or in a checkpoint
    # sealed before the lock); none appended while it waited.
    up_to_locked = [b for n in range(1, locked_id + 1) for b in metastore.batches(n)]
    assert sum(b.line_count for b in up_to_locked) == len(before)
    assert_staged_once(config, before + during, fault_seed)


@pytest.mark.timeout(120)
@pytest.mark.skipif(
    postgres_url() is None, reason="PostgreSQL pass only (SLUICE_TEST_POSTGRES_URL)"
)
def test_a_collector_rides_out_its_postgres_database_refusing_connections_while_it_seals(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    fault_seed: FaultSeed,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = postgres_url()
    assert server is not None
    database = sa.make_url(metastore_url).database
    assert database is not None
    config = load(tmp_path, metastore_url, collector=COLLECTOR)
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, during = source.lines(0, 3000), source.lines(3000, 2000)
    outage = fault_seed.rng.uniform(2.0, 4.0)
    seal = Metastore.seal
    outages: list[threading.Event] = []

    def seal_during_an_outage(self: Metastore, *args: Any, **kwargs: Any) -> int:
        if not outages:  # the database goes down just as the first seal begins
            outages.append(take_database_down(server, database, outage))
        return seal(self, *args, **kwargs)

    monkeypatch.setattr(Metastore, "seal", seal_during_an_outage)
    append(log, *before)
    with RunningCollector(config, metastore) as running:
        down_id = metastore.request_checkpoint(config.name, "outage-run").checkpoint_id
        wait_until(lambda: bool(outages) and outages[0].is_set(), 60, "the outage to end")
        append(log, *during)
        wait_until(
            lambda: not running.alive or sealed(metastore, down_id), 60, "the seal after the outage"
        )
        assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
        next_id = metastore.request_checkpoint(config.name, "next-run").checkpoint_id
        wait_until(lambda: sealed(metastore, next_id), 60, "the next checkpoint")
    running.raise_error()

    assert_staged_once(config, before + during, fault_seed)
