"""Every DAG file in dags/ imports cleanly; well-formed DAGs for each pipeline config.

Per pipeline: ``sluice_<name>`` (request >> wait >> land >> commit, a params form, the lake
asset as the commit's outlet) and ``sluice_<name>_worker`` (continuous, paused when created);
plus two example consumers scheduled on every pipeline's lake assets.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from airflow.configuration import conf
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import (
    DAG,
    Asset,
    AssetAny,
    CronDataIntervalTimetable,
    PartitionedAssetTimetable,
)
from airflow.sdk.exceptions import ParamValidationError
from airflow.serialization.serialized_objects import DagSerialization
from sluice_airflow import pipeline_configs
from sluice_airflow.operators.sluice import (
    CommitCheckpointOperator,
    LandCheckpointOperator,
    RequestCheckpointOperator,
    RunMode,
)
from sluice_airflow.operators.worker import CollectorWorkerOperator
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


def test_three_dags_per_config_and_two_consumer_examples(
    two_pipelines: DagBag,
) -> None:
    assert sorted(two_pipelines.dag_ids) == [
        "sluice_app_events",
        "sluice_app_events_maintenance",
        "sluice_app_events_worker",
        "sluice_lake_consumers",
        "sluice_lake_intervals",
        "sluice_web_access",
        "sluice_web_access_maintenance",
        "sluice_web_access_worker",
    ]


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
    assert land.conn_id == "spark_default"
    for task_id in ("wait_sealed", "land", "commit"):
        task = dag.get_task(task_id)
        assert isinstance(
            task, (CheckpointSealedSensor, LandCheckpointOperator, CommitCheckpointOperator)
        )
        assert task.checkpoint_id == "{{ ti.xcom_pull(task_ids='request_checkpoint') }}"


def test_dag_settings(two_pipelines: DagBag) -> None:
    dag = two_pipelines.dags["sluice_web_access"]

    # Data-interval semantics: each run covers the time since the previous tick, so backfill
    # intervals tile time and each checkpoint belongs to exactly one.
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.timetable.expression == "*/5 * * * *"
    assert dag.catchup is False
    assert dag.max_active_runs == 1
    assert {"sluice", "spark"} <= set(dag.tags)
    assert dag.doc_md is not None
    assert "in-process (one-shot)" in dag.doc_md
    assert "web_access.yaml" in dag.doc_md


def test_the_trigger_form_offers_the_modes_and_a_checkpoint_id(two_pipelines: DagBag) -> None:
    params = two_pipelines.dags["sluice_web_access"].params

    assert params.dump() == {"mode": "normal", "checkpoint_id": None}
    mode = params.get_param("mode")
    assert mode.schema["enum"] == [m.value for m in RunMode]
    assert mode.schema["enum"] == ["normal", "reprocess", "spark_only", "force_seal"]
    assert mode.schema["title"] and mode.description
    assert set(mode.schema["values_display"]) == set(mode.schema["enum"])
    checkpoint = params.get_param("checkpoint_id")
    assert checkpoint.schema["type"] == ["null", "integer"]
    assert checkpoint.schema["title"]
    assert checkpoint.description is not None and "reprocess" in checkpoint.description


@pytest.mark.parametrize(
    ("key", "value"),
    [("mode", "reprocess"), ("mode", "spark_only"), ("checkpoint_id", 3), ("checkpoint_id", None)],
)
def test_the_form_accepts_valid_values(two_pipelines: DagBag, key: str, value: object) -> None:
    param = two_pipelines.dags["sluice_web_access"].params.get_param(key)

    assert param.resolve(value=value) == value


@pytest.mark.parametrize(
    ("key", "value"),
    [("mode", "everything"), ("checkpoint_id", 0), ("checkpoint_id", "three")],
)
def test_the_form_rejects_invalid_values(two_pipelines: DagBag, key: str, value: object) -> None:
    param = two_pipelines.dags["sluice_web_access"].params.get_param(key)

    with pytest.raises(ParamValidationError):
        param.resolve(value=value)


def test_commit_updates_the_pipeline_lake_assets(two_pipelines: DagBag) -> None:
    commit = two_pipelines.dags["sluice_web_access"].get_task("commit")

    assert commit.outlets == [
        pipeline_configs.lake_asset("web_access"),
        pipeline_configs.lake_interval_asset("web_access"),
    ]
    [asset, intervals] = commit.outlets
    assert isinstance(asset, Asset)
    assert asset.uri == "sluice://lake/web_access"
    assert asset.name == "sluice_web_access_lake"
    assert isinstance(intervals, Asset)
    assert intervals.uri == "sluice://lake/web_access/intervals"
    for task_id in ("request_checkpoint", "wait_sealed", "land"):
        assert two_pipelines.dags["sluice_web_access"].get_task(task_id).outlets == []


def test_the_sensor_defers_as_airflow_is_configured_to(two_pipelines: DagBag) -> None:
    wait = two_pipelines.dags["sluice_web_access"].get_task("wait_sealed")
    assert isinstance(wait, CheckpointSealedSensor)
    assert wait.deferrable is conf.getboolean("operators", "default_deferrable", fallback=False)


@pytest.mark.parametrize("name", ["web_access", "app_events"])
def test_the_worker_dag_is_continuous_single_and_paused(
    two_pipelines: DagBag, tmp_path: Path, name: str
) -> None:
    dag = two_pipelines.dags[f"sluice_{name}_worker"]

    assert str(dag.schedule) == "@continuous"
    assert dag.max_active_runs == 1
    assert dag.is_paused_upon_creation is True
    assert dag.catchup is False
    [task] = dag.tasks
    assert isinstance(task, CollectorWorkerOperator)
    assert task.task_id == "collect"
    assert task.config_path == str((tmp_path / "pipelines" / f"{name}.yaml").resolve())
    assert task.run_for == timedelta(hours=1).total_seconds()
    assert task.execution_timeout is not None
    assert task.execution_timeout.total_seconds() > task.run_for
    assert task.retries == 0
    assert dag.doc_md is not None and "lease_seconds" in dag.doc_md


def test_the_consumer_example_runs_on_any_pipeline_lake_asset(two_pipelines: DagBag) -> None:
    dag = two_pipelines.dags["sluice_lake_consumers"]

    assert dag.is_paused_upon_creation is True
    condition = dag.timetable.asset_condition
    assert isinstance(condition, AssetAny)
    assert {asset.uri for asset in condition.objects if isinstance(asset, Asset)} == {
        "sluice://lake/web_access",
        "sluice://lake/app_events",
    }


def test_the_interval_example_runs_once_per_interval_of_any_pipeline(
    two_pipelines: DagBag,
) -> None:
    dag = two_pipelines.dags["sluice_lake_intervals"]

    assert dag.is_paused_upon_creation is True
    assert isinstance(dag.timetable, PartitionedAssetTimetable)
    condition = dag.timetable.asset_condition
    assert isinstance(condition, AssetAny)
    assert {asset.uri for asset in condition.objects if isinstance(asset, Asset)} == {
        "sluice://lake/web_access/intervals",
        "sluice://lake/app_events/intervals",
    }


def test_dags_survive_serialization(two_pipelines: DagBag) -> None:
    for dag_id in ("sluice_web_access", "sluice_app_events"):
        dag = two_pipelines.dags[dag_id]
        assert isinstance(dag, DAG)
        restored = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))

        assert sorted(restored.task_ids) == sorted(TASK_ORDER)
        assert restored.get_task("land").task_type == "LandCheckpointOperator"
        assert restored.params.dump() == {"mode": "normal", "checkpoint_id": None}
        assert [asset.uri for asset in restored.get_task("commit").outlets] == [
            f"sluice://lake/{dag_id.removeprefix('sluice_')}",
            f"sluice://lake/{dag_id.removeprefix('sluice_')}/intervals",
        ]
    for dag_id in (
        "sluice_web_access_worker",
        "sluice_web_access_maintenance",
        "sluice_lake_consumers",
        "sluice_lake_intervals",
    ):
        restored = DagSerialization.deserialize_dag(
            DagSerialization.serialize_dag(two_pipelines.dags[dag_id])
        )
        assert restored.dag_id == dag_id


def test_the_maintenance_dag_is_paused_daily_and_runs_one_maintenance_task(
    two_pipelines: DagBag,
) -> None:
    dag = two_pipelines.dags["sluice_web_access_maintenance"]

    assert dag.is_paused_upon_creation is True
    assert dag.max_active_runs == 1
    assert [task.task_type for task in dag.tasks] == ["LakeMaintenanceOperator"]


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

    assert sorted(bag.dag_ids) == [
        "sluice_audit_logs",
        "sluice_audit_logs_maintenance",
        "sluice_audit_logs_worker",
        "sluice_lake_consumers",
        "sluice_lake_intervals",
    ]
    timetable = bag.dags["sluice_audit_logs"].timetable
    assert isinstance(timetable, CronDataIntervalTimetable)
    assert timetable.expression == "0 * * * *"


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [("null", None), ("'@once'", "@once"), ("'61 * * * *'", "*/5 * * * *")],
    ids=["manual-only", "once", "invalid-cron-falls-back"],
)
def test_schedules_that_are_not_cron(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str, expected: str | None
) -> None:
    write_config(
        tmp_path / "pipelines", "web_access", text=f"name: web_access\nschedule: {schedule}\n"
    )

    bag = load_dags(tmp_path / "pipelines", monkeypatch)

    assert bag.import_errors == {}
    timetable = bag.dags["sluice_web_access"].timetable
    if expected is None:
        assert bag.dags["sluice_web_access"].schedule is None
    elif expected == "@once":
        assert str(bag.dags["sluice_web_access"].schedule) == "@once"
    else:
        assert isinstance(timetable, CronDataIntervalTimetable)
        assert timetable.expression == expected


def test_a_broken_config_never_breaks_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path / "pipelines", "broken", text="name: [unclosed\n\t- {")

    bag = load_dags(tmp_path / "pipelines", monkeypatch)

    assert sorted(bag.dag_ids) == [
        "sluice_broken",
        "sluice_broken_maintenance",
        "sluice_broken_worker",
        "sluice_lake_consumers",
        "sluice_lake_intervals",
    ]
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

    assert sorted(bag.dag_ids) == [
        "sluice_lake_consumers",
        "sluice_lake_intervals",
        "sluice_web_access",
        "sluice_web_access_maintenance",
        "sluice_web_access_worker",
    ]
    assert bag.import_errors == {}


def test_pipelines_folder_defaults_to_the_one_beside_the_dags_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SLUICE_PIPELINES_DIR", raising=False)
    monkeypatch.delenv("AIRFLOW__SLUICE__PIPELINES_DIR", raising=False)
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(DAGS_FOLDER))

    assert pipeline_configs.pipelines_dir() == REPO_ROOT / "pipelines"


def test_pipelines_folder_from_airflow_config_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLUICE_PIPELINES_DIR", raising=False)
    monkeypatch.setenv("AIRFLOW__SLUICE__PIPELINES_DIR", str(tmp_path / "configured"))
    assert pipeline_configs.pipelines_dir() == tmp_path / "configured"

    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(tmp_path / "env"))
    assert pipeline_configs.pipelines_dir() == tmp_path / "env"


def test_parsing_imports_no_pipeline_core_module_but_its_compat(tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    write_config(pipelines, "web_access")
    code = (
        "import sys, sluice_pipelines, sluice_lake_consumers\n"
        "assert 'sluice_web_access' in vars(sluice_pipelines)\n"
        "assert 'sluice_web_access_worker' in vars(sluice_pipelines)\n"
        "assert 'sluice_web_access_maintenance' in vars(sluice_pipelines)\n"
        "assert 'sluice_lake_consumers' in vars(sluice_lake_consumers)\n"
        "assert 'sluice_lake_intervals' in vars(sluice_lake_consumers)\n"
        "print(sorted(name for name in sys.modules if name.startswith('pipeline_core')))"
    )
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / d) for d in ("dags", "plugins", "")),
        "SLUICE_PIPELINES_DIR": str(pipelines),
    }

    completed = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )

    imported = completed.stdout.strip().splitlines()[-1]
    assert imported == "['pipeline_core', 'pipeline_core._compat']"


def test_the_request_task_collects_in_process_only_without_collector_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelines = tmp_path / "pipelines"
    write_config(pipelines, "web_access")
    write_config(
        pipelines,
        "edge_logs",
        text=CONFIG.format(name="edge_logs") + "worker: {hosts: [web-1, web-2]}\n",
    )

    bag = load_dags(pipelines, monkeypatch)

    plain = bag.dags["sluice_web_access"].get_task("request_checkpoint")
    on_hosts = bag.dags["sluice_edge_logs"].get_task("request_checkpoint")
    assert isinstance(plain, RequestCheckpointOperator)
    assert isinstance(on_hosts, RequestCheckpointOperator)
    assert plain.collect_if_idle is True
    assert on_hosts.collect_if_idle is False
    assert {task.task_id for task in bag.dags["sluice_edge_logs_worker"].tasks} == {
        "collect_web-1",
        "collect_web-2",
    }


def test_a_config_read_again_after_it_changed(tmp_path: Path) -> None:
    config = write_config(tmp_path, "web_access")
    assert pipeline_configs.dag_settings(config) == ("web_access", "*/5 * * * *")

    config.write_text(CONFIG.format(name="web_access").replace("*/5 * * * *", "0 * * * *"))
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 1_000_000))

    assert pipeline_configs.dag_settings(config) == ("web_access", "0 * * * *")
