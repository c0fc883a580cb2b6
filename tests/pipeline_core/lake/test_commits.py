"""One atomic, idempotent commit of a landing's files per table (pyiceberg, no Spark)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from pyiceberg.table import Table

from pipeline_core.lake import (
    CHECKPOINT_IDS_PROPERTY,
    LANDING_ID_PROPERTY,
    CommitOutcome,
    LakeCatalog,
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    open_lake,
    source_schema,
)
from tests.pipeline_core.lake.support import rows, write_file


@pytest.fixture
def catalog(lake: LakeLocation) -> Iterator[LakeCatalog]:
    with open_lake(lake) as opened:
        yield opened


@pytest.fixture
def table(catalog: LakeCatalog) -> Table:
    catalog.catalog.create_namespace_if_not_exists(catalog.location.namespace)
    return catalog.ensure_table("misc", source_schema("raw"), "raw")


def checkpoint_counts(table: Table) -> Counter[int]:
    table.refresh()
    if table.current_snapshot() is None:
        return Counter()
    return Counter(table.scan(selected_fields=("checkpoint_id",)).to_arrow().column(0).to_pylist())


def test_one_commit_adds_every_checkpoint_and_names_them(table: Table) -> None:
    files = {1: [write_file(table, rows(1, 5))], 2: [write_file(table, rows(2, 3))]}

    result = commit_files(table, TableCommit(files, (1, 2), "run-a", LandingMode.APPEND))

    assert result.outcomes == {1: CommitOutcome.COMMITTED, 2: CommitOutcome.COMMITTED}
    assert checkpoint_counts(table) == {1: 5, 2: 3}
    [snapshot] = table.snapshots()
    assert snapshot.summary is not None
    assert snapshot.summary.get(CHECKPOINT_IDS_PROPERTY) == "1,2"
    assert snapshot.summary.get(LANDING_ID_PROPERTY) == "run-a"
    assert result.snapshot_id == snapshot.snapshot_id


def test_append_leaves_out_checkpoints_the_table_holds(table: Table) -> None:
    commit_files(
        table, TableCommit({1: [write_file(table, rows(1, 5))]}, (1,), "a", LandingMode.APPEND)
    )
    again = {1: [write_file(table, rows(1, 5))], 2: [write_file(table, rows(2, 4))]}

    result = commit_files(table, TableCommit(again, (1, 2), "b", LandingMode.APPEND))

    assert result.outcomes == {
        1: CommitOutcome.ALREADY_COMMITTED,
        2: CommitOutcome.COMMITTED,
    }
    assert checkpoint_counts(table) == {1: 5, 2: 4}
    table.refresh()
    assert table.snapshots()[-1].summary.get(CHECKPOINT_IDS_PROPERTY) == "2"  # type: ignore[union-attr]


def test_replace_swaps_a_checkpoints_rows_and_a_retry_of_it_does_nothing(table: Table) -> None:
    commit_files(
        table,
        TableCommit(
            {1: [write_file(table, rows(1, 5))], 2: [write_file(table, rows(2, 5))]},
            (1, 2),
            "first",
            LandingMode.APPEND,
        ),
    )
    newer = {2: [write_file(table, rows(2, 2, first=100))]}

    commit_files(table, TableCommit(newer, (2,), "reprocess", LandingMode.REPLACE))
    retried = commit_files(
        table,
        TableCommit(
            {2: [write_file(table, rows(2, 2, first=100))]}, (2,), "reprocess", LandingMode.REPLACE
        ),
    )

    assert retried.outcomes == {2: CommitOutcome.ALREADY_COMMITTED}
    assert checkpoint_counts(table) == {1: 5, 2: 2}
    offsets = table.scan(row_filter="checkpoint_id == 2").to_arrow().column("byte_offset")
    assert sorted(offsets.to_pylist()) == [100, 101]


def test_a_replace_with_no_rows_left_removes_the_checkpoint(table: Table) -> None:
    commit_files(
        table, TableCommit({1: [write_file(table, rows(1, 5))]}, (1,), "a", LandingMode.APPEND)
    )

    commit_files(table, TableCommit({}, (1,), "b", LandingMode.REPLACE))

    assert checkpoint_counts(table) == {}


@pytest.mark.timeout(120)
def test_writers_racing_for_the_same_checkpoint_commit_it_once(
    table: Table, lake: LakeLocation
) -> None:
    """Two landings of checkpoint 1 at once: the catalog's compare-and-swap lets one commit;
    the other retries, finds it committed and adds nothing."""
    outcomes: list[CommitOutcome] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def landing(name: str) -> None:
        try:
            with open_lake(lake) as own:
                mine = own.load("misc")
                assert mine is not None
                files = {1: [write_file(mine, rows(1, 7))]}
                start.wait(timeout=30)
                result = commit_files(mine, TableCommit(files, (1,), name, LandingMode.APPEND))
                outcomes.append(result.outcomes[1])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=landing, args=(f"run-{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)

    assert errors == []
    assert sorted(outcomes) == [CommitOutcome.ALREADY_COMMITTED, CommitOutcome.COMMITTED]
    assert checkpoint_counts(table) == {1: 7}
