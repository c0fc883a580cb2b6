"""End to end: log files -> one-shot collection -> spark-submit landing -> lake, via ``dag.test()``.

Two DAG runs of ``sluice_web_access`` with real collection (in the ``request_checkpoint``
task, since no collector worker is live) and a real Spark landing job. Between the runs the
log file is rotated twice, the way logrotate does it:

1. ``copytruncate``: the file the first run read is copied to ``access.log.1`` (a new inode
   with the same first bytes, which takes over the file's identity and offset) and truncated
   in place; new lines are then written into the truncated inode (a different file now).
2. rename: ``access.log.1`` -> ``access.log.2``, ``access.log`` -> ``access.log.1``, and a new
   ``access.log`` is created.

The lake's ``access`` table must hold every well-formed line exactly once (by ``event_id``
and by the request path each line carries) and its ``_rejects`` table exactly the malformed
lines planted along the way, read through the Iceberg catalog.

Then two manually triggered runs with params (one Spark job each): ``reprocess`` lands
checkpoint 1 again, replacing its rows in one commit, and the lake holds the same rows, and
``spark_only`` lands a checkpoint sealed outside any DAG run (``sluice collect --once``)
without collecting. Each commit records an asset event on ``sluice://lake/web_access`` saying
what landed.

The first run's land task runs a real spark-submit (a JVM of its own, some 40 s of CPU); the
later runs' land tasks run the same job (``spark_jobs.landing.land``, from the arguments the
task gives spark-submit) on the test run's SparkSession, in this process.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.models.asset import AssetEvent, AssetModel
from airflow.models.dagrun import DagRun
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import DAG
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from pyspark.sql import SparkSession
from sqlalchemy import select

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import REJECTS_TABLE, LakeLocation, LandingMode, lake_location
from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.testing import append, table_rows
from tests.support.airflow_env import REPO_ROOT
from tests.support.lake import snapshot_operations

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.timeout(1200)]

START = datetime(2026, 11, 22, 10, 0, 0, tzinfo=timezone.utc)
MARKER = re.compile(r"/item/(\d+)\b")
MALFORMED = [
    b"this is not an nginx combined line",
    b"\xffbroken utf-8 in the middle of a line\xfe",
    b'10.0.0.9 - - [31/Foo/2026:99:99:99 +0000] "GET /bad-time HTTP/1.1" 200 1 "-" "x"',
]


def nginx_line(i: int) -> bytes:
    when = (START + timedelta(seconds=i)).strftime("%d/%b/%Y:%H:%M:%S")
    return (
        f'10.0.0.{i % 250 + 1} - - [{when} +0000] "GET /item/{i} HTTP/1.1" 200 {100 + i} '
        f'"https://example.test/" "sluice-test/1.0"'
    ).encode()


def copytruncate(path: Path, copy: Path) -> None:
    shutil.copyfile(path, copy)
    with path.open("r+b") as log:
        log.truncate(0)


def write_config(root: Path, metastore_url: str) -> Path:
    pipelines = root / "pipelines"
    pipelines.mkdir()
    config = pipelines / "web_access.yaml"
    config.write_text(
        "name: web_access\n"
        "sources:\n"
        "  - name: access\n"
        f'    paths: ["{root}/logs/access.log*"]\n'
        "    format: nginx_combined\n"
        f'handoff: {{staging_dir: "{root}/staging"}}\n'
        f'lake: {{path: "{root}/lake"}}\n'
        f'metastore: {{url: "{metastore_url}"}}\n'
        'schedule: "*/5 * * * *"\n'
    )
    return config


def run_dag(dag: DAG, run_conf: dict[str, Any] | None = None) -> DagRun:
    run: DagRun = dag.test(run_conf=run_conf)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, f"run {run.run_id} failed: {states}"
    return run


def committed(run: DagRun) -> dict[str, Any]:
    """The commit task's XCom: what the run landed."""
    commit = next(ti for ti in run.get_task_instances() if ti.task_id == "commit")
    landed: dict[str, Any] = commit.xcom_pull(task_ids="commit")
    return landed


