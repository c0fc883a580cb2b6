"""plan_run: the run-mode decision table, from plain values, without Airflow or a metastore."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pipeline_core.errors import SluiceError
from pipeline_core.runs import (
    CollectPolicy,
    RunMode,
    RunPlan,
    RunPlanError,
    Selection,
    parse_run_mode,
    plan_run,
)
from tests.pipeline_core.runs.support import INTERVAL

NEVER, IF_IDLE, FORCE = CollectPolicy.NEVER, CollectPolicy.IF_IDLE, CollectPolicy.FORCE


def plan(mode: RunMode | str | None, **kwargs: Any) -> RunPlan:
    arguments: dict[str, Any] = {
        "run_id": "run-1",
        "data_interval": INTERVAL,
        "checkpoint_id": 3,
    }
    return plan_run(mode, **(arguments | kwargs))


# --- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "collect_if_idle", "selection", "collect", "earlier"),
    [
        (RunMode.NORMAL, True, Selection.REQUESTED, IF_IDLE, True),
        (RunMode.NORMAL, False, Selection.REQUESTED, NEVER, True),
        (RunMode.FORCE_SEAL, True, Selection.REQUESTED, FORCE, False),
        (RunMode.FORCE_SEAL, False, Selection.REQUESTED, FORCE, False),
        (RunMode.REPROCESS, True, Selection.NAMED, NEVER, False),
        (RunMode.REPROCESS, False, Selection.NAMED, NEVER, False),
        (RunMode.SPARK_ONLY, True, Selection.PENDING, NEVER, False),
        (RunMode.SPARK_ONLY, False, Selection.PENDING, NEVER, False),
    ],
)
def test_each_mode_of_a_run_that_is_not_a_backfill(
    mode: RunMode,
    collect_if_idle: bool,
    selection: Selection,
    collect: CollectPolicy,
    earlier: bool,
) -> None:
    planned = plan(mode, collect_if_idle=collect_if_idle)

    assert planned.mode is mode
    assert (planned.selection, planned.collect, planned.land_earlier_sealed) == (
        selection,
        collect,
        earlier,
    )


@pytest.mark.parametrize(
    ("mode", "collect_if_idle"), itertools.product([*RunMode, None], [True, False])
)
def test_a_backfill_run_lands_its_interval_whatever_the_mode(
    mode: RunMode | None, collect_if_idle: bool
) -> None:
    planned = plan(mode, backfill=True, collect_if_idle=collect_if_idle)

    assert planned == RunPlan(mode or RunMode.NORMAL, Selection.INTERVAL, data_interval=INTERVAL)


def test_a_requesting_plan_carries_the_run_id_and_data_interval() -> None:
    for mode in (RunMode.NORMAL, RunMode.FORCE_SEAL):
        planned = plan(mode)
        assert (planned.run_id, planned.data_interval) == ("run-1", INTERVAL)
        assert planned.checkpoint_id is None


def test_a_run_without_a_data_interval_requests_its_checkpoint_without_one() -> None:
    assert plan(RunMode.NORMAL, data_interval=None).data_interval is None


def test_reprocess_names_its_checkpoint_and_requests_nothing() -> None:
    planned = plan(RunMode.REPROCESS)

    assert planned == RunPlan(RunMode.REPROCESS, Selection.NAMED, checkpoint_id=3)


def test_spark_only_requests_nothing() -> None:
    assert plan(RunMode.SPARK_ONLY) == RunPlan(RunMode.SPARK_ONLY, Selection.PENDING)


@pytest.mark.parametrize(
    ("mode", "backfill", "replaces"),
    [
        (RunMode.NORMAL, False, False),
        (RunMode.FORCE_SEAL, False, False),
        (RunMode.SPARK_ONLY, False, False),
        (RunMode.REPROCESS, False, True),
        *((mode, True, True) for mode in RunMode),
    ],
)
def test_only_reprocess_and_backfill_runs_replace_what_the_lake_holds(
    mode: RunMode, backfill: bool, replaces: bool
) -> None:
    """A normal or spark-only landing leaves out checkpoints a table holds already (a retry
    never duplicates); a reprocess or backfill lands its checkpoints anew, in place of their
    rows."""
    assert plan(mode, backfill=backfill).replaces_landed is replaces


@pytest.mark.parametrize("mode", [None, "", "normal", RunMode.NORMAL])
def test_no_mode_is_normal(mode: str | None) -> None:
    assert plan(mode).mode is RunMode.NORMAL


@pytest.mark.parametrize("mode", list(RunMode))
def test_modes_may_be_given_as_text(mode: RunMode) -> None:
    assert plan(mode.value) == plan(mode)


def test_collect_if_idle_is_on_by_default() -> None:
    assert plan_run(RunMode.NORMAL, run_id="run-1").collect is IF_IDLE


# --- what no plan can do ----------------------------------------------------------------------


@pytest.mark.parametrize("backfill", [False, True])
def test_an_unknown_mode_cannot_be_planned(backfill: bool) -> None:
    with pytest.raises(
        RunPlanError,
        match="unknown mode 'everything'; choose one of normal, reprocess, spark_only, force_seal",
    ):
        plan("everything", backfill=backfill)


@pytest.mark.parametrize(
    ("checkpoint_id", "message"),
    [
        (None, "mode reprocess needs the checkpoint_id param"),
        ("", "mode reprocess needs the checkpoint_id param"),
        ("two", "cannot reprocess: checkpoint id must be a positive integer, got 'two'"),
        (0, "cannot reprocess: checkpoint id must be a positive integer, got 0"),
        ("[1, 2]", r"cannot reprocess: one checkpoint id is needed, got '\[1, 2\]'"),
        ("[]", r"cannot reprocess: one checkpoint id is needed, got '\[\]'"),
    ],
)
def test_reprocess_needs_one_valid_checkpoint_id(checkpoint_id: object, message: str) -> None:
    with pytest.raises(RunPlanError, match=message):
        plan(RunMode.REPROCESS, checkpoint_id=checkpoint_id)


@pytest.mark.parametrize("checkpoint_id", [3, "3", " 3 ", "[3]", [3]])
def test_reprocess_accepts_one_id_as_a_template_renders_it(checkpoint_id: Any) -> None:
    assert plan(RunMode.REPROCESS, checkpoint_id=checkpoint_id).checkpoint_id == 3


@pytest.mark.parametrize("mode", [RunMode.NORMAL, RunMode.FORCE_SEAL, RunMode.SPARK_ONLY])
def test_other_modes_ignore_the_checkpoint_id_param(mode: RunMode) -> None:
    assert plan(mode, checkpoint_id="not an id") == plan(mode, checkpoint_id=None)


def test_a_backfill_ignores_the_checkpoint_id_param() -> None:
    assert plan(RunMode.REPROCESS, backfill=True, checkpoint_id=None).selection is (
        Selection.INTERVAL
    )


def test_a_backfill_run_without_a_data_interval_cannot_be_planned() -> None:
    with pytest.raises(RunPlanError, match="a backfill run without a data interval lands nothing"):
        plan(RunMode.NORMAL, backfill=True, data_interval=None)


def test_run_plan_errors_are_sluice_errors() -> None:
    assert issubclass(RunPlanError, SluiceError)


# --- parse_run_mode and the plan's own checks -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, RunMode.NORMAL), ("", RunMode.NORMAL), *((mode.value, mode) for mode in RunMode)],
)
def test_parse_run_mode(value: str | None, mode: RunMode) -> None:
    assert parse_run_mode(value) is mode


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"selection": Selection.NAMED}, "needs its checkpoint_id"),
        ({"selection": Selection.INTERVAL}, "needs its data_interval"),
        ({"selection": Selection.PENDING, "collect": IF_IDLE}, "collects nothing"),
        (
            {"selection": Selection.INTERVAL, "data_interval": INTERVAL, "collect": FORCE},
            "collects nothing",
        ),
    ],
)
def test_a_plan_refuses_a_selection_without_what_it_needs(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RunPlan(RunMode.NORMAL, **fields)
