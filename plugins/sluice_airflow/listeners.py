"""Listener: the outcome of every ``sluice_*`` DAG run, set against the checkpoint it requested.

Airflow calls :func:`on_dag_run_success` and :func:`on_dag_run_failed` when a DAG run ends
(in the scheduler, or in the api-server when a user marks a run). For a pipeline's DAG the
listener finds the checkpoint the run requested (by ``run_id``, read-only) and logs one line
with both: the run's outcome and where its checkpoint stands. Outcomes that need a person are
logged as warnings with what to do, for example a failed run whose checkpoint is sealed: its
batch is immutable and still waits to be landed (clear the run's ``land`` task; a re-run gets
the same checkpoint).

Where the outcome is kept: in Airflow's own ``dag_run`` row, not in the metastore. The
metastore has no column for a run's outcome, and copying it there would add a second record
that clears and re-runs would have to keep in step; the Sluice page reads the outcome from
Airflow by ``(dag_id, run_id)`` when it shows the checkpoint (:mod:`sluice_airflow.web`).

A listener runs inside the scheduler's loop: it does one indexed read, never raises, and never
writes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow.listeners import hookimpl

if TYPE_CHECKING:
    from airflow.models.dagrun import DagRun

    from pipeline_core.state import CheckpointSnapshot

log = logging.getLogger(__name__)

DAG_ID_PREFIX = "sluice_"
NOT_PIPELINE_DAGS = ("_worker",)
"""Suffixes of ``sluice_*`` DAGs that are not a pipeline's checkpoint DAG (the collector
worker); ``sluice_lake_consumers`` is not a pipeline either."""
OTHER_DAGS = frozenset({"sluice_lake_consumers"})


@dataclass(frozen=True)
class RunOutcome:
    """A finished DAG run of a pipeline and the checkpoint it requested."""

    dag_id: str
    run_id: str
    outcome: str
    """``success`` or ``failed``."""
    checkpoint_id: int | None
    checkpoint_state: str | None
    advice: str | None
    """What a person should do about it; None when nothing."""

    def describe(self) -> str:
        checkpoint = (
            f"checkpoint {self.checkpoint_id} is {self.checkpoint_state}"
            if self.checkpoint_id is not None
            else "no checkpoint was requested"
        )
        line = f"{self.dag_id} run {self.run_id}: {self.outcome}; {checkpoint}"
        return f"{line}. {self.advice}" if self.advice else line


@hookimpl
def on_dag_run_success(dag_run: DagRun, msg: str) -> None:
    """A DAG run succeeded."""
    record_outcome(dag_run.dag_id, dag_run.run_id, "success")


@hookimpl
def on_dag_run_failed(dag_run: DagRun, msg: str) -> None:
    """A DAG run failed."""
    record_outcome(dag_run.dag_id, dag_run.run_id, "failed", msg)


def record_outcome(dag_id: str, run_id: str, outcome: str, msg: str = "") -> RunOutcome | None:
    """Log the outcome of a pipeline's DAG run against its checkpoint and return it; None for
    a DAG that is not a pipeline's, or when the pipeline's state cannot be read (logged)."""
    if (
        not dag_id.startswith(DAG_ID_PREFIX)
        or dag_id in OTHER_DAGS
        or dag_id.endswith(NOT_PIPELINE_DAGS)
    ):
        return None
    try:
        checkpoint = _checkpoint_of_run(dag_id.removeprefix(DAG_ID_PREFIX), run_id)
    except Exception:
        log.warning(
            "%s run %s: %s; its checkpoint could not be read",
            dag_id,
            run_id,
            outcome,
            exc_info=True,
        )
        return None
    state = checkpoint.state if checkpoint else None
    result = RunOutcome(
        dag_id=dag_id,
        run_id=run_id,
        outcome=outcome,
        checkpoint_id=checkpoint.checkpoint_id if checkpoint else None,
        checkpoint_state=state,
        advice=_advice(outcome, state),
    )
    detail = f" ({msg})" if msg and outcome == "failed" else ""
    log.log(logging.WARNING if result.advice else logging.INFO, "%s%s", result.describe(), detail)
    return result


def _checkpoint_of_run(pipeline: str, run_id: str) -> CheckpointSnapshot | None:
    # Imported here: the scheduler and every task process import this module with the plugin.
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.state import checkpoint_of_run, find_pipeline

    config_path = find_pipeline(pipeline)
    if config_path is None:
        raise LookupError(f"no config of pipeline {pipeline!r} in the pipelines folder")
    return checkpoint_of_run(load_pipeline_config(config_path), run_id)


def _advice(outcome: str, state: str | None) -> str | None:
    if outcome == "success":
        if state == "committed":
            return None
        return (
            "A successful run should have committed it: check that the DAG still ends with "
            "the commit task"
        )
    if state is None:
        return "The run failed before requesting a checkpoint; nothing was sealed for it"
    if state == "requested":
        return "Its checkpoint is not sealed; the next collection seals it with the newer lines"
    if state == "sealed":
        return (
            "Its sealed batch is not landed yet: clear the run's land task (a re-run of the "
            "same run gets the same checkpoint), or run `sluice land CONFIG`"
        )
    if state == "committed":
        return "Its checkpoint was landed and committed; only a task after the commit failed"
    return "Its checkpoint failed: see its error on the Sluice page"
