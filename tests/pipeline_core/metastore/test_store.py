"""The metastore repository: migrations, checkpoints, sealing, committing, leases."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from pyiceberg.catalog.sql import SqlCatalogBaseTable

from pipeline_core.errors import CheckpointError, MetastoreError
from pipeline_core.metastore import (
    AckerTreeRecord,
    BatchRecord,
    ByteRange,
    CheckpointState,
    IllegalTransitionError,
    LeaseHolder,
    Metastore,
    SinkStateRecord,
    alembic_config,
    open_view,
    upgrade_to_head,
)
from pipeline_core.metastore import (
    _schema as schema,
)
from pipeline_core.metastore._checkpoints import CheckpointRepository
from pipeline_core.metastore._migrations import head_revision
from pipeline_core.metastore._values import utcnow
from pipeline_core.source import FileRecord, FileState
from pipeline_core.staging_contract import EventCut, read_manifest
from tests.support.lease_holders import HolderProcess
from tests.support.staging import Event, Line, write_batch

PIPELINE = "web_access"
HOST = "web-1"
SLUICE_TABLES = {
    "sluice_files",
    "sluice_checkpoints",
    "sluice_batches",
    "sluice_batch_ranges",
    "sluice_sink_states",
    "sluice_acker_trees",
    "sluice_checkpoint_hosts",
    "sluice_leases",
    "sluice_read_progress",
    "iceberg_tables",
    "iceberg_namespace_properties",
}
"""Sluice's own tables and those of the lake's Iceberg catalog (``pipeline_core.lake``)."""


def file_record(
    fingerprint: str = "00000000000000aa",
    sealed_offset: int = 100,
    state: FileState = FileState.LIVE,
    path: str = "/var/log/nginx/access.log",
) -> FileRecord:
    return FileRecord(
        source="access",
        fingerprint=fingerprint,
        path=path,
        dev=2049,
        ino=4_294_967_296 + 17,
        sig_size=1024,
        sig_crc=0xFFFF_FFFF,
        sealed_offset=sealed_offset,
        state=state,
    )


def batch_record(checkpoint_id: int, *ranges: ByteRange) -> BatchRecord:
    lines = sum(r.lines for r in ranges)
    return BatchRecord(
        checkpoint_id=checkpoint_id,
        host=HOST,
        staging_path=f"/staging/{PIPELINE}/{checkpoint_id:08d}/{HOST}",
        line_count=lines,
        byte_count=sum(r.end - r.start for r in ranges),
        part_count=1 if ranges else 0,
        checksum="1a2b3c4d",
        event_count=lines - 1 if lines else 0,  # as if two lines made one event
        ranges=ranges,
    )


def rows(metastore: Metastore, table: sa.Table) -> list[dict[str, Any]]:
    with metastore.engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(sa.select(table))]


def table_names(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return set(sa.inspect(connection).get_table_names())
    finally:
        engine.dispose()


# -- migrations --------------------------------------------------------------------------------


def test_should_create_every_table_when_opened(metastore: Metastore, metastore_url: str) -> None:
    assert SLUICE_TABLES.issubset(table_names(metastore_url))


def test_should_leave_a_migrated_database_alone_when_opened_again(
    metastore: Metastore, metastore_url: str
) -> None:
    checkpoint = metastore.request_checkpoint(PIPELINE, "run-1")

    with metastore.engine.begin() as connection:
        upgrade_to_head(connection)
    again = Metastore.open(metastore_url)
    try:
        assert again.checkpoint(checkpoint.checkpoint_id) == checkpoint
    finally:
        again.close()
    with metastore.engine.connect() as connection:
        versions = connection.execute(sa.text("SELECT version_num FROM alembic_version")).all()
    assert [row[0] for row in versions] == [head_revision()]


@pytest.fixture
def migrated_url(metastore_url: str) -> Iterator[str]:
    """``metastore_url`` brought to head with the Alembic command API (not Metastore.open)."""
    command.upgrade(alembic_config(url=metastore_url), "head")
    yield metastore_url


def test_should_migrate_to_a_schema_matching_the_table_definitions(migrated_url: str) -> None:
    engine = sa.create_engine(migrated_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = compare_metadata(context, schema.metadata)
    finally:
        engine.dispose()

    assert differences == []


def test_should_downgrade_to_an_empty_schema_and_upgrade_again(migrated_url: str) -> None:
    config = alembic_config(url=migrated_url)
    assert SLUICE_TABLES.issubset(table_names(migrated_url))

    command.downgrade(config, "base")
    assert not SLUICE_TABLES & table_names(migrated_url)

    command.upgrade(config, "head")
    assert SLUICE_TABLES.issubset(table_names(migrated_url))


def test_should_count_the_events_of_the_manifests_recorded_before_batches_had_a_count(
    migrated_url: str, tmp_path: Path
) -> None:
    """Migration 0008: each batch's manifest copy becomes its event count (its lines where the
    copy cannot be read), and going back leaves empty manifests."""
    store = Metastore.open(migrated_url)
    try:
        ids = [store.request_checkpoint(PIPELINE, f"run-{n}").checkpoint_id for n in (1, 2)]
        for checkpoint_id in ids:
            batch = batch_record(checkpoint_id, ByteRange("aa" * 8, 0, 70, 7))
            store.seal(PIPELINE, batch, [], HOST)
    finally:
        store.close()
    config = alembic_config(url=migrated_url)
    command.downgrade(config, "0007")
    assert stored_manifests(migrated_url) == ["{}", "{}"]
    engine = sa.create_engine(migrated_url)
    try:
        with engine.begin() as connection:
            manifests = (manifest_of_events(tmp_path, ids[0]), "{not json")
            for checkpoint_id, manifest in zip(ids, manifests, strict=True):
                connection.execute(
                    sa.text("UPDATE sluice_batches SET manifest = :m WHERE checkpoint_id = :c"),
                    {"m": manifest, "c": checkpoint_id},
                )
    finally:
        engine.dispose()

    command.upgrade(config, "head")

    store = Metastore.open(migrated_url)
    try:
        counted = [batch.event_count for c in ids for batch in store.batches(c)]
    finally:
        store.close()
    assert counted == [5, 7]  # 7 lines of which two events of two lines each; unreadable: lines


def manifest_of_events(folder: Path, checkpoint_id: int) -> str:
    """The JSON of a batch's manifest whose 7 lines make 5 events (two of two lines)."""
    lines: list[Line] = [
        b"a",
        Event((b"b", b"c")),
        b"d",
        Event((b"e", b"f"), EventCut.HEADLESS),
        b"g",
    ]
    batch = write_batch(folder, PIPELINE, checkpoint_id, HOST, "app", "raw", lines, "aa" * 8)
    return json.dumps(read_manifest(batch).to_json())


