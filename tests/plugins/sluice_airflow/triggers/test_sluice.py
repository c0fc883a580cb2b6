"""CheckpointSealedTrigger against a real metastore: serialises, fires on sealed and on failed,
stops waiting for a host whose collector lease lapsed."""

from __future__ import annotations

import asyncio
import importlib
import time
from pathlib import Path

import pytest
from airflow.triggers.base import BaseTrigger, TriggerEvent
from sluice_airflow.triggers.sluice import CheckpointSealedTrigger

from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append
from tests.support.lease_holders import HolderProcess, waiting_for_a_killed_host
from tests.support.pipelines import write_config

pytestmark = pytest.mark.timeout(60)

LINE = b'10.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET /item/1 HTTP/1.1" 200 12 "-" "t/1"'


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> Path:
    path = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", LINE, LINE)
    return path


def trigger(
    config: Path, checkpoint_id: int, poll_interval: float = 0.05
) -> CheckpointSealedTrigger:
    return CheckpointSealedTrigger(
        config_path=str(config), checkpoint_id=checkpoint_id, poll_interval=poll_interval
    )


async def first_event(watcher: BaseTrigger, timeout: float = 20.0) -> TriggerEvent:
    async def take() -> TriggerEvent:
        async for event in watcher.run():
            return event
        raise AssertionError("the trigger ended without an event")

    return await asyncio.wait_for(take(), timeout)


def mark_failed(metastore_url: str, checkpoint_id: int, error: str) -> None:
    """What the pipeline records for a checkpoint that can no longer be sealed or landed."""
    store = Metastore.open(metastore_url)
    try:
        store.transitions.fail_checkpoint(checkpoint_id, error)
    finally:
        store.close()


def test_serialize_round_trips() -> None:
    original = CheckpointSealedTrigger(
        config_path="/etc/sluice/web_access.yaml", checkpoint_id=7, poll_interval=2.5
    )

    classpath, kwargs = original.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**kwargs)

    assert classpath == "sluice_airflow.triggers.sluice.CheckpointSealedTrigger"
    assert isinstance(rebuilt, CheckpointSealedTrigger)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert kwargs == {
        "config_path": "/etc/sluice/web_access.yaml",
        "checkpoint_id": 7,
        "poll_interval": 2.5,
    }


def test_creating_the_trigger_does_no_io() -> None:
    CheckpointSealedTrigger(config_path="/does/not/exist.yaml", checkpoint_id=1)


def test_fires_sealed_once_the_checkpoint_is_sealed(config: Path) -> None:
    operations = PipelineOperations(config)
    requested = operations.request_checkpoint(run_id="run-1")

    async def scenario() -> TriggerEvent:
        watcher = trigger(config, requested.checkpoint_id)
        waiting = asyncio.ensure_future(first_event(watcher))
        await asyncio.sleep(0.5)
        assert not waiting.done(), "fired before the checkpoint was sealed"
        # Sealing runs in a thread: the trigger's queries must not block the event loop.
        await asyncio.to_thread(operations.collect_once)
        return await waiting

    event = asyncio.run(scenario())

    assert event.payload == {
        "status": "sealed",
        "checkpoint_id": requested.checkpoint_id,
        "pipeline": "web_access",
        "state": "sealed",
        "reason": None,
    }


def test_fires_at_once_for_a_committed_checkpoint(config: Path, metastore_url: str) -> None:
    operations = PipelineOperations(config)
    [sealed] = operations.collect_once().sealed
    store = Metastore.open(metastore_url)
    try:
        store.commit_checkpoint(sealed.checkpoint_id, {"rows": {"access": 2}})
    finally:
        store.close()

    event = asyncio.run(first_event(trigger(config, sealed.checkpoint_id), timeout=10))

    assert event.payload["status"] == "sealed"
    assert event.payload["state"] == "committed"


def test_fires_failed_with_the_reason(config: Path, metastore_url: str) -> None:
    requested = PipelineOperations(config).request_checkpoint(run_id="run-1")

    async def scenario() -> TriggerEvent:
        waiting = asyncio.ensure_future(first_event(trigger(config, requested.checkpoint_id)))
        await asyncio.sleep(0.3)
        await asyncio.to_thread(
            mark_failed, metastore_url, requested.checkpoint_id, "sink lake gave up"
        )
        return await waiting

    event = asyncio.run(scenario())

    assert event.payload == {
        "status": "failed",
        "checkpoint_id": requested.checkpoint_id,
        "pipeline": "web_access",
        "state": "failed",
        "reason": "sink lake gave up",
    }


def test_an_unknown_checkpoint_is_an_error_event(config: Path) -> None:
    event = asyncio.run(first_event(trigger(config, 999), timeout=10))

    assert event.payload["status"] == "error"
    assert "no checkpoint 999" in event.payload["reason"]


def test_a_broken_config_is_an_error_event(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")

    event = asyncio.run(first_event(trigger(broken, 1), timeout=10))

    assert event.payload["status"] == "error"
    assert "broken.yaml" in event.payload["reason"]


def test_keeps_polling_while_requested_and_is_cancellable(config: Path, metastore_url: str) -> None:
    requested = PipelineOperations(config).request_checkpoint(run_id="run-1")

    async def scenario() -> None:
        with pytest.raises(asyncio.TimeoutError):  # TimeoutError itself from 3.11 on
            await first_event(trigger(config, requested.checkpoint_id), timeout=1.0)

    asyncio.run(scenario())

    store = Metastore.open(metastore_url)
    try:
        assert store.checkpoint(requested.checkpoint_id).state is CheckpointState.REQUESTED
    finally:
        store.close()


def test_fires_sealed_once_a_killed_hosts_lease_lapses(config: Path, metastore_url: str) -> None:
    """A checkpoint waiting for this host and for host-b, whose collector is killed before it
    seals: the trigger seals it with this host's batch once host-b's lease lapses."""
    operations = PipelineOperations(config)
    lease_seconds = 2.0
    checkpoint_id, lapses_at = waiting_for_a_killed_host(operations, metastore_url, lease_seconds)

    wait = max(0.0, lapses_at - time.monotonic()) + 5
    event = asyncio.run(first_event(trigger(config, checkpoint_id), timeout=wait))

    assert event.payload["status"] == "sealed"
    assert event.payload["state"] == "sealed"
    assert time.monotonic() >= lapses_at - 0.5  # not before host-b's lease could lapse
    sealed = operations.checkpoint(checkpoint_id)
    assert sealed.hosts == ("test-host",)
    assert sealed.line_count == 2


def test_keeps_waiting_for_a_host_whose_lease_is_live(config: Path, metastore_url: str) -> None:
    operations = PipelineOperations(config)
    with HolderProcess("host-b", metastore_url, ttl=60):
        requested = operations.request_checkpoint(run_id="run-1")  # waits for host-b
        operations.collect_once()  # seals a checkpoint of its own: this one is not its

        with pytest.raises(asyncio.TimeoutError):  # TimeoutError itself from 3.11 on
            asyncio.run(first_event(trigger(config, requested.checkpoint_id), timeout=1.0))

    assert operations.checkpoint(requested.checkpoint_id).state is CheckpointState.REQUESTED
