"""The wall clock of a collector's host stepped back under it (NTP correcting a clock that ran
ahead, an operator's ``date -s``), simulated at the clock seam every wall-clock reading of the
collector goes through (``pipeline_core._wall_clock``): the machine's clock cannot be stepped
under a test.

Leases used to be written by the collector's clock and read by everyone else's: a collector
whose clock stepped back an hour wrote leases that had expired an hour ago, so the Airflow run
waiting for its seal excused it, and another collector could take its files over. They are
measured by the metastore's clock now. The log names the step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipeline_core import _wall_clock
from pipeline_core.metastore import CheckpointState, Metastore, view_of
from pipeline_core.testing import UniqueAccessLines, append, wait_until
from tests.support.faults import FaultSeed, RunningCollector, assert_staged_once
from tests.support.pipelines import load

HOUR = 3600.0
COLLECTOR = {"lease_seconds": 3.0, "discovery_interval_s": 0.1}


@pytest.fixture
def clock_stepped_back() -> Iterator[None]:
    yield
    _wall_clock.reset()


def test_a_lease_renewed_by_a_host_whose_clock_is_an_hour_behind_is_live_for_the_others(
    metastore: Metastore, clock_stepped_back: None
) -> None:
    assert metastore.acquire_lease("web_access", "host-a", "collector-1", 30.0)
    _wall_clock.step(-HOUR)
    assert metastore.acquire_lease("web_access", "host-a", "collector-1", 30.0)  # renewed
    _wall_clock.reset()  # the others' clocks are right

    assert metastore.lease_holder("web_access", "host-a") == "collector-1"
    checkpoint = metastore.request_checkpoint("web_access", "run-1").checkpoint_id
    assert waits_for(metastore, "web_access", "host-a") == [checkpoint]
    assert metastore.transitions.excuse_lapsed_hosts(checkpoint) == []
    assert not metastore.acquire_lease("web_access", "host-a", "collector-2", 30.0)


@pytest.mark.timeout(120)
def test_a_collector_whose_clock_steps_back_an_hour_keeps_its_lease_and_seals_once(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    fault_seed: FaultSeed,
    clock_stepped_back: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = load(tmp_path, metastore_url, collector=COLLECTOR)
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, after = source.lines(0, 2000), source.lines(2000, 1000)
    caplog.set_level(logging.WARNING, logger="pipeline_core")
    append(log, *before)
    with RunningCollector(config, metastore) as running:
        host = config.collector.host
        wait_until(lambda: metastore.lease_holder(config.name, host) is not None, 30, "a lease")
        first = metastore.request_checkpoint(config.name, "before-the-step").checkpoint_id
        wait_until(lambda: sealed(metastore, first), 60, "the first seal")
        _wall_clock.step(-HOUR)
        append(log, *after)
        wait_until(
            lambda: any("wall clock stepped back" in r.getMessage() for r in caplog.records),
            30,
            "the step said in the log",
        )
        # Three leases' length, renewed with the stepped clock: never lapsed for the others.
        until = time.monotonic() + 3 * COLLECTOR["lease_seconds"]
        while time.monotonic() < until:
            assert metastore.lease_holder(config.name, host) is not None, "the lease lapsed"
            assert lease_expiry(metastore, config.name) > datetime.now(timezone.utc), (
                "the lease lapsed for a host whose clock is right"
            )
            time.sleep(0.1)
        assert running.collector.readiness().ok, running.collector.readiness()
        second = metastore.request_checkpoint(config.name, "after-the-step").checkpoint_id
        assert metastore.transitions.excuse_lapsed_hosts(second) == []
        wait_until(lambda: not running.alive or sealed(metastore, second), 60, "the seal")
        assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
    running.raise_error()

    assert_staged_once(config, before + after, fault_seed)


def lease_expiry(metastore: Metastore, pipeline: str) -> datetime:
    """When the lease of ``pipeline`` expires, as stored (what other hosts compare with)."""
    with view_of(metastore) as view:
        (lease,) = view.leases(pipeline)
    return lease.expires_at


def waits_for(metastore: Metastore, pipeline: str, host: str) -> list[int]:
    """The checkpoints waiting for ``host``'s seal."""
    return list(metastore.unsealed_for_hosts([(pipeline, host)])[(pipeline, host)])


def sealed(metastore: Metastore, checkpoint_id: int) -> bool:
    return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED
