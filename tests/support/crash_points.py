"""Crash points: where a collecting process SIGKILLs itself, in the order of the steps of a
seal (:class:`SealCrashPoint`) or of an upload to an object store (:class:`UploadCrashPoint`),
each at one of the production code's named points (:class:`~pipeline_core.testing.FaultPoint`),
and a collection crashed at one of them.

This module is also a small program, run from the repository root::

    python -m tests.support.crash_points POINT CONFIG

which collects once and SIGKILLs itself at ``POINT`` (a value of either enum).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipeline_core import _fault_points as fault_points
from pipeline_core._compat import StrEnum
from pipeline_core.metastore import Metastore
from pipeline_core.testing import FaultPoint, UniqueAccessLines, append
from tests.support.faults import REPO, FaultSeed

if TYPE_CHECKING:
    from pipeline_core.operations import PipelineOperations


# -- crash points in sealing -----------------------------------------------------------------------


class SealCrashPoint(StrEnum):
    """Where a process sealing a checkpoint dies, in the order of the sealing steps.

    The handoff sink (``HandoffWriter.seal``) closes and fsyncs every part, writes and fsyncs
    ``_manifest.json`` in ``_inflight/<host>``, renames that folder to ``<N>/<host>`` and fsyncs
    the parent; the barrier passes to the mailbox thread as mail; ``CheckpointCoordinator``
    records batch, ranges, offsets and the checkpoint's state in one metastore transaction.
    """

    PARTS_WRITTEN = "parts-written"
    """Parts fsynced; no manifest yet."""
    MANIFEST_WRITTEN = "manifest-written"
    """Manifest fsynced in ``_inflight``; not renamed yet."""
    RENAMED = "renamed"
    """The batch folder is in place (``<N>/<host>``); the barrier has not been mailed."""
    BEFORE_TRANSACTION = "before-transaction"
    """On the mailbox thread, about to open the metastore transaction."""
    MID_TRANSACTION = "mid-transaction"
    """Inside the transaction: batch and ranges inserted, not committed."""
    AFTER_TRANSACTION = "after-transaction"
    """Committed; the collector has not advanced its offsets or released its lease."""

    @property
    def fault_point(self) -> FaultPoint:
        """The production code's named point where the crash happens."""
        return _SEAL_FAULT_POINTS[self]

    @property
    def folder_in_place(self) -> bool:
        """Whether ``<N>/<host>`` exists after a crash here."""
        return self not in (SealCrashPoint.PARTS_WRITTEN, SealCrashPoint.MANIFEST_WRITTEN)

    @property
    def recorded(self) -> bool:
        """Whether the metastore holds the batch after a crash here."""
        return self is SealCrashPoint.AFTER_TRANSACTION


_SEAL_FAULT_POINTS = {
    SealCrashPoint.PARTS_WRITTEN: FaultPoint.PARTS_WRITTEN,
    SealCrashPoint.MANIFEST_WRITTEN: FaultPoint.MANIFEST_WRITTEN,
    SealCrashPoint.RENAMED: FaultPoint.BATCH_IN_PLACE,
    SealCrashPoint.BEFORE_TRANSACTION: FaultPoint.SEAL_TRANSACTION_BEGINS,
    SealCrashPoint.MID_TRANSACTION: FaultPoint.SEAL_TRANSACTION_OPEN,
    SealCrashPoint.AFTER_TRANSACTION: FaultPoint.SEAL_TRANSACTION_COMMITTED,
}


def _die() -> None:
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def install_crash(point: SealCrashPoint) -> None:
    """Make this process SIGKILL itself when sealing reaches ``point``."""
    _die_at(point.fault_point)


def _die_at(fault_point: FaultPoint) -> None:
    """SIGKILL this process the first time it reaches ``fault_point``."""

    def handler(reached: FaultPoint) -> None:
        if reached is fault_point:
            _die()

    fault_points.install(handler)


# -- crash points in uploads ----------------------------------------------------------------------


