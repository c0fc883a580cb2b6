"""The DAG run listener: each sluice_* run's outcome, logged against its checkpoint."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from sluice_airflow import listeners
from sluice_airflow.listeners import (
    RunOutcome,
    on_dag_run_failed,
    on_dag_run_success,
    record_outcome,
)

from pipeline_core.metastore import Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append
from tests.support.pipelines import write_config

if TYPE_CHECKING:
    from airflow.models.dagrun import DagRun

RUN_ID = "scheduled__2026-11-22T10:00:00+00:00"


def dag_run(dag_id: str = "sluice_web_access", run_id: str = RUN_ID) -> DagRun:
    return cast("DagRun", SimpleNamespace(dag_id=dag_id, run_id=run_id))


@pytest.fixture
def operations(
    tmp_path: Path, metastore_url: str, monkeypatch: pytest.MonkeyPatch
) -> PipelineOperations:
    """Pipeline ``web_access`` in ``$SLUICE_PIPELINES_DIR``, with a few lines to collect."""
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(tmp_path))
    config = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", b"one", b"two")
    return PipelineOperations(config)


def logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the listener logged."""
    return [r for r in caplog.records if r.name == listeners.__name__]


def seal_for_run(operations: PipelineOperations) -> int:
    operations.request_checkpoint(run_id=RUN_ID)
    (sealed,) = operations.collect_once().sealed
    return sealed.checkpoint_id


def test_should_log_a_success_with_its_committed_checkpoint(
    operations: PipelineOperations, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = seal_for_run(operations)
    metastore = Metastore.open(operations.config.metastore_url)
    try:
        metastore.commit_checkpoint(checkpoint, {"rows": {"access": 2}, "rejects": {}})
    finally:
        metastore.close()

    with caplog.at_level(logging.INFO, logger=listeners.__name__):
        on_dag_run_success(dag_run(), "success")

    (record,) = logged(caplog)
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        f"sluice_web_access run {RUN_ID}: success; checkpoint {checkpoint} is committed"
    )


def test_should_warn_that_a_failed_runs_sealed_batch_still_waits_to_be_landed(
    operations: PipelineOperations, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = seal_for_run(operations)

    with caplog.at_level(logging.INFO, logger=listeners.__name__):
        on_dag_run_failed(dag_run(), "task_failure")

    (record,) = logged(caplog)
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert message.startswith(
        f"sluice_web_access run {RUN_ID}: failed; checkpoint {checkpoint} is sealed. "
    )
    assert "clear the run's land task" in message and message.endswith("(task_failure)")


@pytest.mark.parametrize(
    ("outcome", "requested", "expected"),
    [
        ("failed", False, "no checkpoint was requested. The run failed before requesting"),
        ("failed", True, "checkpoint 1 is requested. Its checkpoint is not sealed"),
        ("success", True, "checkpoint 1 is requested. A successful run should have committed"),
    ],
)
def test_should_say_what_each_unfinished_outcome_means(
    operations: PipelineOperations, outcome: str, requested: bool, expected: str
) -> None:
    if requested:
        operations.request_checkpoint(run_id=RUN_ID)

    result = listeners.record_outcome("sluice_web_access", RUN_ID, outcome)

    assert result is not None and expected in result.describe()


def test_should_ignore_dags_that_are_not_a_pipelines(operations: PipelineOperations) -> None:
    assert listeners.record_outcome("etl_daily", RUN_ID, "success") is None


def test_should_log_and_go_on_when_the_pipeline_is_unknown(
    operations: PipelineOperations, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=listeners.__name__):
        on_dag_run_failed(dag_run(dag_id="sluice_gone"), "task_failure")

    (record,) = logged(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"sluice_gone run {RUN_ID}: failed; its checkpoint could not be read"
    )
    assert record.exc_info is not None and "no config of pipeline 'gone'" in str(record.exc_info[1])


def test_should_describe_an_outcome_in_one_line() -> None:
    outcome = RunOutcome("sluice_x", "r1", "success", 3, "committed", None)

    assert outcome.describe() == "sluice_x run r1: success; checkpoint 3 is committed"


@pytest.mark.airflow
def test_should_be_called_by_airflows_listener_manager(
    airflow_home: Path, operations: PipelineOperations, caplog: pytest.LogCaptureFixture
) -> None:
    from airflow.listeners.listener import get_listener_manager

    checkpoint = seal_for_run(operations)
    manager = get_listener_manager()

    assert manager.pm.is_registered(listeners)
    with caplog.at_level(logging.INFO, logger=listeners.__name__):
        manager.hook.on_dag_run_failed(dag_run=dag_run(), msg="task_failure")
    assert [r.getMessage().split(". ")[0] for r in logged(caplog)] == [
        f"sluice_web_access run {RUN_ID}: failed; checkpoint {checkpoint} is sealed"
    ]


def test_should_ignore_the_worker_and_consumer_dags() -> None:
    assert record_outcome("sluice_web_access_worker", "run-1", "success") is None
    assert record_outcome("sluice_lake_consumers", "run-1", "failed") is None
