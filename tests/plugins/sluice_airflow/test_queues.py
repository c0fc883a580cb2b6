"""Routing the worker DAG's collectors: one task per log host, on the host's queue."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from airflow.configuration import conf
from airflow.serialization.serialized_objects import DagSerialization
from sluice_airflow import queues
from sluice_airflow.dag_factory import build_worker_dag
from sluice_airflow.operators.worker import CollectorWorkerOperator
from sluice_airflow.queues import (
    DEFAULT_ROUTE,
    CollectorRoute,
    collector_routes,
    executor_is_configured,
)

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import ConfigError

SOURCE: dict[str, Any] = {"name": "access", "paths": ["logs/access.log*"], "format": "raw"}


def write(folder: Path, **extra: Any) -> Path:
    path = folder / "web_access.yaml"
    path.write_text(yaml.safe_dump({"name": "web_access", "sources": [SOURCE], **extra}))
    return path


def collectors(config: Path) -> list[CollectorWorkerOperator]:
    dag = build_worker_dag(config)
    tasks = [dag.get_task(task_id) for task_id in dag.task_ids]
    assert all(isinstance(task, CollectorWorkerOperator) for task in tasks)
    return tasks  # type: ignore[return-value]


@pytest.fixture
def edge_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queues, "executor_is_configured", lambda name: name == "EdgeExecutor")


def test_without_hosts_one_collect_task_on_the_default_queue(tmp_path: Path) -> None:
    config = write(tmp_path)

    assert collector_routes(config) == [DEFAULT_ROUTE]
    [task] = collectors(config)
    assert task.task_id == "collect"
    assert task.host is None
    assert task.queue == conf.get("operators", "default_queue")
    assert task.executor is None


def test_an_empty_worker_section_keeps_the_one_task(tmp_path: Path) -> None:
    assert collector_routes(write(tmp_path, worker={})) == [DEFAULT_ROUTE]
    assert collector_routes(write(tmp_path, worker={"queue": "q-{host}"})) == [DEFAULT_ROUTE]


def test_one_task_per_host_on_its_queue(tmp_path: Path, edge_is_configured: None) -> None:
    config = write(tmp_path, worker={"hosts": ["web-1", "web-2"], "executor": "EdgeExecutor"})

    assert collector_routes(config) == [
        CollectorRoute("collect_web-1", "web-1", "sluice-web-1", "EdgeExecutor"),
        CollectorRoute("collect_web-2", "web-2", "sluice-web-2", "EdgeExecutor"),
    ]
    tasks = collectors(config)
    assert [(t.task_id, t.host, t.queue, t.executor) for t in tasks] == [
        ("collect_web-1", "web-1", "sluice-web-1", "EdgeExecutor"),
        ("collect_web-2", "web-2", "sluice-web-2", "EdgeExecutor"),
    ]
    assert all(t.config_path == str(config.resolve()) for t in tasks)


def test_the_routes_survive_serialization(tmp_path: Path, edge_is_configured: None) -> None:
    config = write(tmp_path, worker={"hosts": ["web-1"], "executor": "EdgeExecutor"})
    dag = build_worker_dag(config)

    restored = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))

    task = restored.get_task("collect_web-1")
    assert (task.queue, task.executor) == ("sluice-web-1", "EdgeExecutor")
    assert "`collect_web-1` on queue `sluice-web-1`" in (restored.doc_md or "")


def test_without_an_executor_the_tasks_keep_the_default_one(tmp_path: Path) -> None:
    config = write(tmp_path, worker={"hosts": ["web-1"], "queue": "logs@{host}"})

    [task] = collectors(config)
    assert (task.task_id, task.host, task.queue, task.executor) == (
        "collect_web-1",
        "web-1",
        "logs@web-1",
        None,
    )


def test_an_executor_airflow_lacks_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write(tmp_path, worker={"hosts": ["web-1"], "executor": "NoSuchExecutor"})

    with caplog.at_level(logging.WARNING, logger=queues.__name__):
        routes = collector_routes(config)

    assert routes == [CollectorRoute("collect_web-1", "web-1", "sluice-web-1", None)]
    assert "worker.executor 'NoSuchExecutor' is not one of Airflow's executors" in caplog.text


def test_a_bad_worker_section_keeps_the_one_task_and_the_task_names_the_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write(tmp_path, worker={"hosts": ["web 1"]})

    with caplog.at_level(logging.WARNING, logger=queues.__name__):
        assert collector_routes(config) == [DEFAULT_ROUTE]

    assert "worker.hosts.0: String should match pattern" in caplog.text
    with pytest.raises(ConfigError, match=r"worker\.hosts\.0: String should match pattern"):
        load_pipeline_config(config)


def test_an_unreadable_config_keeps_the_one_task(tmp_path: Path) -> None:
    broken = tmp_path / "web_access.yaml"
    broken.write_text("name: [unclosed\n")

    assert collector_routes(broken) == [DEFAULT_ROUTE]
    assert collector_routes(tmp_path / "missing.yaml") == [DEFAULT_ROUTE]


def test_the_configured_executor_is_known() -> None:
    default = conf.get("core", "executor").split(",")[0].strip()

    assert executor_is_configured(default)
    assert not executor_is_configured("NoSuchExecutor")


def test_a_route_passes_only_what_it_sets() -> None:
    assert DEFAULT_ROUTE.operator_kwargs() == {"task_id": "collect"}
    assert CollectorRoute("collect_a", "a", "sluice-a").operator_kwargs() == {
        "task_id": "collect_a",
        "host": "a",
        "queue": "sluice-a",
    }
