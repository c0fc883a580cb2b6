"""SluiceHook: lazy facade, run plans on its pipeline, delegation, Airflow connections."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from airflow.sdk import Connection
from airflow.sdk.exceptions import AirflowFailException
from sluice_airflow.hooks.sluice import (
    LAKE_CONN_ID,
    METASTORE_CONN_ID,
    SluiceHook,
    lake_path,
    sqlalchemy_url,
)

from pipeline_core.lake import LandingMode
from pipeline_core.metastore import Metastore
from pipeline_core.operations import CheckpointInfo, CheckpointState
from pipeline_core.runs import Collection, RunMode, execute_plan, plan_run
from pipeline_core.testing import append
from tests.support.fake_pipeline import FakePipeline
from tests.support.pipelines import write_config


def request_checkpoint(hook: SluiceHook, run_id: str) -> CheckpointInfo:
    """Request the run's checkpoint through the hook, collecting nothing."""
    result = execute_plan(plan_run(run_id=run_id, collect_if_idle=False), hook.operations)
    assert result.checkpoint is not None
    return result.checkpoint


def test_creating_the_hook_opens_nothing(fake_pipeline: FakePipeline) -> None:
    SluiceHook(config_path="/does/not/exist.yaml")

    assert fake_pipeline.opened == []


def test_creating_the_hook_with_a_missing_config_does_not_raise() -> None:
    hook = SluiceHook(config_path="/does/not/exist.yaml")

    assert hook.config_path == "/does/not/exist.yaml"


def test_config_path_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        SluiceHook("/etc/sluice/web_access.yaml")  # type: ignore[call-arg]


def test_operations_are_created_once_on_first_use(fake_pipeline: FakePipeline) -> None:
    hook = SluiceHook(config_path="/etc/sluice/web_access.yaml")

    hook.operations.worker_is_live()
    hook.operations.worker_is_live()

    assert fake_pipeline.opened == ["/etc/sluice/web_access.yaml"]
    assert hook.get_conn() is hook.operations


def test_a_run_plan_is_carried_out_on_the_hooks_pipeline(
    fake_pipeline: FakePipeline,
) -> None:
    hook = SluiceHook(config_path="/etc/sluice/web_access.yaml")
    interval = (
        datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc),
        datetime(2026, 11, 22, 10, 5, tzinfo=timezone.utc),
    )

    plan = plan_run(RunMode.NORMAL, run_id="run-1", data_interval=interval)
    result = execute_plan(plan, hook.operations)

    assert result.lands == 1
    assert result.collection is Collection.IN_PROCESS
    assert fake_pipeline.calls == [
        ("request_checkpoint", "run-1", interval),
        ("worker_is_live",),
        ("collect_once",),
        ("pending_landings",),
    ]


def test_landing_job_asks_the_pipeline_for_the_spec(fake_pipeline: FakePipeline) -> None:
    hook = SluiceHook(config_path="/etc/sluice/web_access.yaml")
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    spec = hook.landing_job([1, 2], "run-1", LandingMode.REPLACE)

    assert spec is not None and spec.application.endswith("land.py")
    assert fake_pipeline.calls == [("landing_job", [1, 2], "run-1", LandingMode.REPLACE)]


def test_landing_a_checkpoint_that_lost_its_batch_fails_without_retries(
    tmp_path: Path, metastore_url: str
) -> None:
    config = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", b"one line", b"another")
    hook = SluiceHook(config_path=config, metastore_conn_id=None, lake_conn_id=None)
    (sealed,) = hook.operations.collect_once().sealed
    shutil.rmtree(sealed.staging_dir / "test-host")

    with pytest.raises(AirflowFailException, match="recorded batches missing under"):
        hook.landing_job([sealed.checkpoint_id], "run-1", LandingMode.APPEND)
    with pytest.raises(AirflowFailException, match="can no longer be sealed or landed"):
        hook.landing_job([sealed.checkpoint_id], "run-1", LandingMode.APPEND)  # a retry

    assert hook.operations.checkpoint(sealed.checkpoint_id).state is CheckpointState.FAILED


def test_landing_a_committed_checkpoint_whose_staging_was_removed_lands_nothing(
    tmp_path: Path, metastore_url: str
) -> None:
    config = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", b"one line", b"another")
    hook = SluiceHook(config_path=config, metastore_conn_id=None, lake_conn_id=None)
    (sealed,) = hook.operations.collect_once().sealed
    metastore = Metastore.open(metastore_url)
    try:
        metastore.commit_checkpoint(sealed.checkpoint_id, {})
    finally:
        metastore.close()
    shutil.rmtree(sealed.staging_dir)

    assert hook.landing_job([sealed.checkpoint_id], "reprocess-1", LandingMode.REPLACE) is None
    assert hook.operations.checkpoint(sealed.checkpoint_id).state is CheckpointState.COMMITTED


# --- connections --------------------------------------------------------------------------------


def connection(**fields: Any) -> Connection:
    return Connection(conn_id="sluice_metastore", **fields)


