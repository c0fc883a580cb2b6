"""A pipeline DAG run through Airflow itself (``dag.test()``), against a fake pipeline.

The ``land`` task is marked successful instead of running Spark; everything else (XComs
between tasks, templates, params, the sensor, task states) goes through Airflow 3.3's real
machinery. Runs against a real metastore and real collection are in
``test_pipeline_dag_modes.py``; the run with real collection and Spark is
``test_pipeline_dag_e2e.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import DAG
from airflow.utils.state import DagRunState, TaskInstanceState

from pipeline_core.operations import CheckpointState
from tests.support.airflow_env import REPO_ROOT
from tests.support.fake_pipeline import FakePipeline

pytestmark = pytest.mark.airflow


@pytest.fixture
def pipeline_dag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_home: Path) -> DAG:
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    (pipelines / "web_access.yaml").write_text("name: web_access\n")
    # dag.test() re-parses the DAG folder (its bundle) with this environment.
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(pipelines))
    dag = DagBag(dag_folder=REPO_ROOT / "dags").dags["sluice_web_access"]
    assert isinstance(dag, DAG)
    return dag


def test_a_run_requests_seals_and_commits_its_checkpoint(
    pipeline_dag: DAG, fake_pipeline: FakePipeline
) -> None:
    run = pipeline_dag.test(mark_success_pattern="land")

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    assert set(states.values()) == {TaskInstanceState.SUCCESS}
    assert fake_pipeline.calls[0][:2] == ("request_checkpoint", run.run_id)
    assert ("collect_once",) in fake_pipeline.calls
    assert ("checkpoint", 1) in fake_pipeline.calls
    assert ("commit", [1]) in fake_pipeline.calls
    assert fake_pipeline.checkpoints[1].state == CheckpointState.COMMITTED


def test_each_run_gets_its_own_checkpoint(pipeline_dag: DAG, fake_pipeline: FakePipeline) -> None:
    first = pipeline_dag.test(mark_success_pattern="land")
    second = pipeline_dag.test(mark_success_pattern="land")

    assert first.run_id != second.run_id
    assert [info.run_id for info in fake_pipeline.checkpoints.values()] == [
        first.run_id,
        second.run_id,
    ]
    assert {info.state for info in fake_pipeline.checkpoints.values()} == {
        CheckpointState.COMMITTED
    }


def test_a_failed_checkpoint_fails_the_run_without_landing(
    pipeline_dag: DAG, fake_pipeline: FakePipeline
) -> None:
    fake_pipeline.worker_live = True  # the "worker" marks the checkpoint failed
    fake_pipeline.state_script[1] = [CheckpointState.FAILED]

    run = pipeline_dag.test()

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.FAILED
    assert states["wait_sealed"] == TaskInstanceState.FAILED
    assert states["land"] == TaskInstanceState.UPSTREAM_FAILED
    assert not any(call[0] in ("landing_job", "commit") for call in fake_pipeline.calls)


def test_a_spark_only_run_lands_every_pending_checkpoint_without_collecting(
    pipeline_dag: DAG, fake_pipeline: FakePipeline
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.COMMITTED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    run = pipeline_dag.test(run_conf={"mode": "spark_only"}, mark_success_pattern="land")

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    names = [call[0] for call in fake_pipeline.calls]
    assert "request_checkpoint" not in names
    assert "collect_once" not in names
    assert [call for call in fake_pipeline.calls if call[0] == "commit"] == [("commit", [2, 3])]
    commit = next(ti for ti in run.get_task_instances() if ti.task_id == "commit")
    assert commit.xcom_pull(task_ids="commit")["checkpoint_ids"] == [2, 3]
