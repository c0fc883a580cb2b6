"""Compaction, snapshot expiry and orphan file removal on real Iceberg tables."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import Table, Transaction

from pipeline_core.lake import (
    MANAGED_PROPERTIES,
    MANIFESTS_BEFORE_MERGE,
    METADATA_VERSIONS_KEPT,
    LakeCatalog,
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    compact_table,
    expire_snapshots,
    files_per_day,
    open_lake,
    remove_orphan_files,
    source_schema,
)
from pipeline_core.lake._maintenance import day_of
from tests.pipeline_core.lake.support import DAY, rows, write_file


@pytest.fixture
def table(lake: LakeLocation) -> Iterator[Table]:
    with open_lake(lake) as catalog:
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        yield catalog.ensure_table("misc", source_schema("raw"), "raw")


def land(table: Table, checkpoint_id: int, count: int, **kwargs: object) -> None:
    files = {checkpoint_id: [write_file(table, rows(checkpoint_id, count, **kwargs))]}  # type: ignore[arg-type]
    commit_files(
        table, TableCommit(files, (checkpoint_id,), f"run-{checkpoint_id}", LandingMode.APPEND)
    )


def everything(table: Table) -> pa.Table:
    table.refresh()
    return table.scan().to_arrow().sort_by("event_id")


def test_compaction_rewrites_a_days_files_into_one_and_changes_no_row(table: Table) -> None:
    for checkpoint_id in range(1, 13):
        land(table, checkpoint_id, 50)
    land(table, 13, 5, day=DAY + timedelta(days=1))
    before = everything(table)

    compaction = compact_table(table, DAY.date())

    assert (compaction.files_before, compaction.files_after, compaction.rows) == (12, 1, 600)
    assert compaction.committed
    assert files_per_day(table) == {DAY.date(): 1, (DAY + timedelta(days=1)).date(): 1}
    assert everything(table).equals(before)
    assert table.current_snapshot().summary.get("sluice.operation") == "compact"  # type: ignore[union-attr]


def test_compaction_rolls_files_at_the_target_size(table: Table) -> None:
    for checkpoint_id in range(1, 5):
        land(table, checkpoint_id, 2000)

    compaction = compact_table(table, DAY.date(), target_bytes=1)

    assert compaction.committed and compaction.files_after >= 2
    table.refresh()
    assert sum(t.file.record_count for t in table.scan().plan_files()) == 8000


def test_a_day_with_one_file_is_left_alone(table: Table) -> None:
    land(table, 1, 10)
    snapshot = table.current_snapshot()

    compaction = compact_table(table, DAY.date())

    assert not compaction.committed
    table.refresh()
    assert table.current_snapshot() == snapshot


def test_a_landing_committed_during_compaction_is_kept(
    table: Table, lake: LakeLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compaction's commit loses to the landing; it plans the day again, with it."""
    for checkpoint_id in range(1, 4):
        land(table, checkpoint_id, 20)
    with open_lake(lake) as other:
        racing = other.load("misc")
        assert racing is not None
        landed: list[int] = []

        commit = table.transaction

        def land_then_commit() -> Transaction:
            if not landed:  # another writer commits while the day's files are rewritten
                land(racing, 4, 20)
                landed.append(4)
            return commit()

        monkeypatch.setattr(table, "transaction", land_then_commit)
        compaction = compact_table(table, DAY.date())

    assert compaction.committed and compaction.files_after == 1
    table.refresh()
    counts = table.scan(selected_fields=("checkpoint_id",)).to_arrow().column(0).to_pylist()
    assert sorted(set(counts)) == [1, 2, 3, 4] and len(counts) == 80


@pytest.mark.timeout(120)
def test_a_reader_during_compaction_sees_the_same_rows(table: Table, lake: LakeLocation) -> None:
    for checkpoint_id in range(1, 21):
        land(table, checkpoint_id, 100)
    expected = everything(table)
    seen: list[bool] = []
    stop = threading.Event()

    def read() -> None:
        with open_lake(lake) as catalog:
            while not stop.is_set():
                mine = catalog.load("misc")
                assert mine is not None
                seen.append(mine.scan().to_arrow().sort_by("event_id").equals(expected))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.2)
    compaction = compact_table(table, DAY.date())
    time.sleep(0.2)
    stop.set()
    reader.join(timeout=60)

    assert compaction.committed
    assert seen and all(seen)


def test_orphans_are_the_old_unreferenced_files(table: Table) -> None:
    land(table, 1, 10)
    crashed = write_file(table, rows(2, 10))  # a landing killed before its commit
    young = write_file(table, rows(3, 10))
    old = time.time() - 2 * 3600
    os.utime(crashed.removeprefix("file://"), (old, old))
    referenced = [t.file.file_path for t in table.scan().plan_files()]
    for path in referenced:
        os.utime(path.removeprefix("file://"), (old, old))

    removed = remove_orphan_files(table, grace=timedelta(hours=1))

    assert removed == 1
    assert not os.path.exists(crashed.removeprefix("file://"))
    assert os.path.exists(young.removeprefix("file://"))
    assert all(os.path.exists(p.removeprefix("file://")) for p in referenced)
    assert everything(table).num_rows == 10


def test_expiry_keeps_the_current_snapshot_and_its_rows(table: Table) -> None:
    for checkpoint_id in range(1, 4):
        land(table, checkpoint_id, 10)
    before = everything(table)

    expired = expire_snapshots(table, retention=timedelta(0))

    table.refresh()
    assert expired == 2
    assert len(table.snapshots()) == 1
    assert everything(table).equals(before)
    assert [day_of(t) for t in table.scan().plan_files()] == [DAY.date()] * 3