class UploadCrashPoint(StrEnum):
    """Where a collector staging into an object store dies, in the order of an upload's steps.

    The handoff sink seals the batch into the spool (``<spool>/<pipeline>/<N:08d>/<host>``,
    parts and ``_manifest.json``) and the barrier passes to the mailbox thread, which submits
    the batch to the upload thread (``UploadWorker``). That thread saves the seal record
    (``_seal_record.json``, the files' offsets at the barrier) beside the manifest, then
    ``upload_sealed_batch`` deletes a manifest left in the store by an earlier attempt, stores
    each part (checked), deletes strays and stores the manifest last; the thread mails the
    URL to the mailbox thread, which records batch and offsets in one metastore transaction
    (``Metastore.seal``) and then has the upload thread delete the spooled copy.
    """

    SEALED_IN_SPOOL = "sealed-in-spool"
    """The batch is sealed in the spool; no seal record yet, nothing stored."""
    RECORD_SAVED = "seal-record-saved"
    """The seal record is saved; no part stored yet."""
    SOME_PARTS_STORED = "some-parts-stored"
    """The first part is stored (and checked); the others are not."""
    PARTS_STORED = "parts-stored"
    """Every part is stored and strays are deleted; no manifest yet."""
    MANIFEST_STORED = "manifest-stored"
    """The manifest is stored and the upload mailed; the mailbox thread is about to open the
    metastore transaction."""
    RECORDED = "recorded"
    """The transaction committed; the spooled copy is not deleted yet."""

    @property
    def fault_point(self) -> FaultPoint:
        """The production code's named point where the crash happens."""
        return _UPLOAD_FAULT_POINTS[self]

    @property
    def record_saved(self) -> bool:
        """Whether the spooled batch has its seal record after a crash here."""
        return self is not UploadCrashPoint.SEALED_IN_SPOOL

    @property
    def manifest_stored(self) -> bool:
        """Whether the store holds the batch's manifest after a crash here."""
        return self in (UploadCrashPoint.MANIFEST_STORED, UploadCrashPoint.RECORDED)

    @property
    def recorded(self) -> bool:
        """Whether the metastore holds the batch after a crash here."""
        return self is UploadCrashPoint.RECORDED

    def parts_stored(self, parts: int) -> int:
        """How many of the batch's ``parts`` the store holds after a crash here."""
        if self in (UploadCrashPoint.SEALED_IN_SPOOL, UploadCrashPoint.RECORD_SAVED):
            return 0
        return 1 if self is UploadCrashPoint.SOME_PARTS_STORED else parts


_UPLOAD_FAULT_POINTS = {
    UploadCrashPoint.SEALED_IN_SPOOL: FaultPoint.SEAL_RECORD_SAVING,
    UploadCrashPoint.RECORD_SAVED: FaultPoint.PART_UPLOADING,
    UploadCrashPoint.SOME_PARTS_STORED: FaultPoint.PART_UPLOADED,
    UploadCrashPoint.PARTS_STORED: FaultPoint.STRAYS_DELETED,
    UploadCrashPoint.MANIFEST_STORED: FaultPoint.SEAL_TRANSACTION_BEGINS,
    UploadCrashPoint.RECORDED: FaultPoint.SEAL_TRANSACTION_COMMITTED,
}


def install_upload_crash(point: UploadCrashPoint) -> None:
    """Make this process SIGKILL itself when an upload reaches ``point``."""
    _die_at(point.fault_point)


def crash_while_sealing(
    config_path: Path, point: SealCrashPoint | UploadCrashPoint
) -> subprocess.CompletedProcess[str]:
    """Collect once in a subprocess that SIGKILLs itself at ``point`` (of a seal or of an
    upload; the environment, the store's variables with it, is inherited)."""
    return subprocess.run(
        [sys.executable, "-m", "tests.support.crash_points", point.value, str(config_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass(frozen=True)
class CrashedCollection:
    """Lines around a collection SIGKILLed at a crash point: ``before`` sealed and committed
    first, ``crashed`` read by the killed run (checkpoint ``crashed_id``), ``after`` for the
    caller to append once it has looked at what the crash left."""

    before: list[bytes]
    crashed: list[bytes]
    after: list[bytes]
    crashed_id: int


def crash_a_collection(
    config_path: Path,
    metastore: Metastore,
    fault_seed: FaultSeed,
    point: SealCrashPoint | UploadCrashPoint,
    line_counts: tuple[int, int],
) -> CrashedCollection:
    """Seal and commit a first batch (landed long ago as far as the test goes: only what the
    crash touches is landed), append more lines and collect them in a process that SIGKILLs
    itself at ``point``; each group has a random number of lines in ``line_counts``."""
    from pipeline_core.operations import PipelineOperations

    log = config_path.parent / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    sizes = [fault_seed.rng.randint(*line_counts) for _ in range(3)]
    before, crashed, after = (source.lines(sum(sizes[:i]), sizes[i]) for i in range(3))
    append(log, *before)
    (first,) = PipelineOperations(config_path).collect_once().sealed
    metastore.commit_checkpoint(first.checkpoint_id, {"rows": {}, "rejects": {}})
    append(log, *crashed)
    crash = crash_while_sealing(config_path, point)
    assert crash.returncode == -signal.SIGKILL, fault_seed.note(
        f"the collector did not die at {point}: {crash.returncode}\n{crash.stderr[-3000:]}"
    )
    return CrashedCollection(before, crashed, after, first.checkpoint_id + 1)


def assert_not_landable(operations: PipelineOperations, checkpoint_id: int) -> None:
    """An unrecorded checkpoint is never offered for landing, nor landed on request."""
    from pipeline_core.errors import CheckpointError

    assert checkpoint_id not in [i.checkpoint_id for i in operations.pending_landings()]
    with pytest.raises(CheckpointError, match="only sealed or committed checkpoints"):
        operations.landing_job([checkpoint_id], "run-1")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.crash_points")
    parser.add_argument(
        "point", choices=[p.value for p in SealCrashPoint] + [p.value for p in UploadCrashPoint]
    )
    parser.add_argument("config", type=Path)
    args = parser.parse_args(argv)
    from pipeline_core.operations import PipelineOperations

    if args.point in {p.value for p in UploadCrashPoint}:
        install_upload_crash(UploadCrashPoint(args.point))
    else:
        install_crash(SealCrashPoint(args.point))
    PipelineOperations(args.config).collect_once()
    print("collected without reaching the crash point", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
