"""LandCheckpointOperator keeps the metastore URL off spark-submit's command line and out of
its log (issue 30), on a YARN master as on a local one."""

from __future__ import annotations

import dataclasses
import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from sluice_airflow.operators.sluice import LandCheckpointOperator

from pipeline_core.landing import METASTORE_URL_ENV, SparkJobSpec
from pipeline_core.operations import CheckpointState
from tests.support.fake_pipeline import FakePipeline, FakePipelineOperations, make_context

PASSWORD = "s3cr3tPW"
URL = f"postgresql+psycopg://sluice:{PASSWORD}@db.internal/sluice"
METASTORE_URL_FILE_ENV = "SLUICE_METASTORE_URL_FILE"


@pytest.fixture
def with_metastore_url(monkeypatch: pytest.MonkeyPatch, fake_pipeline: FakePipeline) -> None:
    """The fake pipeline's landing spec carries the metastore URL, as the real one does."""
    landing_job = FakePipelineOperations.landing_job

    def with_url(self: FakePipelineOperations, *args: Any, **kwargs: Any) -> SparkJobSpec | None:
        spec = landing_job(self, *args, **kwargs)
        if spec is None:
            return None
        return dataclasses.replace(spec, env_vars={**spec.env_vars, METASTORE_URL_ENV: URL})

    monkeypatch.setattr(FakePipelineOperations, "landing_job", with_url)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        command = self._build_spark_submit_command(application)
        env = dict(self._env or kwargs.get("env") or {})
        named = env.get(METASTORE_URL_FILE_ENV)
        path = Path(named) if named else None
        runs.append(
            {
                "command": command,
                "env": env,
                "url_file": path,
                "text": path.read_text() if path else None,
                "mode": stat.S_IMODE(path.stat().st_mode) if path else None,
            }
        )

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return runs


def test_a_yarn_landing_passes_the_metastore_url_in_a_private_file(
    monkeypatch: pytest.MonkeyPatch,
    with_metastore_url: None,
    submitted: list[dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    yarn = {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "client"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(yarn))
    caplog.set_level(logging.DEBUG)
    operator = LandCheckpointOperator(task_id="land", config_path="/c.yaml", checkpoint_id=1)

    operator.execute(make_context())

    [run] = submitted
    assert run["command"][run["command"].index("--master") + 1] == "yarn"
    assert not any(PASSWORD in argument for argument in run["command"])
    assert PASSWORD not in caplog.text
    assert METASTORE_URL_ENV not in run["env"]
    assert (run["text"], run["mode"]) == (URL, 0o600)
    assert not run["url_file"].exists()


def test_a_local_landing_still_passes_the_url_in_the_environment(
    with_metastore_url: None, submitted: list[dict[str, Any]]
) -> None:
    operator = LandCheckpointOperator(task_id="land", config_path="/c.yaml", checkpoint_id=1)

    operator.execute(make_context())

    [run] = submitted
    assert not any(PASSWORD in argument for argument in run["command"])
    assert run["env"][METASTORE_URL_ENV] == URL
    assert run["url_file"] is None