def test_expiry_keeps_at_most_a_number_of_snapshots_however_young(table: Table) -> None:
    """A week of one-minute landings is 10,080 snapshots, every one listed in the
    ``metadata.json`` each commit rewrites."""
    for checkpoint_id in range(1, 8):
        land(table, checkpoint_id, 10)
    newest = [s.snapshot_id for s in table.snapshots()][-3:]

    expired = expire_snapshots(table, keep_at_most=3)

    table.refresh()
    assert expired == 4
    assert [s.snapshot_id for s in table.snapshots()] == newest
    assert everything(table).num_rows == 70


def test_compaction_finds_nothing_in_an_empty_table(lake: LakeLocation) -> None:
    with open_lake(lake) as catalog:
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        empty = LakeCatalog.ensure_table(catalog, "empty", source_schema("raw"), "raw")
        assert files_per_day(empty) == {}
        assert not compact_table(empty, DAY.date()).committed


def test_a_checkpoint_is_replaced_inside_a_compacted_file(table: Table) -> None:
    """After compaction one file holds several checkpoints: replacing one rewrites that file
    without it, in the same commit as the new rows."""
    for checkpoint_id in range(1, 4):
        land(table, checkpoint_id, 30)
    compact_table(table, DAY.date())
    others = everything(table).filter(pa.compute.not_equal(pa.compute.field("checkpoint_id"), 2))
    newer = {2: [write_file(table, rows(2, 5, first=500))]}

    commit_files(table, TableCommit(newer, (2,), "reprocess", LandingMode.REPLACE))

    after = everything(table)
    assert after.num_rows == 65
    assert after.filter(pa.compute.not_equal(pa.compute.field("checkpoint_id"), 2)).equals(others)
    replaced = after.filter(pa.compute.equal(pa.compute.field("checkpoint_id"), 2))
    assert sorted(replaced.column("byte_offset").to_pylist()) == list(range(500, 505))


def metadata_folder(table: Table) -> list[Path]:
    return sorted(Path(table.location().removeprefix("file://"), "metadata").iterdir())


def test_a_table_keeps_a_bounded_number_of_metadata_versions(table: Table) -> None:
    """Every commit writes a ``metadata.json``; a landing every minute would keep 1,440 a day."""
    commits = METADATA_VERSIONS_KEPT + 15
    for checkpoint_id in range(1, commits + 1):
        land(table, checkpoint_id, 3)

    table.refresh()
    versions = [p for p in metadata_folder(table) if p.name.endswith(".metadata.json")]
    assert len(versions) == METADATA_VERSIONS_KEPT + 1
    assert len(table.metadata.metadata_log) == METADATA_VERSIONS_KEPT
    assert everything(table).num_rows == 3 * commits


def test_a_landings_commit_merges_the_tables_manifests(table: Table) -> None:
    for checkpoint_id in range(1, 2 * MANIFESTS_BEFORE_MERGE + 1):
        land(table, checkpoint_id, 3)

    table.refresh()
    manifests = table.current_snapshot().manifests(table.io)  # type: ignore[union-attr]
    assert len(manifests) < MANIFESTS_BEFORE_MERGE
    assert everything(table).num_rows == 3 * 2 * MANIFESTS_BEFORE_MERGE


def test_maintenance_leaves_the_metadata_of_the_current_snapshot_only(table: Table) -> None:
    """Expired snapshots' manifest lists and the manifests merged away are orphans too: after
    expiry and orphan removal, the metadata folder is what the table still reads."""
    for checkpoint_id in range(1, 41):
        land(table, checkpoint_id, 3)
    before = everything(table)

    expire_snapshots(table, retention=timedelta(0))
    removed = remove_orphan_files(table, grace=timedelta(0))

    table.refresh()
    snapshot = table.current_snapshot()
    assert snapshot is not None
    avro = {p.name for p in metadata_folder(table) if p.suffix == ".avro"}
    wanted = {Path(snapshot.manifest_list).name} | {
        Path(m.manifest_path).name for m in snapshot.manifests(table.io)
    }
    assert avro == wanted
    assert removed > 40
    assert everything(table).equals(before)
    land(table, 41, 3)  # the table still takes commits
    assert everything(table).num_rows == before.num_rows + 3


def test_orphan_removal_keeps_young_metadata_a_commit_under_way_may_need(table: Table) -> None:
    for checkpoint_id in range(1, 6):
        land(table, checkpoint_id, 3)
    expire_snapshots(table, retention=timedelta(0))
    files = metadata_folder(table)

    assert remove_orphan_files(table, grace=timedelta(hours=1)) == 0
    assert metadata_folder(table) == files


def test_a_table_made_before_gets_the_metadata_properties(lake: LakeLocation) -> None:
    with open_lake(lake) as catalog:
        catalog.catalog.create_namespace_if_not_exists(lake.namespace)
        old = catalog.catalog.create_table(
            lake.identifier("older"), schema=source_schema("raw"), properties={}
        )
        assert "write.metadata.delete-after-commit.enabled" not in old.properties

        table = catalog.ensure_table("older", source_schema("raw"), "raw")

    assert {k: table.properties.get(k) for k in MANAGED_PROPERTIES} == MANAGED_PROPERTIES
