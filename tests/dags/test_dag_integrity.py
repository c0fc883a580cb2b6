"""Every DAG file in dags/ imports cleanly; one well-formed DAG per pipeline config."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sluice_pipelines
from airflow.configuration import conf
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import DAG
from airflow.serialization.serialized_objects import DagSerialization
from sluice_airflow.operators.sluice import (
    CommitCheckpointOperator,
    LandCheckpointOperator,
    RequestCheckpointOperator,
)
from sluice_airflow.sensors.sluice import CheckpointSealedSensor

from tests.support.airflow_env import REPO_ROOT

DAGS_FOLDER = REPO_ROOT / "dags"
SLUICE_TASK_TYPES = (
    RequestCheckpointOperator,
    CheckpointSealedSensor,
    LandCheckpointOperator,
    CommitCheckpointOperator,
)
TASK_ORDER = ["request_checkpoint", "wait_sealed", "land", "commit"]
CONFIG = """\
name: {name}
sources:
  - name: access
    paths: ["logs/{name}.log*"]
    format: nginx_combined
handoff: {{staging_dir: "staging"}}
lake: {{path: "lake"}}
metastore: {{url: "sqlite:///sluice.db"}}
schedule: "*/5 * * * *"
"""


def write_config(folder: Path, name: str, text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(CONFIG.format(name=name) if text is None else text)
    return path


def load_dags(pipelines: Path, monkeypatch: pytest.MonkeyPatch) -> DagBag:
    """Parse dags/ the way Airflow's DAG processor does, for the pipelines in ``pipelines``.

    Airflow 3.3's DagBag has no ``include_examples`` argument; examples are off through
    ``AIRFLOW__CORE__LOAD_EXAMPLES=False`` (scripts/airflow-env.sh).
    """
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(pipelines))
    return DagBag(dag_folder=DAGS_FOLDER)


@pytest.fixture
def two_pipelines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DagBag:
    pipelines = tmp_path / "pipelines"
    write_config(pipelines, "web_access")
    write_config(pipelines, "app_events")
    return load_dags(pipelines, monkeypatch)


def test_examples_are_not_loaded() -> None:
    assert conf.getboolean("core", "load_examples") is False


def test_every_dag_file_imports_without_errors(two_pipelines: DagBag) -> None:
    assert two_pipelines.import_errors == {}


def test_one_dag_per_pipeline_config(two_pipelines: DagBag) -> None:
    assert sorted(two_pipelines.dag_ids) == ["sluice_app_events", "sluice_web_access"]


@pytest.mark.parametrize("name", ["web_access", "app_events"])
def test_tasks_run_in_order(two_pipelines: DagBag, name: str) -> None:
    dag = two_pipelines.dags[f"sluice_{name}"]

    assert sorted(dag.task_ids) == sorted(TASK_ORDER)
    for upstream, downstream in itertools.pairwise(TASK_ORDER):
        assert dag.get_task(upstream).downstream_task_ids == {downstream}
    assert dag.get_task("request_checkpoint").upstream_task_ids == set()
    assert dag.get_task("commit").downstream_task_ids == set()


@pytest.mark.parametrize("name", ["web_access", "app_events"])
def test_tasks_point_at_their_pipeline_config(
    two_pipelines: DagBag, tmp_path: Path, name: str
) -> None:
    dag = two_pipelines.dags[f"sluice_{name}"]
    config = str((tmp_path / "pipelines" / f"{name}.yaml").resolve())

    for task in dag.tasks:
        assert isinstance(task, SLUICE_TASK_TYPES)
        assert task.config_path == config
    land = dag.get_task("land")
    assert isinstance(land, LandCheckpointOperator)
    assert land._conn_id == "spark_default"
    for task_id in ("wait_sealed", "land", "commit"):
        task = dag.get_task(task_id)
        assert isinstance(
            task, (CheckpointSealedSensor, LandCheckpointOperator, CommitCheckpointOperator)
        )
        assert task.checkpoint_id == "{{ ti.xcom_pull(task_ids='request_checkpoint') }}"


def test_dag_settings(two_pipelines: DagBag) -> None:
    dag = two_pipelines.dags["sluice_web_access"]

    assert str(dag.schedule) == "*/5 * * * *"
    assert dag.catchup is False
    assert dag.max_active_runs == 1
    assert {"sluice", "spark"} <= set(dag.tags)
    assert dag.doc_md is not None
    assert "in-process (one-shot)" in dag.doc_md
    assert "web_access.yaml" in dag.doc_md


def test_dags_survive_serialization(two_pipelines: DagBag) -> None:
    for dag in two_pipelines.dags.values():
        assert isinstance(dag, DAG)
        restored = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))

        assert sorted(restored.task_ids) == sorted(TASK_ORDER)
        assert restored.get_task("land").task_type == "LandCheckpointOperator"


def test_an_empty_pipelines_folder_gives_no_dags_and_no_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pipelines").mkdir()

    bag = load_dags(tmp_path / "pipelines", monkeypatch)

    assert bag.dag_ids == []
    assert bag.import_errors == {}


def test_a_missing_pipelines_folder_gives_no_dags_and_no_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bag = load_dags(tmp_path / "missing", monkeypatch)

    assert bag.dag_ids == []
    assert bag.import_errors == {}


def test_name_and_schedule_come_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        tmp_path / "pipelines",
        "hourly_file",
        text="name: audit_logs\nschedule: '@hourly'\nsources: []\n",
    )

    bag = load_dags(tmp_path / "pipelines", monkeypatch)

    assert bag.dag_ids == ["sluice_audit_logs"]
    assert str(bag.dags["sluice_audit_logs"].schedule) == "@hourly"


def test_a_broken_config_never_breaks_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path / "pipelines", "broken", text="name: [unclosed\n\t- {")

    bag = load_dags(tmp_path / "pipelines", monkeypatch)

    assert bag.dag_ids == ["sluice_broken"]
    assert bag.import_errors == {}


def test_files_that_are_not_pipeline_names_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelines = tmp_path / "pipelines"
    write_config(pipelines, "web_access")
    write_config(pipelines, "Web-Access")
    write_config(pipelines, ".web_access.swp")
    (pipelines / "notes.txt").write_text("not a config")

    bag = load_dags(pipelines, monkeypatch)

    assert bag.dag_ids == ["sluice_web_access"]
    assert bag.import_errors == {}


def test_pipelines_folder_defaults_to_the_repository_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_PIPELINES_DIR", raising=False)

    assert sluice_pipelines.pipelines_dir() == REPO_ROOT / "pipelines"


def test_parsing_does_not_import_pipeline_core(tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    write_config(pipelines, "web_access")
    code = (
        "import sys, sluice_pipelines\n"
        "assert 'sluice_web_access' in vars(sluice_pipelines)\n"
        "print(sorted(name for name in sys.modules if name.startswith('pipeline_core')))"
    )
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / d) for d in ("dags", "plugins", "")),
        "SLUICE_PIPELINES_DIR": str(pipelines),
    }

    completed = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )

    assert completed.stdout.strip().splitlines()[-1] == "[]"