def asset_events(run: DagRun) -> list[dict[str, Any]]:
    """The extras of the lake asset's events that ``run`` recorded."""
    with create_session() as session:
        return [
            dict(extra)
            for extra in session.scalars(
                select(AssetEvent.extra)
                .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
                .where(
                    AssetModel.uri == "sluice://lake/web_access",
                    AssetEvent.source_run_id == run.run_id,
                )
            )
        ]


def lake_rows(lake: LakeLocation) -> pa.Table:
    return table_rows(lake, "access")


def rows_per_checkpoint(lake: LakeLocation) -> dict[int, int]:
    counts: dict[int, int] = {}
    for checkpoint_id in lake_rows(lake).column("checkpoint_id").to_pylist():
        counts[checkpoint_id] = counts.get(checkpoint_id, 0) + 1
    return counts


def markers(table_rows: list[dict[str, object]]) -> list[int]:
    """The ``/item/<i>`` number of each row, found in whichever string column holds it."""
    found: list[int] = []
    for row in table_rows:
        numbers = {
            int(match)
            for value in row.values()
            if isinstance(value, str)
            for match in MARKER.findall(value)
        }
        assert len(numbers) == 1, row
        found.extend(numbers)
    return sorted(found)


def land_in_this_process(monkeypatch: pytest.MonkeyPatch, spark: SparkSession) -> None:
    """From now on a land task's spark-submit runs its job on ``spark`` instead, in this
    process: the arguments and the metastore URL it would give spark-submit, read as
    ``spark_jobs/land.py`` reads them."""
    from pipeline_core.landing import METASTORE_URL_ENV
    from spark_jobs.land import parse_args
    from spark_jobs.landing import Landing, land

    def submit(hook: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        args = parse_args(hook._application_args)
        lake = LakeLocation(
            (hook._env_vars or {})[METASTORE_URL_ENV], Path(args.lake), args.namespace
        )
        checkpoints = tuple(dict.fromkeys(args.checkpoint))
        land(spark, Landing(checkpoints, lake, args.landing_id, LandingMode(args.mode)))

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)


