"""execute_plan: each mode x backfill or not x worker lease held or not x checkpoints or none.

The pipeline is a ``StubPipeline`` (tests/pipeline_core/runs/support.py); the plans come from
``plan_run``, so each case is one run from its params to what it lands. The same runs against
a real metastore and collector are in tests/plugins/sluice_airflow/operators/test_run_modes.py.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pipeline_core.operations import CheckpointState
from pipeline_core.runs import (
    Collection,
    PlanResult,
    RunMode,
    RunPlanError,
    Selection,
    execute_plan,
    plan_run,
)
from tests.pipeline_core.runs.support import INTERVAL, StubPipeline

REQUESTED, SEALED, COMMITTED, FAILED = (
    CheckpointState.REQUESTED,
    CheckpointState.SEALED,
    CheckpointState.COMMITTED,
    CheckpointState.FAILED,
)
REQUEST = ("request_checkpoint", "run-1", INTERVAL)
ASK = ("worker_is_live",)
COLLECT = ("collect_once",)
PENDING = ("pending_landings",)
NORMAL, FORCE_SEAL, REPROCESS, SPARK_ONLY = (
    RunMode.NORMAL,
    RunMode.FORCE_SEAL,
    RunMode.REPROCESS,
    RunMode.SPARK_ONLY,
)
IN_PROCESS, TO_WORKER, NOT_PLANNED = (
    Collection.IN_PROCESS,
    Collection.LEFT_TO_WORKER,
    Collection.NOT_PLANNED,
)


def pipeline(*, existing: bool, lease_held: bool = False) -> StubPipeline:
    """``existing``: checkpoint 1 committed by an earlier run of the interval, checkpoint 2
    sealed by a worker as it stopped (no run; sealed in the interval); else none."""
    stub = StubPipeline(lease_held=lease_held)
    if existing:
        stub.add(COMMITTED, run_id="run-0")
        stub.add(SEALED)
    return stub


def run(stub: StubPipeline, mode: RunMode | None, **kwargs: Any) -> PlanResult:
    arguments: dict[str, Any] = {"run_id": "run-1", "data_interval": INTERVAL} | kwargs
    return execute_plan(plan_run(mode, **arguments), stub)


# --- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "lease_held", "existing", "lands", "collection", "calls"),
    [
        (NORMAL, False, False, 1, IN_PROCESS, [REQUEST, ASK, COLLECT, PENDING]),
        (NORMAL, False, True, [2, 3], IN_PROCESS, [REQUEST, ASK, COLLECT, PENDING]),
        (NORMAL, True, False, 1, TO_WORKER, [REQUEST, ASK, PENDING]),
        (NORMAL, True, True, [2, 3], TO_WORKER, [REQUEST, ASK, PENDING]),
        (FORCE_SEAL, False, False, 1, IN_PROCESS, [REQUEST, COLLECT]),
        (FORCE_SEAL, False, True, 3, IN_PROCESS, [REQUEST, COLLECT]),
        (FORCE_SEAL, True, False, 1, TO_WORKER, [REQUEST, COLLECT]),
        (FORCE_SEAL, True, True, 3, TO_WORKER, [REQUEST, COLLECT]),
        (REPROCESS, False, True, 2, NOT_PLANNED, [("landable", 2)]),
        (REPROCESS, True, True, 2, NOT_PLANNED, [("landable", 2)]),
        (SPARK_ONLY, False, False, [], NOT_PLANNED, [PENDING]),
        (SPARK_ONLY, False, True, [2], NOT_PLANNED, [PENDING]),
        (SPARK_ONLY, True, False, [], NOT_PLANNED, [PENDING]),
        (SPARK_ONLY, True, True, [2], NOT_PLANNED, [PENDING]),
    ],
)
def test_a_run_that_is_not_a_backfill(
    mode: RunMode,
    lease_held: bool,
    existing: bool,
    lands: int | list[int],
    collection: Collection,
    calls: list[tuple[object, ...]],
) -> None:
    stub = pipeline(existing=existing, lease_held=lease_held)

    result = run(stub, mode, checkpoint_id=2)

    assert result.lands == lands
    assert result.collection is collection
    assert stub.calls == calls


@pytest.mark.parametrize("lease_held", [False, True])
def test_reprocess_of_a_checkpoint_that_does_not_exist_cannot_be_carried_out(
    lease_held: bool,
) -> None:
    stub = pipeline(existing=False, lease_held=lease_held)

    with pytest.raises(RunPlanError, match="cannot reprocess: there is no checkpoint 2"):
        run(stub, RunMode.REPROCESS, checkpoint_id=2)

    assert stub.calls == [("landable", 2)]


@pytest.mark.parametrize(
    ("mode", "lease_held", "existing"),
    itertools.product([*RunMode, None], [False, True], [False, True]),
)
def test_a_backfill_run_lands_the_checkpoints_of_its_interval_and_collects_nothing(
    mode: RunMode | None, lease_held: bool, existing: bool
) -> None:
    stub = pipeline(existing=existing, lease_held=lease_held)
    before = stub.states()

    result = run(stub, mode, backfill=True, checkpoint_id=None)

    assert result.lands == ([1, 2] if existing else [])
    assert result.checkpoint is None
    assert result.collection is Collection.NOT_PLANNED
    assert stub.calls == [("checkpoints_in_interval", *INTERVAL)]
    assert stub.states() == before


# --- the run's own checkpoint -----------------------------------------------------------------


def test_a_requested_checkpoint_is_sealed_in_process_and_reported() -> None:
    stub = StubPipeline()

    result = run(stub, RunMode.NORMAL)

    assert result.checkpoint is not None
    assert result.checkpoint.state is REQUESTED  # as requested, before collecting
    assert stub.states() == {1: SEALED}
    assert result.report is not None
    assert [info.checkpoint_id for info in result.report.sealed] == [1]


@pytest.mark.parametrize("state", [SEALED, COMMITTED, FAILED])
@pytest.mark.parametrize("mode", [RunMode.NORMAL, RunMode.FORCE_SEAL])
def test_a_checkpoint_no_longer_requested_is_not_collected_again(
    mode: RunMode, state: CheckpointState
) -> None:
    stub = StubPipeline()
    stub.add(state, run_id="run-1")  # a retried run: its checkpoint is past waiting

    result = run(stub, mode)

    assert result.lands == 1
    assert result.collection is Collection.NOT_WAITING
    assert COLLECT not in stub.calls
    assert ASK not in stub.calls


def test_without_collect_if_idle_a_normal_run_leaves_sealing_to_a_worker() -> None:
    stub = StubPipeline()

    result = run(stub, RunMode.NORMAL, collect_if_idle=False)

    assert result.collection is Collection.NOT_PLANNED
    assert stub.calls == [REQUEST, PENDING]
    assert stub.states() == {1: REQUESTED}


def test_a_worker_taking_the_lease_before_the_collect_seals_the_checkpoint() -> None:
    stub = StubPipeline(lease_taken_before_collect=True)

    result = run(stub, RunMode.NORMAL)

    assert result.collection is Collection.LEFT_TO_WORKER
    assert stub.calls == [REQUEST, ASK, COLLECT, PENDING]
    assert stub.states() == {1: REQUESTED}


def test_a_normal_run_lands_only_earlier_sealed_checkpoints_with_its_own() -> None:
    stub = StubPipeline()
    stub.add(SEALED)
    stub.add(SEALED, run_id="run-1")  # this run's, sealed on an earlier try
    stub.add(SEALED)  # sealed after it

    assert run(stub, RunMode.NORMAL).lands == [1, 2]


def test_reprocess_refuses_a_checkpoint_that_is_not_sealed() -> None:
    stub = StubPipeline()
    stub.add(REQUESTED, run_id="other-run")

    with pytest.raises(RunPlanError, match="cannot reprocess: checkpoint 1 is requested"):
        run(stub, RunMode.REPROCESS, checkpoint_id=1)


@pytest.mark.parametrize("state", [SEALED, COMMITTED])
def test_reprocess_lands_a_sealed_or_committed_checkpoint_again(state: CheckpointState) -> None:
    stub = StubPipeline()
    stub.add(state)

    result = run(stub, RunMode.REPROCESS, checkpoint_id=1)

    assert result.lands == 1
    assert result.checkpoint == stub.checkpoints[1]
    assert result.plan.selection is Selection.NAMED


def test_a_run_landing_one_checkpoint_not_its_own_returns_a_list() -> None:
    stub = StubPipeline()
    stub.add(SEALED)

    result = run(stub, RunMode.SPARK_ONLY)

    assert result.checkpoint_ids == (1,)
    assert result.lands == [1]