def stored_manifests(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            query = sa.text("SELECT manifest FROM sluice_batches ORDER BY id")
            return [row[0] for row in connection.execute(query)]
    finally:
        engine.dispose()


def test_should_create_the_iceberg_catalog_tables_as_pyiceberg_declares_them(
    migrated_url: str,
) -> None:
    """pyiceberg's SQL catalog reads and commits through the tables the migrations create
    (it is opened with ``init_catalog_tables`` off): same columns, keys and nullability."""
    engine = sa.create_engine(migrated_url)
    try:
        with engine.connect() as connection:
            inspector = sa.inspect(connection)
            for name in ("iceberg_tables", "iceberg_namespace_properties"):
                declared = SqlCatalogBaseTable.metadata.tables[name]
                columns = {c["name"]: c for c in inspector.get_columns(declared.name)}
                assert set(columns) == {c.name for c in declared.columns}, declared.name
                for column in declared.columns:
                    assert columns[column.name]["nullable"] == column.nullable, column.name
                key = inspector.get_pk_constraint(declared.name)["constrained_columns"]
                assert set(key) == {c.name for c in declared.primary_key.columns}
    finally:
        engine.dispose()


# -- checkpoints -------------------------------------------------------------------------------


def test_should_return_the_same_checkpoint_for_the_same_run_id(metastore: Metastore) -> None:
    first = metastore.request_checkpoint(PIPELINE, "scheduled__2026-11-22T10:00")
    again = metastore.request_checkpoint(PIPELINE, "scheduled__2026-11-22T10:00")

    assert again == first
    assert first.state is CheckpointState.REQUESTED
    assert first.run_id == "scheduled__2026-11-22T10:00"
    assert len(metastore.checkpoints(PIPELINE)) == 1


def test_should_number_checkpoints_of_different_runs_apart(metastore: Metastore) -> None:
    first = metastore.request_checkpoint(PIPELINE, "run-1")
    second = metastore.request_checkpoint(PIPELINE, "run-2")
    other_pipeline = metastore.request_checkpoint("other", "run-1")

    assert len({first.checkpoint_id, second.checkpoint_id, other_pipeline.checkpoint_id}) == 3
    assert other_pipeline.pipeline == "other"


def test_should_create_a_new_checkpoint_for_each_request_without_run_id(
    metastore: Metastore,
) -> None:
    first = metastore.request_checkpoint(PIPELINE)
    second = metastore.request_checkpoint(PIPELINE)

    assert first.checkpoint_id != second.checkpoint_id
    assert first.run_id is None and second.run_id is None
    assert [c.checkpoint_id for c in metastore.checkpoints(PIPELINE)] == [
        first.checkpoint_id,
        second.checkpoint_id,
    ]


def test_should_record_the_request_time_in_utc(metastore: Metastore) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=1)

    checkpoint = metastore.request_checkpoint(PIPELINE)

    assert checkpoint.requested_at.tzinfo is not None
    assert before <= checkpoint.requested_at <= datetime.now(timezone.utc) + timedelta(seconds=1)
    assert checkpoint.sealed_at is None and checkpoint.committed_at is None
    assert checkpoint.landing == {}