@pytest.mark.postgres_pass  # make test's lanes balance: the PostgreSQL lane is the shorter
def test_two_runs_land_every_line_once_across_rotations(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    airflow_home: Path,
    metastore_url: str,
    spark: SparkSession,
) -> None:
    write_config(tmp_path, metastore_url)
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "access.log"
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(tmp_path / "pipelines"))
    dag = DagBag(dag_folder=REPO_ROOT / "dags").dags["sluice_web_access"]
    assert isinstance(dag, DAG)

    # Run 1 reads lines 0-39 and one malformed line.
    append(log, *[nginx_line(i) for i in range(0, 20)] + [MALFORMED[0]])
    append(log, *[nginx_line(i) for i in range(20, 40)])
    first = run_dag(dag)
    land_in_this_process(monkeypatch, spark)

    # An unread tail, then copytruncate: access.log.1 is the copy; the truncated inode is
    # written again (lines 60-84) and so is a new file.
    append(log, *[nginx_line(i) for i in range(40, 50)] + [MALFORMED[1]])
    append(log, *[nginx_line(i) for i in range(50, 60)])
    copytruncate(log, logs / "access.log.1")
    append(log, *[nginx_line(i) for i in range(60, 85)])
    # Rename rotation: .1 -> .2, access.log -> .1, a new access.log (lines 85-99).
    (logs / "access.log.1").rename(logs / "access.log.2")
    log.rename(logs / "access.log.1")
    append(log, *[nginx_line(i) for i in range(85, 95)] + [MALFORMED[2]])
    append(log, *[nginx_line(i) for i in range(95, 100)])
    run_dag(dag)

    lake = lake_location(load_pipeline_config(tmp_path / "pipelines" / "web_access.yaml"))
    assert lake.warehouse == tmp_path / "lake"
    rows = lake_rows(lake)
    assert rows.num_rows == 100
    event_ids = rows.column("event_id").to_pylist()
    assert len(set(event_ids)) == len(event_ids)
    assert markers(rows.to_pylist()) == list(range(100))
    per_checkpoint: dict[int, int] = {}
    for checkpoint_id in rows.column("checkpoint_id").to_pylist():
        per_checkpoint[checkpoint_id] = per_checkpoint.get(checkpoint_id, 0) + 1
    assert [per_checkpoint[key] for key in sorted(per_checkpoint)] == [40, 60]

    rejects = table_rows(lake, REJECTS_TABLE)
    assert rejects.num_rows == len(MALFORMED)
    assert sorted(rejects.column("raw_line").to_pylist()) == sorted(
        line.decode("utf-8", errors="replace") for line in MALFORMED
    )
    reject_ids = rejects.column("event_id").to_pylist()
    assert len(set(reject_ids)) == len(reject_ids)
    assert not set(reject_ids) & set(event_ids)

    # The first run's commit said what landed, in its XCom and on the lake asset's event.
    landed = committed(first)
    assert (landed["checkpoint_id"], landed["lines"], landed["rows"], landed["rejects"]) == (
        1,
        41,
        40,
        1,
    )
    assert landed["landing"]["rows"] == {"access": 40}
    assert set(landed["snapshots"]) == {"access", REJECTS_TABLE}
    assert None not in landed["snapshots"].values()
    [event] = asset_events(first)
    assert event["checkpoint_ids"] == [1]
    assert (event["rows"], event["rejects"]) == (40, 1)
    assert event["lake"] == str(tmp_path / "lake")
    assert [named for _, named in snapshot_operations(lake, "access")] == ["1", "2"]

    # Reprocess checkpoint 1 from the trigger form: landed again, the lake is unchanged.
    operations = PipelineOperations(tmp_path / "pipelines" / "web_access.yaml")
    before = operations.checkpoints.newest()
    landed_before = snapshot_operations(lake, "access")
    reprocess = run_dag(dag, {"mode": "reprocess", "checkpoint_id": 1})
    assert committed(reprocess)["checkpoint_ids"] == [1]
    assert committed(reprocess)["rows"] == 40
    replaced = snapshot_operations(lake, "access")[len(landed_before) :]
    assert replaced and {named for _, named in replaced} == {"1"}  # replaced in its own commit
    assert rows_per_checkpoint(lake) == {1: 40, 2: 60}
    assert sorted(lake_rows(lake).column("event_id").to_pylist()) == sorted(event_ids)
    assert [info.checkpoint_id for info in operations.checkpoints.newest()] == [
        info.checkpoint_id for info in before
    ]

    # A checkpoint sealed outside any DAG run waits for a spark_only run, which collects nothing.
    append(log, *[nginx_line(i) for i in range(100, 110)])
    [orphan] = operations.collect_once().sealed
    append(log, *[nginx_line(i) for i in range(110, 115)])  # not collected by spark_only
    spark_only = run_dag(dag, {"mode": "spark_only"})
    assert committed(spark_only)["checkpoint_ids"] == [orphan.checkpoint_id]
    assert committed(spark_only)["rows"] == 10
    assert rows_per_checkpoint(lake) == {1: 40, 2: 60, orphan.checkpoint_id: 10}
    assert markers(lake_rows(lake).to_pylist()) == list(range(110))
    assert operations.checkpoint(orphan.checkpoint_id).state == CheckpointState.COMMITTED
    assert [info.checkpoint_id for info in operations.checkpoints.newest()][-1] == (
        orphan.checkpoint_id
    )


@pytest.mark.spark
@pytest.mark.sqlite_pass
def test_a_run_lands_on_spark_connect_when_spark_default_is_of_that_type(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    airflow_home: Path,
    metastore_url: str,
    spark_connect_url: str,
) -> None:
    write_config(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    log.parent.mkdir()
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(tmp_path / "pipelines"))
    connection = {"conn_type": "spark_connect", "host": spark_connect_url}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(connection))
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda *a, **k: pytest.fail("spark-submit"))
    dag = DagBag(dag_folder=REPO_ROOT / "dags").dags["sluice_web_access"]
    assert isinstance(dag, DAG)
    append(log, *[nginx_line(i) for i in range(50)] + [MALFORMED[0]])

    run = run_dag(dag)

    landed = committed(run)
    assert (landed["lines"], landed["rows"], landed["rejects"]) == (51, 50, 1)
    assert landed["landing"]["rows"] == {"access": 50}
    lake = lake_location(load_pipeline_config(tmp_path / "pipelines" / "web_access.yaml"))
    rows = lake_rows(lake)
    assert markers(rows.to_pylist()) == list(range(50))
    assert len(set(rows.column("event_id").to_pylist())) == 50
