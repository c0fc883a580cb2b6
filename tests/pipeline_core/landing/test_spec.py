"""SparkJobSpec as SparkSubmitHook arguments, and which spark-submit runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from pipeline_core.landing import SparkJobSpec, spark_submit_binary

SPEC = SparkJobSpec(
    application="/repo/spark_jobs/land.py",
    application_args=["--checkpoint", "/staging/web_access/00000001", "--lake", "/lake"],
    name="sluice-land-web_access-1",
    conf={"spark.sql.session.timeZone": "UTC"},
    env_vars={"PYSPARK_PYTHON": "/venv/bin/python"},
    py_files="/repo/dist/pipeline_core.zip",
)


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_hook_arguments_build_the_landing_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')

    hook = SparkSubmitHook(**SPEC.hook_arguments())
    command = hook._build_spark_submit_command(SPEC.application)

    assert command[:3] == ["spark-submit", "--master", "local[2]"]
    assert command[-5:] == [SPEC.application, *SPEC.application_args]
    assert command[command.index("--name") + 1] == SPEC.name
    assert command[command.index("--py-files") + 1] == SPEC.py_files
    assert "spark.sql.session.timeZone=UTC" in command


def test_the_hook_arguments_are_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    arguments = SPEC.hook_arguments()
    arguments["conf"]["spark.ui.enabled"] = "false"
    arguments["application_args"].append("--more")

    assert SPEC.conf == {"spark.sql.session.timeZone": "UTC"}
    assert "--more" not in SPEC.application_args


def test_the_spark_submit_beside_python_runs_when_none_is_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    beside = executable(tmp_path / "venv" / "bin" / "spark-submit")
    monkeypatch.setattr(sys, "executable", str(beside.parent / "python"))

    assert spark_submit_binary() == str(beside)


def test_the_provider_default_runs_when_spark_submit_is_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    executable(tmp_path / "bin" / "spark-submit")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    executable(tmp_path / "venv" / "bin" / "spark-submit")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))

    assert spark_submit_binary() is None


def test_nothing_is_named_when_there_is_no_spark_submit_at_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))

    assert spark_submit_binary() is None