def test_should_list_checkpoints_by_state_oldest_first(metastore: Metastore) -> None:
    ids = [metastore.request_checkpoint(PIPELINE).checkpoint_id for _ in range(3)]
    metastore.seal(PIPELINE, batch_record(ids[1]), [], HOST)

    requested = metastore.checkpoints(PIPELINE, [CheckpointState.REQUESTED])
    newest_two = metastore.checkpoints(PIPELINE, limit=2)

    assert [c.checkpoint_id for c in requested] == [ids[0], ids[2]]
    assert [c.checkpoint_id for c in newest_two] == ids[1:]


def test_should_raise_for_an_unknown_checkpoint(metastore: Metastore) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint 4242"):
        metastore.checkpoint(4242)


def test_should_list_requested_checkpoints_the_host_has_not_sealed(metastore: Metastore) -> None:
    first = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    second = metastore.request_checkpoint(PIPELINE, "run-2").checkpoint_id
    third = metastore.request_checkpoint(PIPELINE, "run-3").checkpoint_id
    metastore.request_checkpoint("other", "run-1")

    metastore.seal(PIPELINE, batch_record(second), [], HOST)

    assert metastore.unsealed_for_host(PIPELINE, HOST) == [first, third]
    assert metastore.unsealed_for_host("absent", HOST) == []


def test_should_list_what_many_pipelines_and_hosts_wait_for_in_one_call(
    metastore: Metastore,
) -> None:
    first = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    second = metastore.request_checkpoint(PIPELINE, "run-2").checkpoint_id
    other = metastore.request_checkpoint("other", "run-1").checkpoint_id
    metastore.seal(PIPELINE, batch_record(second), [], HOST)
    pairs = [(PIPELINE, HOST), ("other", HOST), (PIPELINE, "host-b"), ("absent", HOST)]

    waiting = metastore.unsealed_for_hosts(pairs)

    assert waiting == {
        (PIPELINE, HOST): [first],
        ("other", HOST): [other],
        (PIPELINE, "host-b"): [first],  # the second is sealed: no host was expected
        ("absent", HOST): [],
    }
    assert waiting == {pair: metastore.unsealed_for_host(*pair) for pair in pairs}


# -- sealing -----------------------------------------------------------------------------------


def test_should_record_batch_ranges_and_files_and_seal_the_checkpoint(
    metastore: Metastore,
) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    ranges = (ByteRange("00000000000000aa", 0, 100, 4), ByteRange("00000000000000bb", 50, 80, 2))
    files = [
        file_record("00000000000000aa", 100),
        file_record("00000000000000bb", 80, FileState.ROTATED, "/var/log/nginx/access.log.1"),
    ]

    batch_id = metastore.seal(PIPELINE, batch_record(checkpoint_id, *ranges), files, HOST)

    checkpoint = metastore.checkpoint(checkpoint_id)
    assert checkpoint.state is CheckpointState.SEALED
    assert checkpoint.sealed_at is not None
    (batch,) = metastore.batches(checkpoint_id)
    assert batch.batch_id == batch_id
    assert (batch.host, batch.line_count, batch.byte_count, batch.part_count) == (HOST, 6, 130, 1)
    assert batch.staging_path == f"/staging/{PIPELINE}/{checkpoint_id:08d}/{HOST}"
    assert batch.event_count == 5
    stored_ranges = sorted(
        (r["batch_id"], r["fingerprint"], r["start_offset"], r["end_offset"], r["line_count"])
        for r in rows(metastore, schema.batch_ranges)
    )
    assert stored_ranges == [
        (batch_id, "00000000000000aa", 0, 100, 4),
        (batch_id, "00000000000000bb", 50, 80, 2),
    ]
    assert metastore.files(PIPELINE, HOST) == files
    assert metastore.files(PIPELINE, "another-host") == []


def test_should_update_known_files_on_the_next_seal(metastore: Metastore) -> None:
    first = metastore.request_checkpoint(PIPELINE).checkpoint_id
    second = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.seal(PIPELINE, batch_record(first), [file_record(sealed_offset=100)], HOST)

    later = file_record(sealed_offset=250, state=FileState.DONE, path="/var/log/old.log")
    metastore.seal(PIPELINE, batch_record(second), [later], HOST)

    assert metastore.files(PIPELINE, HOST) == [later]


def test_should_store_a_file_name_of_any_bytes_and_read_back_the_same_path(
    metastore: Metastore, metastore_url: str
) -> None:
    """A name that is not UTF-8 is stored in an escaped form (not starting with ``/``); a valid
    UTF-8 name, control characters and all, is stored exactly as before."""
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    names = [b"/var/log/bad\xff.log", b"/var/log/caf\xc3\xa9.log", b"/var/log/a\nb\x1b.log"]
    files = [
        file_record(f"00000000000000a{number}", path=os.fsdecode(name))
        for number, name in enumerate(names)
    ]

    metastore.seal(PIPELINE, batch_record(checkpoint_id), files, HOST)

    assert metastore.files(PIPELINE, HOST) == files
    with open_view(metastore_url) as view:
        assert view is not None
        assert view.files(PIPELINE) == {HOST: files}
    stored = [row["path"] for row in sorted(rows(metastore, schema.files), key=lambda r: r["id"])]
    assert stored == [
        "escaped:/var/log/bad\\xff.log",
        "/var/log/caf\xe9.log",
        "/var/log/a\nb\x1b.log",
    ]