@pytest.mark.parametrize(
    ("fields", "url"),
    [
        (
            {
                "conn_type": "postgres",
                "host": "db",
                "login": "sluice",
                "password": "p@ss",
                "port": 5432,
                "schema": "sluice",
            },
            "postgresql+psycopg://sluice:p%40ss@db:5432/sluice",
        ),
        (
            {"conn_type": "sqlite", "host": "/var/lib/sluice/sluice.db"},
            "sqlite:////var/lib/sluice/sluice.db",
        ),
        (
            {"conn_type": "generic", "extra": json.dumps({"sqlalchemy_url": "sqlite:///x.db"})},
            "sqlite:///x.db",
        ),
    ],
    ids=["postgres", "sqlite", "explicit-extra"],
)
def test_sqlalchemy_url_of_a_connection(fields: dict[str, Any], url: str) -> None:
    assert sqlalchemy_url(connection(**fields)) == url


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"path": "/data/lake"}, "/data/lake"),
        ({"uri": "file:///data/my%20lake"}, "/data/my lake"),
        ({"uri": "s3://bucket/lake"}, "s3://bucket/lake"),
    ],
)
def test_lake_path_of_a_connection(extra: dict[str, str], path: str) -> None:
    lake = Connection(conn_id="sluice_lake", conn_type="fs", extra=json.dumps(extra))

    assert lake_path(lake) == path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "names no lake"),
        ({"uri": "ftp://host/lake"}, "unsupported scheme ftp://"),
        ({"uri": "s3://bucket/lake?secret_key=abc"}, "credential option secret_key"),
    ],
)
def test_lake_path_refuses_what_sluice_cannot_write(extra: dict[str, str], message: str) -> None:
    lake = Connection(conn_id="sluice_lake", conn_type="fs", extra=json.dumps(extra))

    with pytest.raises(ValueError, match=message):
        lake_path(lake)


def write_bare_config(folder: Path, **document: Any) -> Path:
    """A config that may leave out the metastore and the lake (unlike tests.support's)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "web_access.yaml"
    base = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "nginx_combined"}],
        "data_dir": "data",
        "collector": {"host": "test-host"},
    }
    config.write_text(yaml.safe_dump(base | document))
    return config


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_METASTORE_URL", raising=False)


def test_without_connections_the_config_defaults_hold(tmp_path: Path) -> None:
    config = write_bare_config(tmp_path)

    operations = SluiceHook(config_path=config).operations

    assert operations.config.metastore_url == f"sqlite:///{tmp_path / 'data' / 'sluice.db'}"
    assert operations.config.lake_dir == tmp_path / "data" / "lake"


def test_connections_fill_in_what_the_config_leaves_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metastore_url: str
) -> None:
    config = write_bare_config(tmp_path)
    set_connection(
        monkeypatch, METASTORE_CONN_ID, conn_type="generic", extra={"sqlalchemy_url": metastore_url}
    )
    set_connection(
        monkeypatch, LAKE_CONN_ID, conn_type="fs", extra={"path": str(tmp_path / "shared")}
    )
    hook = SluiceHook(config_path=config)

    requested = request_checkpoint(hook, "run-1")

    assert hook.operations.config.metastore_url == metastore_url
    assert hook.operations.config.lake_warehouse == tmp_path / "shared"
    engine = sa.create_engine(metastore_url)
    with engine.connect() as conn:
        run_ids = conn.execute(sa.text("SELECT run_id FROM sluice_checkpoints")).scalars().all()
    engine.dispose()
    assert run_ids == ["run-1"]
    assert requested.state == CheckpointState.REQUESTED
    assert not (tmp_path / "data" / "sluice.db").exists()


def test_a_sqlite_connection_names_the_database_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_bare_config(tmp_path)
    database = tmp_path / "from-connection.db"
    set_connection(monkeypatch, METASTORE_CONN_ID, conn_type="sqlite", host=str(database))

    request_checkpoint(SluiceHook(config_path=config), "run-1")

    assert database.exists()
    assert not (tmp_path / "data" / "sluice.db").exists()


def test_the_config_wins_over_the_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metastore_url: str
) -> None:
    config = write_bare_config(
        tmp_path, metastore={"url": metastore_url}, lake={"path": "configured-lake"}
    )
    set_connection(monkeypatch, METASTORE_CONN_ID, conn_type="sqlite", host=str(tmp_path / "no.db"))
    set_connection(monkeypatch, LAKE_CONN_ID, conn_type="fs", extra={"path": "/elsewhere"})

    operations = SluiceHook(config_path=config).operations

    assert operations.config.metastore_url == metastore_url
    assert operations.config.lake_dir == tmp_path / "configured-lake"


def test_a_lake_connection_may_name_an_object_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metastore_url: str
) -> None:
    config = write_bare_config(tmp_path, metastore={"url": metastore_url})
    set_connection(monkeypatch, LAKE_CONN_ID, conn_type="fs", extra={"uri": "s3://bucket/lake"})

    hook = SluiceHook(config_path=config)

    assert hook.operations.config.lake_warehouse == "s3://bucket/lake"
    assert not hook.operations.config.lake_location.is_local


def test_connections_can_be_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_bare_config(tmp_path)
    set_connection(monkeypatch, LAKE_CONN_ID, conn_type="fs", extra={"path": "/elsewhere"})

    hook = SluiceHook(config_path=config, lake_conn_id=None, metastore_conn_id=None)

    assert hook.operations.config.lake_warehouse == tmp_path / "data" / "lake"


def test_a_spark_connect_connection_gives_the_url_to_land_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_connection(
        monkeypatch, "spark_warm", conn_type="spark_connect", host="spark-connect", port=15002,
        login="sluice", password="s3cret",
    )  # fmt: skip
    set_connection(monkeypatch, "spark_cluster", conn_type="spark", host="spark://m", port=7077)
    hook = SluiceHook(config_path="/unused.yaml")

    assert hook.spark_connect_url("spark_warm") == (
        "sc://spark-connect:15002/;user_id=sluice;token=s3cret"
    )
    assert hook.spark_connect_url("spark_cluster") is None
    assert hook.spark_connect_url("spark_missing") is None
