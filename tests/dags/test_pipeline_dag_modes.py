"""Pipeline DAG runs through ``dag.test()`` against a real pipeline, without Spark.

Real config, log files, metastore and collection; the ``land`` (spark-submit) and ``commit``
tasks are marked successful where a run has something to land, since Spark runs belong to
``test_pipeline_dag_e2e.py``. Covered here:

* backfill runs: ``dag.test()`` always makes a manual run, so :func:`as_backfill` makes it
  create the run the way ``airflow backfill create`` does instead (``run_type`` backfill, the
  interval of a backfill date); every task then runs for real;
* the deferrable sensor while a collector worker (``CollectorWorkerOperator``, in a thread)
  holds the lease: ``dag.test()`` runs the trigger in-process until the worker seals;
* a reprocess run with a bad ``checkpoint_id`` fails at once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.models import dagrun as dagrun_module
from airflow.models.dagrun import DagRun
from airflow.sdk import DAG
from airflow.utils.state import DagRunState, TaskInstanceState
from airflow.utils.types import DagRunTriggeredByType, DagRunType
from sluice_airflow.operators.worker import CollectorWorkerOperator
from sqlalchemy import select

from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.sinks import Barrier, HandoffWriter, SealedBatch
from pipeline_core.testing import append, wait_until
from tests.support.airflow_env import REPO_ROOT
from tests.support.fake_pipeline import make_context
from tests.support.pipelines import write_config

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.postgres_pass,  # the metastore as DAG runs use it, on the server deployments run
]

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
FIVE_MINUTES = timedelta(minutes=5)
LINE = b'10.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET /item/1 HTTP/1.1" 200 12 "-" "t/1"'


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> Path:
    pipelines = tmp_path / "pipelines"
    path = write_config(pipelines, metastore_url, collector={"lease_seconds": 5})
    append(pipelines / "logs" / "access.log", *([LINE] * 7))
    return path


@pytest.fixture
def pipeline_dag(config: Path, monkeypatch: pytest.MonkeyPatch, airflow_home: Path) -> DAG:
    # dag.test() re-parses the DAG folder (its bundle) with this environment.
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(config.parent))
    dag = DagBag(dag_folder=REPO_ROOT / "dags").dags["sluice_web_access"]
    assert isinstance(dag, DAG)
    return dag


def as_backfill(monkeypatch: pytest.MonkeyPatch, start: datetime, end: datetime) -> None:
    """Make the next ``dag.test(logical_date=start)`` create a backfill run over [start, end)."""

    def create_backfill_run(*, dag: Any, session: Any, **kwargs: Any) -> DagRun:
        logical_date = kwargs["logical_date"]
        existing = session.scalar(
            select(DagRun).where(DagRun.dag_id == dag.dag_id, DagRun.logical_date == logical_date)
        )
        if existing is not None:
            session.delete(existing)
            session.commit()
        return dag.create_dagrun(  # type: ignore[no-any-return]
            run_id=DagRunType.BACKFILL_JOB.generate_run_id(suffix=logical_date.isoformat()),
            logical_date=logical_date,
            data_interval=(start, end),
            run_after=kwargs["run_after"],
            conf=kwargs["conf"],
            run_type=DagRunType.BACKFILL_JOB,
            state=DagRunState.RUNNING,
            triggered_by=DagRunTriggeredByType.BACKFILL,
            triggering_user_name="backfill",
            start_date=kwargs["start_date"],
            session=session,
        )

    monkeypatch.setattr(dagrun_module, "get_or_create_dagrun", create_backfill_run)


def task_states(run: DagRun) -> dict[str, str | None]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


def xcom(run: DagRun, task_id: str) -> Any:
    ti = next(ti for ti in run.get_task_instances() if ti.task_id == task_id)
    return ti.xcom_pull(task_ids=task_id)


def test_a_backfill_run_of_an_interval_without_batches_succeeds_empty(
    pipeline_dag: DAG, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = T0 - timedelta(days=30)
    as_backfill(monkeypatch, start, start + FIVE_MINUTES)

    run = pipeline_dag.test(logical_date=start)

    assert run.run_type == DagRunType.BACKFILL_JOB
    assert run.state == DagRunState.SUCCESS, task_states(run)
    assert set(task_states(run).values()) == {TaskInstanceState.SUCCESS}
    assert xcom(run, "request_checkpoint") == []
    assert xcom(run, "commit")["checkpoint_ids"] == []
    # Nothing was requested or collected although the log has unread lines.
    assert PipelineOperations(config).checkpoints.newest() == []


def test_a_backfill_run_re_lands_the_checkpoints_of_its_interval(
    pipeline_dag: DAG, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = PipelineOperations(config)
    requested = operations.request_checkpoint(
        run_id="scheduled__2026-11-22T10:00:00+00:00", data_interval=(T0, T0 + FIVE_MINUTES)
    )
    operations.collect_once()
    append(config.parent / "logs" / "access.log", LINE)
    as_backfill(monkeypatch, T0, T0 + FIVE_MINUTES)

    run = pipeline_dag.test(logical_date=T0, mark_success_pattern="land|commit")

    assert run.state == DagRunState.SUCCESS, task_states(run)
    assert xcom(run, "request_checkpoint") == [requested.checkpoint_id]
    assert [info.checkpoint_id for info in operations.checkpoints.newest()] == [
        requested.checkpoint_id
    ]


def test_a_reprocess_run_without_a_valid_checkpoint_fails_at_once(pipeline_dag: DAG) -> None:
    run = pipeline_dag.test(run_conf={"mode": "reprocess", "checkpoint_id": 42})

    states = task_states(run)
    assert run.state == DagRunState.FAILED
    assert states["request_checkpoint"] == TaskInstanceState.FAILED
    assert states["wait_sealed"] == TaskInstanceState.UPSTREAM_FAILED
    request = next(ti for ti in run.get_task_instances() if ti.task_id == "request_checkpoint")
    assert request.try_number == 1  # AirflowFailException: no retries


def test_the_sensor_defers_while_a_worker_seals_the_checkpoint(
    pipeline_dag: DAG,
    config: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The worker notices a request within tens of milliseconds: slow its seal down, so that
    # the sensor surely finds the checkpoint still requested and defers.
    seal = HandoffWriter.seal

    def slow_seal(self: HandoffWriter, barrier: Barrier) -> SealedBatch:
        time.sleep(3)
        return seal(self, barrier)

    monkeypatch.setattr(HandoffWriter, "seal", slow_seal)
    operations = PipelineOperations(config)
    worker = CollectorWorkerOperator(
        task_id="collect", config_path=str(config), run_for=timedelta(minutes=5)
    )
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(worker.execute(make_context())), daemon=True
    )
    thread.start()
    try:
        wait_until(operations.worker_is_live, 30, "the worker to take the lease", poll=0.1)

        with caplog.at_level(logging.INFO):
            run = pipeline_dag.test(mark_success_pattern="land|commit")
    finally:
        worker.on_kill()
        thread.join(30)

    assert not thread.is_alive()
    assert run.state == DagRunState.SUCCESS, task_states(run)
    assert task_states(run)["wait_sealed"] == TaskInstanceState.SUCCESS
    assert "running trigger in line" in caplog.text
    checkpoint_id = xcom(run, "request_checkpoint")
    info = operations.checkpoint(checkpoint_id)
    assert info.run_id == run.run_id
    assert info.state == CheckpointState.SEALED
    assert info.line_count == 7
    assert checkpoint_id in result["checkpoints_sealed"]  # sealed by the worker
