"""look_sealed: what one look of a run waiting for its checkpoint decides, against a real
metastore; hosts whose collector lease lapsed are excused, and their lines are never lost nor
recorded twice.

Hosts ``host-a`` and ``host-b`` are collectors elsewhere: their leases are taken and their
batches recorded in the metastore directly, as their collectors would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.errors import CheckpointError
from pipeline_core.metastore import (
    BatchRecord,
    ByteRange,
    CheckpointState,
    IllegalTransitionError,
    Metastore,
)
from pipeline_core.operations import PipelineOperations
from pipeline_core.runs import SealWait, look_sealed
from tests.support.pipelines import write_config

PIPELINE = "web_access"
SHORT_LEASE = 1.0
"""Seconds: a lease that lapses within the test (the host is dead), yet outlives the
request that follows it on a loaded machine (which must see the host as live)."""


@pytest.fixture
def operations(tmp_path: Path, metastore_url: str) -> PipelineOperations:
    return PipelineOperations(write_config(tmp_path, metastore_url))


@pytest.fixture
def store(metastore_url: str) -> Iterator[Metastore]:
    metastore = Metastore.open(metastore_url)
    try:
        yield metastore
    finally:
        metastore.close()


def live(store: Metastore, host: str, ttl: float = 60.0) -> None:
    assert store.acquire_lease(PIPELINE, host, f"{host}:1", ttl)


def batch(checkpoint_id: int, host: str, start: int = 0) -> BatchRecord:
    """``host``'s batch: the 10 bytes (one line) of its file from ``start`` (its checksum
    names them)."""
    return BatchRecord(
        checkpoint_id=checkpoint_id,
        host=host,
        staging_path=f"/staging/{PIPELINE}/{checkpoint_id:08d}/{host}",
        line_count=1,
        byte_count=10,
        part_count=1,
        checksum=f"{host}@{start}",
        event_count=1,
        ranges=(ByteRange(f"{host}-file".encode().hex()[:16], start, start + 10, 1),),
    )


def seal(store: Metastore, checkpoint_id: int, host: str, start: int = 0) -> None:
    store.seal(PIPELINE, batch(checkpoint_id, host, start), [], host)


def recorded(store: Metastore, host: str) -> list[tuple[int, str]]:
    """(checkpoint, manifest checksum) of every batch ``host`` has recorded."""
    return [
        (record.checkpoint_id, b.checksum)
        for record in store.checkpoints(PIPELINE)
        for b in store.batches(record.checkpoint_id)
        if b.host == host
    ]


def test_should_keep_waiting_while_a_live_host_owes_its_batch(
    operations: PipelineOperations, store: Metastore
) -> None:
    live(store, "host-a")
    live(store, "host-b")
    requested = operations.request_checkpoint("run-1").checkpoint_id
    seal(store, requested, "host-a")

    look = look_sealed(operations, requested)

    assert look.wait is SealWait.WAITING
    assert look.excused == ()
    assert look.checkpoint.state is CheckpointState.REQUESTED


def test_should_seal_with_the_live_hosts_batches_once_a_hosts_lease_lapsed(
    operations: PipelineOperations, store: Metastore
) -> None:
    live(store, "host-a")
    live(store, "host-b", ttl=SHORT_LEASE)
    requested = operations.request_checkpoint("run-1").checkpoint_id
    seal(store, requested, "host-a")
    time.sleep(SHORT_LEASE + 0.1)  # host-b died: its lease lapses

    with operations:  # one metastore held for the looks, as a poller does
        look = look_sealed(operations, requested)

    assert look.wait is SealWait.LANDABLE
    assert look.excused == ("host-b",)
    assert look.checkpoint.state is CheckpointState.SEALED
    assert look.checkpoint.hosts == ("host-a",)
    assert look_sealed(operations, requested).excused == ()  # once


def test_should_keep_waiting_for_a_batch_when_every_host_was_excused(
    operations: PipelineOperations, store: Metastore
) -> None:
    live(store, "host-b", ttl=SHORT_LEASE)
    requested = operations.request_checkpoint("run-1").checkpoint_id
    time.sleep(SHORT_LEASE + 0.1)

    look = look_sealed(operations, requested)

    assert (look.wait, look.excused) == (SealWait.WAITING, ("host-b",))
    assert store.unsealed_for_host(PIPELINE, "host-a") == [requested]  # the next host seals it


@pytest.mark.parametrize("state", [CheckpointState.SEALED, CheckpointState.COMMITTED])
def test_should_land_a_sealed_or_committed_checkpoint(
    operations: PipelineOperations, store: Metastore, state: CheckpointState
) -> None:
    requested = operations.request_checkpoint("run-1").checkpoint_id
    seal(store, requested, "host-a")
    if state is CheckpointState.COMMITTED:
        store.commit_checkpoint(requested, {"rows": {"access": 1}})

    look = look_sealed(operations, requested)

    assert (look.wait, look.checkpoint.state) == (SealWait.LANDABLE, state)


def test_should_give_up_on_a_failed_checkpoint(
    operations: PipelineOperations, store: Metastore
) -> None:
    requested = operations.request_checkpoint("run-1").checkpoint_id
    store.transitions.fail_checkpoint(requested, "sink lake gave up")

    look = look_sealed(operations, requested)

    assert look.wait is SealWait.FAILED
    assert look.checkpoint.error == "sink lake gave up"


def test_should_raise_for_an_unknown_checkpoint(operations: PipelineOperations) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint 99"):
        look_sealed(operations, 99)


# -- an excused host's lines: never lost, never twice -------------------------------------------


def test_a_late_batch_of_an_excused_host_is_refused_and_goes_into_a_later_checkpoint(
    operations: PipelineOperations, store: Metastore
) -> None:
    """host-b was only cut off (its lease lapsed while it ran): its batch of the checkpoint
    sealed without it is refused, nothing of it recorded, and the same lines go into the
    next checkpoint."""
    live(store, "host-a")
    live(store, "host-b", ttl=SHORT_LEASE)
    first = operations.request_checkpoint("run-1").checkpoint_id
    seal(store, first, "host-a")
    time.sleep(SHORT_LEASE + 0.1)
    assert look_sealed(operations, first).wait is SealWait.LANDABLE

    with pytest.raises(IllegalTransitionError):
        seal(store, first, "host-b")

    assert [b.host for b in store.batches(first)] == ["host-a"]
    assert store.files(PIPELINE, "host-b") == []  # its offsets did not move
    live(store, "host-b")  # back
    second = operations.request_checkpoint("run-2").checkpoint_id
    assert store.unsealed_for_host(PIPELINE, "host-b") == [second]
    seal(store, second, "host-b")
    seal(store, second, "host-a", start=10)
    assert look_sealed(operations, second).wait is SealWait.LANDABLE
    assert recorded(store, "host-b") == [(second, "host-b@0")]


def test_a_late_batch_of_an_excused_host_counts_while_another_host_owes_one(
    operations: PipelineOperations, store: Metastore
) -> None:
    live(store, "host-a")
    live(store, "host-b", ttl=SHORT_LEASE)
    first = operations.request_checkpoint("run-1").checkpoint_id
    time.sleep(SHORT_LEASE + 0.1)
    assert look_sealed(operations, first).excused == ("host-b",)
    assert store.unsealed_for_host(PIPELINE, "host-b") == []  # not asked for a batch any more

    seal(store, first, "host-b")  # sealed before it saw that
    seal(store, first, "host-a")

    assert look_sealed(operations, first).checkpoint.hosts == ("host-a", "host-b")
    live(store, "host-b")
    second = operations.request_checkpoint("run-2").checkpoint_id
    seal(store, second, "host-b", start=10)
    assert recorded(store, "host-b") == [(first, "host-b@0"), (second, "host-b@10")]
