"""RequestCheckpointOperator, LandCheckpointOperator, CommitCheckpointOperator."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import Asset
from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk.execution_time.context import OutletEventAccessors
from sluice_airflow.operators.sluice import (
    CHECKPOINT_DIR_KEY,
    CommitCheckpointOperator,
    LandCheckpointOperator,
    RequestCheckpointOperator,
    RunMode,
    run_mode,
    run_plan,
)
from sluice_airflow.pipeline_configs import lake_asset, lake_interval_asset

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import CollectorBusyError
from pipeline_core.lake import LandingMode, lake_location
from pipeline_core.landing import SUBMIT_ID_ENV
from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.runs import RunMode as PlannedMode
from pipeline_core.runs import plan_run
from pipeline_core.testing import append, table_rows
from tests.support.fake_pipeline import (
    NOW,
    FakePipeline,
    FakePipelineOperations,
    FakeTaskInstance,
    make_context,
)
from tests.support.pipelines import write_config

CONFIG = "/etc/sluice/web_access.yaml"
LANDING = {
    "rows": {"access": 9},
    "rejects": {"no_match": 1},
    "snapshots": {"access": 7001, "_rejects": 7002},
}
XCOM_CHECKPOINT = "{{ ti.xcom_pull(task_ids='request_checkpoint') }}"


def request_operator(**kwargs: Any) -> RequestCheckpointOperator:
    return RequestCheckpointOperator(task_id="request_checkpoint", config_path=CONFIG, **kwargs)


def call_names(pipeline: FakePipeline) -> list[str]:
    return [call[0] for call in pipeline.calls]


def checkpoint_folders(command: list[str]) -> list[str]:
    """The ``--checkpoint`` values of a spark-submit command of the landing job."""
    return [value for flag, value in itertools.pairwise(command) if flag == "--checkpoint"]


# --- construction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: RequestCheckpointOperator(task_id="t", config_path="/missing.yaml"),
        lambda: LandCheckpointOperator(task_id="t", config_path="/missing.yaml", checkpoint_id=1),
        lambda: CommitCheckpointOperator(task_id="t", config_path="/missing.yaml", checkpoint_id=1),
    ],
    ids=["request", "land", "commit"],
)
def test_init_does_no_io(fake_pipeline: FakePipeline, build: Any) -> None:
    build()

    assert fake_pipeline.opened == []
    assert fake_pipeline.calls == []


def test_init_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        RequestCheckpointOperator("t", CONFIG)  # type: ignore[call-arg, arg-type]


def test_template_fields() -> None:
    assert "config_path" in RequestCheckpointOperator.template_fields
    assert {"config_path", "checkpoint_id"} <= set(CommitCheckpointOperator.template_fields)
    land_fields = set(LandCheckpointOperator.template_fields)
    assert land_fields == {"config_path", "checkpoint_id", "conf", "env_vars"}


def test_config_path_and_checkpoint_id_are_rendered() -> None:
    operator = CommitCheckpointOperator(
        task_id="commit",
        config_path="/etc/sluice/{{ params.pipeline }}.yaml",
        checkpoint_id=XCOM_CHECKPOINT,
    )
    ti = FakeTaskInstance(xcoms={("request_checkpoint", "return_value"): 42})
    context = make_context(ti, params={"pipeline": "web_access"})

    operator.render_template_fields(context)

    assert operator.config_path == "/etc/sluice/web_access.yaml"
    assert operator.checkpoint_id == "42"


# --- RequestCheckpointOperator ----------------------------------------------------------------


def test_request_collects_in_process_when_no_worker_is_live(fake_pipeline: FakePipeline) -> None:
    ti = FakeTaskInstance()

    checkpoint_id = request_operator().execute(make_context(ti, run_id="run-1"))

    assert checkpoint_id == 1
    assert ti.pushed == {CHECKPOINT_DIR_KEY: "/staging/web_access/00000001"}
    assert fake_pipeline.calls == [
        ("request_checkpoint", "run-1", (NOW, NOW)),
        ("worker_is_live",),
        ("collect_once",),
        ("pending_landings",),
    ]
    assert fake_pipeline.checkpoints[1].state == CheckpointState.SEALED


def test_request_leaves_sealing_to_a_live_worker(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.worker_live = True

    request_operator().execute(make_context())

    assert "collect_once" not in call_names(fake_pipeline)
    assert fake_pipeline.checkpoints[1].state == CheckpointState.REQUESTED


def test_request_does_not_collect_when_collect_if_idle_is_false(
    fake_pipeline: FakePipeline,
) -> None:
    request_operator(collect_if_idle=False).execute(make_context())

    assert call_names(fake_pipeline) == ["request_checkpoint", "pending_landings"]


def test_request_does_not_collect_for_an_already_sealed_checkpoint(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED, run_id="run-1")

    checkpoint_id = request_operator().execute(make_context(run_id="run-1"))

    assert checkpoint_id == 1
    assert call_names(fake_pipeline) == ["request_checkpoint", "pending_landings"]


def test_a_normal_run_also_lands_earlier_checkpoints_sealed_outside_any_run(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)  # sealed by a stopping worker

    landed = request_operator().execute(make_context(run_id="run-2"))

    assert landed == [1, 2]


def test_a_retried_request_gets_the_same_checkpoint(fake_pipeline: FakePipeline) -> None:
    first = request_operator().execute(make_context(run_id="run-1"))
    second = request_operator().execute(make_context(run_id="run-1"))

    assert first == second == 1
    assert call_names(fake_pipeline).count("collect_once") == 1


def test_request_succeeds_when_a_worker_takes_the_lease_meanwhile(
    fake_pipeline: FakePipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(self: FakePipelineOperations) -> None:
        raise CollectorBusyError("a collector worker holds the lease")

    monkeypatch.setattr(FakePipelineOperations, "collect_once", busy)

    checkpoint_id = request_operator().execute(make_context())

    assert checkpoint_id == 1
    assert fake_pipeline.checkpoints[1].state == CheckpointState.REQUESTED


def test_request_passes_no_data_interval_when_the_run_has_none(
    fake_pipeline: FakePipeline,
) -> None:
    request_operator().execute(make_context(run_id="manual-1", data_interval=None))

    assert fake_pipeline.calls[0] == ("request_checkpoint", "manual-1", None)


# --- LandCheckpointOperator -------------------------------------------------------------------


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Capture what spark-submit would run instead of running it."""
    captured: list[dict[str, Any]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        captured.append(
            {
                "application": application,
                "application_args": list(self._application_args or []),
                "name": self._name,
                "conf": dict(self._conf or {}),
                "py_files": self._py_files,
                "command": self._build_spark_submit_command(application),
                "env": {k: v for k, v in (self._env or {}).items() if k != SUBMIT_ID_ENV},
                "submit_id": (self._env or {}).get(SUBMIT_ID_ENV),
                "binary": self._connection["spark_binary"],
                "master": self._connection["master"],
            }
        )

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return captured


def test_land_submits_the_pipeline_landing_job(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id="1")

    operator.execute(make_context(run_id="scheduled__1"))

    assert fake_pipeline.calls == [("landing_job", [1], "scheduled__1", LandingMode.APPEND)]
    [job] = submitted
    assert job["application"] == "/repo/spark_jobs/land.py"
    assert job["application_args"] == [
        "--checkpoint",
        "/staging/web_access/00000001",
        "--lake",
        "/lake",
        "--namespace",
        "web_access",
        "--landing-id",
        "scheduled__1",
        "--mode",
        "append",
    ]
    assert job["name"] == "sluice-land-web_access-1"
    assert job["py_files"] == "/repo/dist/pipeline_core.zip"
    assert job["master"] == "local[*]"
    command = job["command"]
    assert command[-11:] == ["/repo/spark_jobs/land.py", *job["application_args"]]
    assert command[command.index("--name") : command.index("--name") + 2] == [
        "--name",
        "sluice-land-web_access-1",
    ]
    assert "spark.sql.session.timeZone=UTC" in command
    assert "/repo/dist/pipeline_core.zip" in command
    assert job["env"] == {"PYSPARK_PYTHON": "/venv/bin/python"}
    assert job["submit_id"]  # how an interrupt finds the job's processes


def test_land_lays_operator_conf_and_env_over_the_pipeline_ones(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    operator = LandCheckpointOperator(
        task_id="land",
        config_path=CONFIG,
        checkpoint_id=1,
        conf={"spark.sql.session.timeZone": "Europe/Paris", "spark.ui.enabled": "false"},
        env_vars={"TZ": "UTC"},
    )

    operator.execute(make_context())

    assert submitted[0]["conf"]["spark.sql.session.timeZone"] == "Europe/Paris"
    assert submitted[0]["conf"]["spark.ui.enabled"] == "false"
    assert operator.conf == {
        "spark.sql.session.timeZone": "Europe/Paris",
        "spark.ui.enabled": "false",
    }
    assert submitted[0]["env"] == {"PYSPARK_PYTHON": "/venv/bin/python", "TZ": "UTC"}


def test_land_builds_a_new_spark_submit_for_each_execution(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id=1)

    operator.execute(make_context())
    operator.checkpoint_id = 2
    operator.execute(make_context())

    assert [checkpoint_folders(job["command"]) for job in submitted] == [
        ["/staging/web_access/00000001"],
        ["/staging/web_access/00000002"],
    ]


def test_land_rejects_a_missing_checkpoint_id_before_asking_the_pipeline(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id="None")

    with pytest.raises(ValueError, match="checkpoint id"):
        operator.execute(make_context())

    assert fake_pipeline.calls == []
    assert submitted == []


def test_land_passes_hook_arguments_and_its_own_spark_binary(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    operator = LandCheckpointOperator(
        task_id="land",
        config_path=CONFIG,
        checkpoint_id=1,
        spark_binary="spark3-submit",
        spark_submit_kwargs={"driver_memory": "3g", "verbose": True},
    )

    operator.execute(make_context())

    [job] = submitted
    assert job["binary"] == "spark3-submit"
    command = job["command"]
    assert command[command.index("--driver-memory") + 1] == "3g"
    assert "--verbose" in command


def test_a_retried_land_asks_the_lake_again_and_submits_only_what_is_left(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    for _ in range(3):
        fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id=[1, 2, 3])
    operator.execute(make_context(run_id="scheduled__1"))
    fake_pipeline.nothing_to_land.update({1, 3})  # the first attempt landed 1 and 3, then died

    operator.execute(make_context(run_id="scheduled__1"))
    fake_pipeline.nothing_to_land.add(2)
    operator.execute(make_context(run_id="scheduled__1"))

    assert [checkpoint_folders(job["command"]) for job in submitted] == [
        [f"/staging/web_access/0000000{n}" for n in (1, 2, 3)],
        ["/staging/web_access/00000002"],
    ]


# --- CommitCheckpointOperator -----------------------------------------------------------------


def test_commit_returns_what_landed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.set_state(1, CheckpointState.SEALED, line_count=10, byte_count=1000)
    operator = CommitCheckpointOperator(task_id="commit", config_path=CONFIG, checkpoint_id="1")

    landed = operator.execute(make_context())

    assert landed == {
        "checkpoint_id": 1,
        "checkpoint_ids": [1],
        "lines": 10,
        "bytes": 1000,
        "rows": 9,
        "rejects": 1,
        "rescued": 0,
        "landing": LANDING,
        "snapshots": {"access": 7001, "_rejects": 7002},
    }
    assert fake_pipeline.checkpoints[1].state == CheckpointState.COMMITTED


def test_commit_adds_up_counts_per_table_and_per_reason(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.landing = {
        "rows": {"access": 7, "errors": 2},
        "rejects": {"no_match": 1, "invalid_utf8": 2},
    }
    operator = CommitCheckpointOperator(task_id="commit", config_path=CONFIG, checkpoint_id=1)

    landed = operator.execute(make_context())

    assert (landed["rows"], landed["rejects"]) == (9, 3)


def test_commit_reports_unknown_counts_as_none(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.landing = {}
    operator = CommitCheckpointOperator(task_id="commit", config_path=CONFIG, checkpoint_id=1)

    landed = operator.execute(make_context())

    assert landed["rows"] is None
    assert landed["rejects"] is None


def test_commit_of_a_list_returns_totals_and_each_summary(fake_pipeline: FakePipeline) -> None:
    for _ in range(2):
        info = fake_pipeline.add_checkpoint(CheckpointState.SEALED)
        fake_pipeline.set_state(
            info.checkpoint_id, CheckpointState.SEALED, line_count=10, byte_count=1000
        )
    operator = CommitCheckpointOperator(
        task_id="commit", config_path=CONFIG, checkpoint_id="[1, 2]"
    )

    landed = operator.execute(make_context())

    assert landed["checkpoint_id"] is None
    assert landed["checkpoint_ids"] == [1, 2]
    assert (landed["lines"], landed["bytes"], landed["rows"], landed["rejects"]) == (
        20,
        2000,
        18,
        2,
    )
    assert landed["snapshots"] == LANDING["snapshots"]
    assert [item["checkpoint_id"] for item in landed["checkpoints"]] == [1, 2]
    assert fake_pipeline.calls == [("commit", [1, 2])]


def test_commit_of_an_empty_list_commits_nothing(fake_pipeline: FakePipeline) -> None:
    operator = CommitCheckpointOperator(task_id="commit", config_path=CONFIG, checkpoint_id="[]")

    landed = operator.execute(make_context())

    assert landed == {
        "checkpoint_id": None,
        "checkpoint_ids": [],
        "lines": 0,
        "bytes": 0,
        "rows": 0,
        "rejects": 0,
        "rescued": 0,
        "snapshots": {},
        "checkpoints": [],
    }
    assert fake_pipeline.calls == []


def test_commit_describes_what_landed_on_its_asset_events(
    fake_pipeline: FakePipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_pipeline.lake = Path("/data/lake")
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.set_state(1, CheckpointState.SEALED, line_count=10, byte_count=1000)
    asset = Asset(name="sluice_web_access_lake", uri="sluice://lake/web_access")
    operator = CommitCheckpointOperator(
        task_id="commit", config_path=CONFIG, checkpoint_id=1, outlets=[asset]
    )
    events = OutletEventAccessors()

    operator.execute(make_context(outlet_events=events))

    assert events[asset].extra == {
        "checkpoint_id": 1,
        "checkpoint_ids": [1],
        "lines": 10,
        "bytes": 1000,
        "rows": 9,
        "rejects": 1,
        "rescued": 0,
        "landing": LANDING,
        "snapshots": {"access": 7001, "_rejects": 7002},
        "lake": "/data/lake",
    }


def test_commit_keys_the_interval_asset_events_by_data_interval(
    fake_pipeline: FakePipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_pipeline.lake = Path("/data/lake")
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    lake, intervals = lake_asset("web_access"), lake_interval_asset("web_access")
    operator = CommitCheckpointOperator(
        task_id="commit", config_path=CONFIG, checkpoint_id=1, outlets=[lake, intervals]
    )
    events = OutletEventAccessors()
    start = datetime(2026, 11, 25, 10, 0, tzinfo=timezone.utc)

    operator.execute(make_context(outlet_events=events, data_interval=(start, start)))

    assert events[intervals].partition_keys == {"2026-11-25T10:00:00"}
    assert events[lake].partition_keys == set()
    assert events[intervals].extra == events[lake].extra
    assert events[intervals].extra["checkpoint_ids"] == [1]


# --- modes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "mode"),
    [
        ({}, RunMode.NORMAL),
        ({"mode": None}, RunMode.NORMAL),
        ({"mode": "spark_only"}, RunMode.SPARK_ONLY),
        ({"mode": "force_seal", "checkpoint_id": None}, RunMode.FORCE_SEAL),
    ],
)
def test_run_mode_comes_from_the_params(params: dict[str, Any], mode: RunMode) -> None:
    assert run_mode(make_context(params=params)) is mode


def test_the_mode_param_offers_exactly_the_planned_modes() -> None:
    assert [mode.value for mode in RunMode] == [mode.value for mode in PlannedMode]


def test_the_run_plan_comes_from_the_task_context() -> None:
    context = make_context(run_id="manual-1", params={"mode": "reprocess", "checkpoint_id": "4"})

    assert run_plan(context, collect_if_idle=False) == plan_run(
        "reprocess", run_id="manual-1", data_interval=(NOW, NOW), checkpoint_id=4
    )


def test_a_run_that_cannot_be_planned_fails_the_task_without_retries() -> None:
    with pytest.raises(AirflowFailException, match="needs the checkpoint_id param"):
        run_plan(make_context(params={"mode": "reprocess"}))


def test_an_unknown_mode_fails_the_task_without_retries() -> None:
    with pytest.raises(AirflowFailException, match="unknown mode 'everything'"):
        run_mode(make_context(params={"mode": "everything"}))


def test_spark_only_lands_the_pending_checkpoints_without_collecting(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.COMMITTED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    ti = FakeTaskInstance()

    ids = request_operator().execute(make_context(ti, params={"mode": "spark_only"}))

    assert ids == [2, 3]
    assert call_names(fake_pipeline) == ["pending_landings"]
    assert ti.pushed == {}


def test_land_submits_one_job_for_every_checkpoint_of_a_list(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.COMMITTED)
    operator = LandCheckpointOperator(
        task_id="land", config_path=CONFIG, checkpoint_id="[1, 2]", conf={"spark.ui.enabled": "x"}
    )

    operator.execute(make_context(run_id="manual-1"))

    [job] = submitted
    assert checkpoint_folders(job["command"]) == [
        "/staging/web_access/00000001",
        "/staging/web_access/00000002",
    ]
    assert "spark.ui.enabled=x" in job["command"]
    assert job["name"] == "sluice-land-web_access-1-2"
    assert fake_pipeline.calls == [("landing_job", [1, 2], "manual-1", LandingMode.APPEND)]


@pytest.mark.parametrize(
    ("context", "mode"),
    [
        ({}, LandingMode.APPEND),
        ({"params": {"mode": "force_seal"}}, LandingMode.APPEND),
        ({"params": {"mode": "spark_only"}}, LandingMode.APPEND),
        ({"params": {"mode": "reprocess", "checkpoint_id": 1}}, LandingMode.REPLACE),
        ({"dag_run": SimpleNamespace(run_type="backfill")}, LandingMode.REPLACE),
    ],
    ids=["normal", "force_seal", "spark_only", "reprocess", "backfill"],
)
def test_land_replaces_what_the_lake_holds_only_in_reprocess_and_backfill_runs(
    fake_pipeline: FakePipeline,
    submitted: list[dict[str, Any]],
    context: dict[str, Any],
    mode: LandingMode,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.COMMITTED)
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id=1)

    operator.execute(make_context(run_id="run-7", **context))

    assert fake_pipeline.calls == [("landing_job", [1], "run-7", mode)]
    [job] = submitted
    assert job["command"][-2:] == ["--mode", mode.value]


def test_land_submits_nothing_when_nothing_is_left_to_land(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.COMMITTED)
    fake_pipeline.nothing_to_land = {1}  # its staging was removed after its retention
    operator = LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id=1)

    operator.execute(make_context(params={"mode": "reprocess", "checkpoint_id": 1}))

    assert submitted == []
    assert call_names(fake_pipeline) == ["landing_job"]


def test_land_of_an_empty_list_submits_nothing(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]]
) -> None:
    LandCheckpointOperator(task_id="land", config_path=CONFIG, checkpoint_id="[]").execute(
        make_context()
    )

    assert submitted == []
    assert fake_pipeline.calls == []


# --- LandCheckpointOperator on Spark Connect (a real server, a real pipeline) -----------------


def sealed_pipeline(tmp_path: Path, metastore_url: str, lines: int) -> tuple[Path, int]:
    """A pipeline whose log holds ``lines`` nginx lines, collected and sealed once: its config
    and the sealed checkpoint."""
    config = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", *(nginx_line(i) for i in range(lines)))
    [sealed] = PipelineOperations(config).collect_once().sealed
    return config, sealed.checkpoint_id


def nginx_line(i: int) -> bytes:
    return (
        f'10.0.0.{i % 250 + 1} - - [22/Nov/2026:10:00:{i % 60:02d} +0000] "GET /item/{i} '
        f'HTTP/1.1" 200 {i} "-" "sluice-test/1.0"'
    ).encode()


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def no_spark_submit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any spark-submit fails: what lands went through Spark Connect."""
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda *args, **kwargs: pytest.fail("submit"))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_land_runs_on_spark_connect_when_the_connection_is_of_that_type(
    spark_connect_url: str, metastore_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, checkpoint_id = sealed_pipeline(tmp_path, metastore_url, 200)
    host, port = spark_connect_url.removeprefix("sc://").rsplit(":", 1)
    set_connection(monkeypatch, "spark_warm", conn_type="spark_connect", host=host, port=int(port))
    no_spark_submit(monkeypatch)
    operator = LandCheckpointOperator(
        task_id="land", config_path=str(config), checkpoint_id=checkpoint_id, conn_id="spark_warm"
    )

    operator.execute(make_context(run_id="scheduled__1"))

    [committed] = PipelineOperations(config).commit([checkpoint_id])  # checks the lake's lines
    assert committed.line_count == 200
    assert committed.landing is not None
    assert committed.landing["rows"] == {"access": 200}
    lake = lake_location(load_pipeline_config(config))
    event_ids = table_rows(lake, "access").column("event_id").to_pylist()
    assert len(set(event_ids)) == 200


def test_land_submits_with_spark_submit_when_the_connection_is_of_another_type(
    fake_pipeline: FakePipeline, submitted: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    set_connection(monkeypatch, "spark_cluster", conn_type="spark", host="spark://m:7077")
    operator = LandCheckpointOperator(
        task_id="land", config_path=CONFIG, checkpoint_id=1, conn_id="spark_cluster"
    )

    operator.execute(make_context())

    [job] = submitted
    assert job["master"] == "spark://m:7077"
