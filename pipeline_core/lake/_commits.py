"""Committing a landing's data files into a lake table: one atomic, idempotent commit.

The landing job writes Parquet data files (one folder per checkpoint, so that a checkpoint's
files are known apart) and the driver adds them to each table in one Iceberg commit, whose
snapshot summary names the checkpoints (``sluice.checkpoint-ids``) and the landing
(``sluice.landing-id``, the DAG run). Readers see all of a commit or none of it.

Idempotency, decided again on every attempt against the table as it is then:

* **Append** (a checkpoint landed for the first time): a checkpoint of which the table holds
  any row is committed already (every commit adds all of a checkpoint's rows to a table, or
  none), so it is left out; a crash between the table's commit and the metastore's
  ``committed`` never duplicates.
* **Replace** (reprocess, backfill): the table's rows of the checkpoints are deleted and the new
  files added in one transaction: readers see the old rows or the new ones, never a mix or a
  gap. A checkpoint that a snapshot of this same landing already replaced is left out (a
  retried task does not replace its own output again).

A commit that loses a race with another writer (the catalog's compare-and-swap fails) is
retried from the start with the refreshed table.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow.compute as pc
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from tenacity import (
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from pipeline_core._compat import StrEnum
from pipeline_core._landing_mode import LandingMode
from pipeline_core.lake._schemas import CHECKPOINT_COLUMN, checkpoint_filter

CHECKPOINT_IDS_PROPERTY = "sluice.checkpoint-ids"
LANDING_ID_PROPERTY = "sluice.landing-id"
OPERATION_PROPERTY = "sluice.operation"
COMMIT_ATTEMPTS = 8
log = logging.getLogger(__name__)


class CommitOutcome(StrEnum):
    """What committing a checkpoint into one table did."""

    COMMITTED = "committed"
    """Its rows (maybe none) are in the table as of this commit."""
    ALREADY_COMMITTED = "already_committed"
    """An earlier commit holds them: nothing was added. The files written for them are
    orphans, which maintenance removes (never deleted here: a commit reported as failed may
    have landed after all)."""


@dataclass(frozen=True)
class TableCommit:
    """What a landing commits into one table."""

    files: Mapping[int, Sequence[str]]
    """Data files (URIs) written for each checkpoint; a checkpoint without rows has none."""
    checkpoint_ids: tuple[int, ...]
    landing_id: str
    mode: LandingMode


@dataclass(frozen=True)
class CommitResult:
    outcomes: Mapping[int, CommitOutcome]
    snapshot_id: int | None
    """The table's current snapshot after the commit (None: the table is empty)."""


def commit_files(table: Table, commit: TableCommit) -> CommitResult:
    """Commit ``commit`` into ``table`` (see the module doc); retried when another writer
    commits first.

    :raises CommitFailedException: it kept losing races (``COMMIT_ATTEMPTS`` times).
    """
    return _commit_attempts(table, commit)


@retry(
    retry=retry_if_exception_type(CommitFailedException),
    stop=stop_after_attempt(COMMIT_ATTEMPTS),
    wait=wait_random_exponential(multiplier=0.05, max=2),
    reraise=True,
)
def _commit_attempts(table: Table, commit: TableCommit) -> CommitResult:
    table.refresh()
    if commit.mode is LandingMode.APPEND:
        done = checkpoints_with_rows(table, commit.checkpoint_ids)
    else:
        done = replaced_by(table, commit.landing_id, commit.checkpoint_ids)
    todo = tuple(i for i in commit.checkpoint_ids if i not in done)
    outcomes = {
        i: CommitOutcome.ALREADY_COMMITTED if i in done else CommitOutcome.COMMITTED
        for i in commit.checkpoint_ids
    }
    files = [path for i in todo for path in commit.files.get(i, ())]
    if todo and (files or commit.mode is LandingMode.REPLACE):
        properties = {
            CHECKPOINT_IDS_PROPERTY: ",".join(str(i) for i in todo),
            LANDING_ID_PROPERTY: commit.landing_id,
            OPERATION_PROPERTY: commit.mode.value,
        }
        with table.transaction() as transaction:
            if commit.mode is LandingMode.REPLACE:
                with warnings.catch_warnings():  # "did not match any records": nothing to replace
                    warnings.simplefilter("ignore")
                    transaction.delete(checkpoint_filter(todo), snapshot_properties=properties)
            if files:
                transaction.add_files(files, snapshot_properties=properties)
        log.info(
            "Committed checkpoints %s into %s (%d files, %s)",
            list(todo),
            table.name(),
            len(files),
            commit.mode.value,
        )
    snapshot = table.current_snapshot()
    return CommitResult(outcomes, snapshot.snapshot_id if snapshot else None)


def checkpoints_with_rows(table: Table, checkpoint_ids: Collection[int]) -> set[int]:
    """The checkpoints of ``checkpoint_ids`` of which ``table`` holds at least one row."""
    if not checkpoint_ids or table.current_snapshot() is None:
        return set()
    scan = table.scan(
        row_filter=checkpoint_filter(checkpoint_ids),
        selected_fields=(CHECKPOINT_COLUMN,),
    )
    column = scan.to_arrow().column(CHECKPOINT_COLUMN)
    return {int(value) for value in pc.unique(column).to_pylist() if value is not None}


def replaced_by(table: Table, landing_id: str, checkpoint_ids: Iterable[int]) -> set[int]:
    """The checkpoints that a snapshot of landing ``landing_id`` committed (in the table's
    current history)."""
    wanted = set(checkpoint_ids)
    found: set[int] = set()
    for snapshot in table.snapshots():
        summary = snapshot.summary
        if summary is None or summary.operation is Operation.REPLACE:
            continue
        if summary.get(LANDING_ID_PROPERTY) != landing_id:
            continue
        found.update(i for i in committed_ids(summary.get(CHECKPOINT_IDS_PROPERTY)) if i in wanted)
    return found


def committed_ids(value: str | None) -> list[int]:
    """The checkpoint ids of a ``sluice.checkpoint-ids`` summary value."""
    return [int(part) for part in (value or "").split(",") if part.strip()]