def test_should_refuse_to_seal_a_checkpoint_that_is_not_requested(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    original = file_record(sealed_offset=100)
    metastore.seal(PIPELINE, batch_record(checkpoint_id), [original], HOST)
    sealed = metastore.checkpoint(checkpoint_id)

    retry = batch_record(checkpoint_id, ByteRange(original.fingerprint, 100, 200, 3))
    with pytest.raises(CheckpointError, match=f"checkpoint {checkpoint_id} is sealed"):
        metastore.seal(PIPELINE, retry, [file_record(sealed_offset=200)], "web-2")

    assert metastore.checkpoint(checkpoint_id) == sealed
    assert len(metastore.batches(checkpoint_id)) == 1
    assert rows(metastore, schema.batch_ranges) == []
    assert metastore.files(PIPELINE, HOST) == [original]
    assert metastore.files(PIPELINE, "web-2") == []


def test_should_refuse_to_seal_a_committed_or_unknown_checkpoint(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)
    metastore.commit_checkpoint(checkpoint_id, {})

    with pytest.raises(CheckpointError):
        metastore.seal(PIPELINE, batch_record(checkpoint_id), [file_record()], HOST)
    with pytest.raises(CheckpointError):
        metastore.seal(PIPELINE, batch_record(checkpoint_id + 1), [file_record()], HOST)

    assert metastore.files(PIPELINE, HOST) == []


def test_should_roll_back_the_whole_seal_when_one_write_fails(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    ranges = (ByteRange("00000000000000aa", 0, 10, 1),)
    # The same fingerprint twice violates the files' unique identity, after the batch and its
    # ranges were inserted: nothing of the seal may remain.
    duplicated = [file_record(sealed_offset=10), file_record(sealed_offset=10)]

    with pytest.raises(MetastoreError):
        metastore.seal(PIPELINE, batch_record(checkpoint_id, *ranges), duplicated, HOST)

    assert metastore.checkpoint(checkpoint_id).state is CheckpointState.REQUESTED
    assert metastore.batches(checkpoint_id) == []
    assert rows(metastore, schema.batch_ranges) == []
    assert metastore.files(PIPELINE, HOST) == []
    assert metastore.unsealed_for_host(PIPELINE, HOST) == [checkpoint_id]


@pytest.mark.timeout(60)
def test_should_seal_a_checkpoint_whose_hosts_seal_their_batches_at_once(
    metastore: Metastore, metastore_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each host's transaction records its own batch, then counts the hosts still owing one:
    were both counts taken before either transaction committed, each would see the other host
    owing and the checkpoint would never be sealed. The second seal waits for the first."""
    hosts = (HOST, "web-2")
    for host in hosts:
        assert metastore.acquire_lease(PIPELINE, host, f"collector-{host}", 60)
    checkpoint_id = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    both_recorded = threading.Barrier(2)
    host_sealed = CheckpointRepository.host_sealed

    def record_then_wait(self: CheckpointRepository, checkpoint: int, host: str) -> None:
        host_sealed(self, checkpoint, host)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_recorded.wait(timeout=2)  # until the other host has, or cannot have, too

    monkeypatch.setattr(CheckpointRepository, "host_sealed", record_then_wait)
    errors: list[BaseException] = []

    def seal(host: str) -> None:
        store = Metastore.open(metastore_url)
        try:
            batch = dataclasses.replace(
                batch_record(checkpoint_id),
                host=host,
                staging_path=f"/staging/{PIPELINE}/{checkpoint_id:08d}/{host}",
            )
            store.seal(PIPELINE, batch, [], host)
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=seal, args=(host,)) for host in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=45)

    assert not errors
    assert sorted(b.host for b in metastore.batches(checkpoint_id)) == sorted(hosts)
    assert metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED


# -- committing --------------------------------------------------------------------------------


def test_should_commit_a_sealed_checkpoint_with_its_landing_counts(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)
    landing = {"rows": {"access": 9}, "rejects": {"no_match": 1}}

    committed = metastore.commit_checkpoint(checkpoint_id, landing)

    assert committed.state is CheckpointState.COMMITTED
    assert committed.committed_at is not None
    assert committed.landing == landing
    assert metastore.checkpoint(checkpoint_id) == committed


def test_should_forget_the_checkpoints_committed_before_a_time_and_everything_of_theirs(
    metastore: Metastore,
) -> None:
    """A month of one-minute DAG runs is 43,200 checkpoints, each with a batch, byte ranges and
    host rows per host: maintenance forgets the old committed ones."""
    metastore.acquire_lease(PIPELINE, HOST, "collector-1", 60)
    ids = []
    for number in range(4):
        ids.append(metastore.request_checkpoint(PIPELINE, f"run-{number}").checkpoint_id)
        metastore.seal(
            PIPELINE,
            batch_record(ids[-1], ByteRange(f"{number:016x}", 0, 10, 1)),
            [file_record(sealed_offset=10 * (number + 1))],
            HOST,
        )
    for checkpoint_id in ids[:2]:
        metastore.commit_checkpoint(checkpoint_id, {})
    cutoff = utcnow()
    time.sleep(0.01)
    metastore.commit_checkpoint(ids[2], {})
    later = metastore.request_checkpoint(PIPELINE, "run-later").checkpoint_id
    assert len(rows(metastore, schema.checkpoint_hosts)) == 5

    forgotten = metastore.transitions.forget_checkpoints(PIPELINE, cutoff)

    assert forgotten == ids[:2]
    remaining = {c.checkpoint_id for c in metastore.checkpoints(PIPELINE)}
    assert remaining == {ids[2], ids[3], later}
    assert {b["checkpoint_id"] for b in rows(metastore, schema.batches)} == {ids[2], ids[3]}
    assert len(rows(metastore, schema.batch_ranges)) == 2
    assert {h["checkpoint_id"] for h in rows(metastore, schema.checkpoint_hosts)} == remaining
    assert metastore.files(PIPELINE, HOST) == [file_record(sealed_offset=40)]  # files stay
    assert metastore.transitions.forget_checkpoints(PIPELINE, cutoff) == []


def test_should_delete_the_rows_of_the_files_a_seal_names_forgotten(metastore: Metastore) -> None:
    first, other, second = (metastore.request_checkpoint(PIPELINE).checkpoint_id for _ in "abc")
    old = file_record("00000000000000aa", 500, FileState.DONE, "/var/log/app.log-20261101")
    live = file_record("00000000000000bb", 100)
    metastore.seal(PIPELINE, batch_record(first), [old, live], HOST)
    metastore.seal(PIPELINE, batch_record(other), [old], "web-2")

    metastore.seal(PIPELINE, batch_record(second), [], HOST, forgotten=[old.fingerprint])

    assert metastore.files(PIPELINE, HOST) == [live]
    assert metastore.files(PIPELINE, "web-2") == [old]  # another host's file of that name


def test_should_commit_again_without_error(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)
    metastore.commit_checkpoint(checkpoint_id, {"rows": {"access": 1}})

    again = metastore.commit_checkpoint(checkpoint_id, {"rows": {"access": 2}})

    assert again.state is CheckpointState.COMMITTED
    assert again.landing == {"rows": {"access": 2}}


def test_should_refuse_to_commit_a_requested_checkpoint(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id

    with pytest.raises(CheckpointError, match="only sealed"):
        metastore.commit_checkpoint(checkpoint_id, {"rows": {}})

    checkpoint = metastore.checkpoint(checkpoint_id)
    assert checkpoint.state is CheckpointState.REQUESTED
    assert checkpoint.landing == {}


def test_should_refuse_to_commit_an_unknown_checkpoint(metastore: Metastore) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint 4242"):
        metastore.commit_checkpoint(4242, {})


# -- failing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sealed", [False, True], ids=["requested", "sealed"])
def test_should_fail_a_checkpoint_with_its_error(metastore: Metastore, sealed: bool) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    if sealed:
        metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)

    failed = metastore.transitions.fail_checkpoint(checkpoint_id, "recorded batches missing: web-1")

    assert failed.state is CheckpointState.FAILED
    assert failed.error == "recorded batches missing: web-1"
    assert metastore.checkpoint(checkpoint_id) == failed
    assert metastore.unsealed_for_host(PIPELINE, HOST) == []


def test_should_refuse_to_fail_a_committed_checkpoint(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)
    metastore.commit_checkpoint(checkpoint_id, {"rows": {"access": 1}})

    with pytest.raises(
        IllegalTransitionError,
        match=f"checkpoint {checkpoint_id} is committed; only requested or sealed checkpoints "
        "can become failed",
    ):
        metastore.transitions.fail_checkpoint(checkpoint_id, "too late")

    after = metastore.checkpoint(checkpoint_id)
    assert (after.state, after.error) == (CheckpointState.COMMITTED, None)


def test_should_neither_seal_nor_commit_a_failed_checkpoint(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    metastore.transitions.fail_checkpoint(checkpoint_id, "gave up")

    with pytest.raises(IllegalTransitionError, match=f"checkpoint {checkpoint_id} is failed"):
        metastore.seal(PIPELINE, batch_record(checkpoint_id), [file_record()], HOST)
    with pytest.raises(IllegalTransitionError, match="can become committed"):
        metastore.commit_checkpoint(checkpoint_id, {})

    assert metastore.batches(checkpoint_id) == []
    assert metastore.files(PIPELINE, HOST) == []
    assert metastore.checkpoint(checkpoint_id).error == "gave up"


def test_should_refuse_to_fail_an_unknown_checkpoint(metastore: Metastore) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint 4242"):
        metastore.transitions.fail_checkpoint(4242, "gone")


# -- data intervals ----------------------------------------------------------------------------


def test_should_keep_the_data_interval_of_the_requesting_run(metastore: Metastore) -> None:
    start = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    interval = (start, start + timedelta(minutes=5))

    recorded = metastore.request_checkpoint(PIPELINE, "run-1", interval)
    unrecorded = metastore.request_checkpoint(PIPELINE, "run-2")

    assert recorded.data_interval == interval
    assert unrecorded.data_interval is None


def test_should_find_the_landable_checkpoints_of_an_interval(metastore: Metastore) -> None:
    start = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    five = timedelta(minutes=5)
    inside = metastore.request_checkpoint(PIPELINE, "in", (start, start + five))
    metastore.seal(PIPELINE, batch_record(inside.checkpoint_id), [], HOST)
    requested = metastore.request_checkpoint(PIPELINE, "waiting", (start, start + five))
    later = metastore.request_checkpoint(PIPELINE, "later", (start + five, start + 2 * five))
    metastore.seal(PIPELINE, batch_record(later.checkpoint_id), [], HOST)

    found = metastore.checkpoints_in_interval(PIPELINE, start, start + five)

    assert [c.checkpoint_id for c in found] == [inside.checkpoint_id]
    assert requested.checkpoint_id not in [c.checkpoint_id for c in found]


# -- leases ------------------------------------------------------------------------------------


def lease_row(metastore: Metastore) -> dict[str, Any]:
    (row,) = rows(metastore, schema.leases)
    return row


def test_should_grant_a_free_lease(metastore: Metastore) -> None:
    assert metastore.lease_holder(PIPELINE, HOST) is None

    assert metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)

    assert metastore.lease_holder(PIPELINE, HOST) == "collector-a"
    assert metastore.lease_holder(PIPELINE, "web-2") is None


def test_should_refuse_a_lease_held_by_another_holder(metastore: Metastore) -> None:
    metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)

    assert not metastore.acquire_lease(PIPELINE, HOST, "collector-b", 60)
    assert metastore.lease_holder(PIPELINE, HOST) == "collector-a"
    assert metastore.acquire_lease(PIPELINE, "web-2", "collector-b", 60)


def test_should_renew_a_lease_for_the_same_holder(metastore: Metastore) -> None:
    metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)
    first_expiry = lease_row(metastore)["expires_at"]

    assert metastore.acquire_lease(PIPELINE, HOST, "collector-a", 600)

    row = lease_row(metastore)
    assert row["holder"] == "collector-a"
    assert row["expires_at"] > first_expiry


def test_should_renew_many_leases_together_and_acquire_only_those_not_held(
    metastore: Metastore,
) -> None:
    for pipeline in ("p1", "p2"):
        assert metastore.acquire_lease(pipeline, HOST, "collector-a", 60)
    assert metastore.acquire_lease("p3", HOST, "collector-b", 60)
    before = {r["pipeline"]: r for r in rows(metastore, schema.leases)}

    granted = metastore.acquire_leases(
        [(p, HOST, "collector-a", 600) for p in ("p1", "p2", "p3", "p4")]
    )

    after = {r["pipeline"]: r for r in rows(metastore, schema.leases)}
    assert granted == [True, True, False, True]  # p3 is b's; p4 was free
    for pipeline in ("p1", "p2"):
        assert after[pipeline]["expires_at"] > before[pipeline]["expires_at"]
        assert after[pipeline]["acquired_at"] == before[pipeline]["acquired_at"]
    assert after["p3"] == before["p3"]
    assert after["p4"]["holder"] == "collector-a"
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]).split()[0])

    sa.event.listen(metastore.engine, "before_cursor_execute", count)
    try:
        renewed = metastore.acquire_leases([(p, HOST, "collector-a", 600) for p in ("p1", "p2")])
    finally:
        sa.event.remove(metastore.engine, "before_cursor_execute", count)
    assert renewed == [True, True]
    assert statements.count("UPDATE") == 1  # both held: renewed in one statement


def test_should_let_another_holder_take_over_an_expired_lease(metastore: Metastore) -> None:
    assert metastore.acquire_lease(PIPELINE, HOST, "collector-a", 1.0)
    assert not metastore.acquire_lease(PIPELINE, HOST, "collector-b", 60)

    time.sleep(1.1)

    assert metastore.lease_holder(PIPELINE, HOST) is None
    assert metastore.acquire_lease(PIPELINE, HOST, "collector-b", 60)
    assert metastore.lease_holder(PIPELINE, HOST) == "collector-b"
    assert not metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)


def test_should_record_when_a_taken_over_lease_was_acquired(metastore: Metastore) -> None:
    metastore.acquire_lease(PIPELINE, HOST, "collector-a", 0.2)
    first_acquired = lease_row(metastore)["acquired_at"]
    time.sleep(0.3)

    metastore.acquire_lease(PIPELINE, HOST, "collector-b", 60)

    assert lease_row(metastore)["acquired_at"] > first_acquired


def test_should_free_a_released_lease(metastore: Metastore) -> None:
    metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)

    metastore.release_lease(PIPELINE, HOST, "collector-a")

    assert metastore.lease_holder(PIPELINE, HOST) is None
    assert metastore.acquire_lease(PIPELINE, HOST, "collector-b", 60)


def test_should_ignore_a_release_by_someone_else(metastore: Metastore) -> None:
    metastore.acquire_lease(PIPELINE, HOST, "collector-a", 60)

    metastore.release_lease(PIPELINE, HOST, "collector-b")

    assert metastore.lease_holder(PIPELINE, HOST) == "collector-a"


# -- leases of dead holders (real processes on this machine) -----------------------------------

OTHER_BOOT = "0" * 32


def my_holder(nonce: str = "ab12cd34") -> str:
    return LeaseHolder.of_this_process(HOST, nonce).format()


def elsewhere(child: HolderProcess, **changes: Any) -> str:
    """The child's holder as if it had run on another machine (or an earlier boot)."""
    parsed = child.parsed
    return dataclasses.replace(
        parsed, process=dataclasses.replace(parsed.process, **changes)
    ).format()


@pytest.mark.timeout(120)
def test_should_refuse_the_lease_of_a_live_holder_process(
    metastore: Metastore, metastore_url: str
) -> None:
    with HolderProcess(HOST, metastore_url) as child:
        assert not metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)

        assert metastore.lease_holder(PIPELINE, HOST) == child.holder


@pytest.mark.timeout(120)
def test_should_take_over_at_once_the_lease_of_a_killed_holder_on_this_machine(
    metastore: Metastore, metastore_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with HolderProcess(HOST, metastore_url, ttl=60) as child:
        child.kill()

        assert metastore.lease_holder(PIPELINE, HOST) == child.holder  # until taken over
        with caplog.at_level(logging.WARNING, logger="pipeline_core.metastore"):
            assert metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)

    row = lease_row(metastore)
    assert row["holder"] == my_holder()
    expires = row["expires_at"].replace(tzinfo=row["expires_at"].tzinfo or timezone.utc)
    assert expires > datetime.now(timezone.utc) + timedelta(seconds=50)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"taken over from {child.holder}: its process has exited" in warning
    assert not metastore.acquire_lease(PIPELINE, HOST, my_holder("cd34ab12"), 60)


@pytest.mark.timeout(120)
def test_should_take_over_the_lease_of_a_holder_whose_pid_names_a_later_process(
    metastore: Metastore, metastore_url: str
) -> None:
    with HolderProcess(HOST, metastore_url) as child:
        reused = elsewhere(child, start_ticks=(child.parsed.process.start_ticks or 0) - 1)
        metastore.release_lease(PIPELINE, HOST, child.holder)
        assert metastore.acquire_lease(PIPELINE, HOST, reused, 60)

        assert metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)  # child runs: its pid


@pytest.mark.timeout(120)
def test_should_take_over_the_lease_of_a_holder_from_an_earlier_boot(
    metastore: Metastore,
) -> None:
    mine = LeaseHolder.parse(my_holder())
    assert mine is not None
    if mine.process.machine is None:
        pytest.skip("this machine has no machine id")
    earlier = dataclasses.replace(
        mine, process=dataclasses.replace(mine.process, boot_id=OTHER_BOOT), nonce="0ld0b007"
    )
    assert metastore.acquire_lease(PIPELINE, HOST, earlier.format(), 60)

    assert metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)


@pytest.mark.timeout(120)
def test_should_refuse_until_it_expires_the_lease_of_a_dead_looking_holder_on_another_machine(
    metastore: Metastore, metastore_url: str
) -> None:
    with HolderProcess(HOST, metastore_url) as child:
        child.kill()
        other_machine = elsewhere(child, boot_id=OTHER_BOOT, machine="f" * 16)
        metastore.release_lease(PIPELINE, HOST, child.holder)
        # Long enough that a loaded machine does not let it lapse between two statements.
        assert metastore.acquire_lease(PIPELINE, HOST, other_machine, 3.0)

        assert not metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)
        assert metastore.lease_holder(PIPELINE, HOST) == other_machine

        time.sleep(3.1)
        assert metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)


def test_should_refuse_until_it_expires_the_lease_of_a_holder_in_the_older_form(
    metastore: Metastore,
) -> None:
    old = "web-1:4194303:ab12cd34"  # host:pid:nonce, no process has that pid
    assert metastore.acquire_lease(PIPELINE, HOST, old, 3.0)  # outlasts a loaded machine's pause

    assert not metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)

    time.sleep(3.1)
    assert metastore.acquire_lease(PIPELINE, HOST, my_holder(), 60)


def acquire_at_once(stores: list[Metastore], holders: list[str]) -> list[bool]:
    """Each store takes the lease for its holder, all at the same moment, on threads."""
    start = threading.Barrier(len(stores))
    won: list[bool] = []

    def contend(store: Metastore, holder: str) -> None:
        start.wait(timeout=30)
        won.append(store.acquire_lease(PIPELINE, HOST, holder, 60))

    threads = [
        threading.Thread(target=contend, args=pair) for pair in zip(stores, holders, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return won


@pytest.mark.timeout(120)
def test_should_let_exactly_one_of_two_collectors_take_over_a_dead_holder(
    metastore: Metastore, metastore_url: str
) -> None:
    with HolderProcess(HOST, metastore_url) as child:
        child.kill()
        contenders = [Metastore.open(metastore_url) for _ in range(2)]
        try:
            for attempt in range(8):
                dead = elsewhere(child, start_ticks=attempt)  # its pid is free: dead too
                metastore.release_lease(PIPELINE, HOST, lease_row(metastore)["holder"])
                assert metastore.acquire_lease(PIPELINE, HOST, dead, 60)
                won = acquire_at_once(contenders, [my_holder(f"{attempt}c{i}") for i in (0, 1)])

                assert sorted(won) == [False, True], f"attempt {attempt}"
        finally:
            for store in contenders:
                store.close()


# -- sink penalty/backoff state ----------------------------------------------------------------


def sink_state(group: str, sink: str, failures: int, error: str | None) -> SinkStateRecord:
    return SinkStateRecord(group, sink, failures, 1000.0 + failures, 990.0, error)


def test_should_have_no_sink_state_for_a_new_pipeline(metastore: Metastore) -> None:
    assert metastore.sink_states(PIPELINE, "host-a") == []


def test_should_upsert_sink_states_and_read_them_back(metastore: Metastore) -> None:
    metastore.save_sink_states(
        PIPELINE,
        "host-a",
        [sink_state("web", "primary", 1, "boom"), sink_state("web", "b", 0, None)],
    )
    metastore.save_sink_states(PIPELINE, "host-a", [sink_state("web", "primary", 3, "again")])

    states = sorted(metastore.sink_states(PIPELINE, "host-a"), key=lambda s: s.sink)
    assert states == [sink_state("web", "b", 0, None), sink_state("web", "primary", 3, "again")]


def test_should_keep_sink_states_apart_per_host(metastore: Metastore) -> None:
    metastore.save_sink_states(PIPELINE, "host-a", [sink_state("web", "primary", 2, "x")])
    assert metastore.sink_states(PIPELINE, "host-b") == []


# -- acker trees ---------------------------------------------------------------------------------


def tree(tree_id: int, start: int) -> AckerTreeRecord:
    return AckerTreeRecord(tree_id, 2**64 - 1 - tree_id, "access", "fp", start, start + 10, 2)


def test_should_round_trip_64_bit_acker_trees(metastore: Metastore) -> None:
    trees = [tree(2**63 + 5, 0), tree(1, 10)]
    metastore.save_acker_trees(PIPELINE, "host-a", trees)
    assert metastore.acker_trees(PIPELINE, "host-a") == trees


def test_should_replace_the_saved_acker_trees_as_a_whole(metastore: Metastore) -> None:
    metastore.save_acker_trees(PIPELINE, "host-a", [tree(1, 0), tree(2, 10)])
    metastore.save_acker_trees(PIPELINE, "host-a", [tree(3, 20)])
    assert metastore.acker_trees(PIPELINE, "host-a") == [tree(3, 20)]
    assert metastore.acker_trees(PIPELINE, "host-b") == []


# -- several hosts ------------------------------------------------------------------------------


def host_batch(checkpoint_id: int, host: str) -> BatchRecord:
    return dataclasses.replace(
        batch_record(checkpoint_id, ByteRange("00000000000000aa", 0, 10, 1)), host=host
    )


def test_should_wait_for_every_host_whose_collector_was_live_at_the_request(
    metastore: Metastore,
) -> None:
    for host in ("host-a", "host-b"):
        assert metastore.acquire_lease(PIPELINE, host, f"{host}:1", 60)
    checkpoint_id = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    assert metastore.unsealed_for_host(PIPELINE, "host-a") == [checkpoint_id]
    assert metastore.unsealed_for_host(PIPELINE, "host-c") == []  # joined later: next one

    metastore.seal(PIPELINE, host_batch(checkpoint_id, "host-a"), [], "host-a")
    assert metastore.checkpoint(checkpoint_id).state is CheckpointState.REQUESTED
    assert metastore.unsealed_for_host(PIPELINE, "host-a") == []
    assert metastore.unsealed_for_host(PIPELINE, "host-b") == [checkpoint_id]

    metastore.seal(PIPELINE, host_batch(checkpoint_id, "host-b"), [], "host-b")
    assert metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED
    assert {b.host for b in metastore.batches(checkpoint_id)} == {"host-a", "host-b"}


def test_should_stop_waiting_for_a_host_whose_lease_lapsed(metastore: Metastore) -> None:
    assert metastore.acquire_lease(PIPELINE, "host-a", "a:1", 60)
    # Long enough that a loaded machine still checks before it lapses.
    assert metastore.acquire_lease(PIPELINE, "host-b", "b:1", 2.0)
    checkpoint_id = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    metastore.seal(PIPELINE, host_batch(checkpoint_id, "host-a"), [], "host-a")
    assert metastore.transitions.excuse_lapsed_hosts(checkpoint_id) == []

    time.sleep(2.1)

    assert metastore.transitions.excuse_lapsed_hosts(checkpoint_id) == ["host-b"]
    assert metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED
    assert metastore.unsealed_for_host(PIPELINE, "host-b") == []


def test_should_take_a_retried_seal_of_the_same_batch_as_done(metastore: Metastore) -> None:
    checkpoint_id = metastore.request_checkpoint(PIPELINE).checkpoint_id
    first = metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)

    again = metastore.seal(PIPELINE, batch_record(checkpoint_id), [], HOST)

    assert again == first
    assert len(metastore.batches(checkpoint_id)) == 1
