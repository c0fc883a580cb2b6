"""The pipeline DAG lands its checkpoint through a Spark standalone cluster.

``scripts/spark-standalone.sh`` starts a master and a worker on 127.0.0.1 from the installed
pyspark; the ``spark_default`` connection (``AIRFLOW_CONN_SPARK_DEFAULT``) points at the
master, and one ``dag.test()`` run of ``sluice_web_access`` collects the log file, seals the
checkpoint and spark-submits the landing job to the cluster, where an executor launched by
the worker does the work (the staging parts are split into lines in Python on the executor).
The lake must then hold every well-formed line once and every malformed line as a reject.

The executors are on this machine and import ``spark_jobs`` from the checkout (the worker's
``PYTHONPATH``). They read the staging parts and write the lake through the same filesystem as
the driver, or, in the object-store variant, through the S3 server on loopback (moto): the
collection uploads its batch there, the executors read it and write the lake's files into the
same bucket with the store's variables the driver hands them (no Hadoop S3 connector). The
metastore is a SQLite file of the test's own: what this test is about is Spark, and PostgreSQL
is exercised by ``test_two_collectors``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.models.dagrun import DagRun
from airflow.sdk import DAG
from airflow.utils.state import DagRunState

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import summarize_lake
from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.testing import MALFORMED_SAMPLES, access_lines, append
from tests.cluster.processes import SparkStandalone
from tests.support.airflow_env import REPO_ROOT
from tests.support.object_store import S3Bucket
from tests.support.pipelines import write_config

pytestmark = [
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.airflow,
    pytest.mark.postgres_pass,  # lanes balance: the SQLite lane is the longer one
    pytest.mark.timeout(1200),
]

WELL_FORMED = 400
MALFORMED = MALFORMED_SAMPLES[:3]
LINES_END = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)


def spark_connection(master_url: str) -> str:
    """``spark_default`` as Airflow's JSON connection form: host ``spark://HOST``, the port
    apart (the provider joins them into ``--master spark://HOST:PORT``)."""
    host, _, port = master_url.rpartition(":")
    return json.dumps({"conn_type": "spark", "host": host, "port": int(port)})


def run_pipeline_dag(pipelines: Path) -> DagRun:
    dag = DagBag(dag_folder=REPO_ROOT / "dags").dags["sluice_web_access"]
    assert isinstance(dag, DAG)
    run: DagRun = dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, f"run {run.run_id} failed: {states}"
    return run


@pytest.mark.parametrize("storage", ["folders", "object-store"])
def test_pipeline_dag_lands_through_a_standalone_cluster(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    airflow_home: Path,
    storage: str,
    request: pytest.FixtureRequest,
) -> None:
    locations: dict[str, Any] = {}
    if storage == "object-store":
        bucket: S3Bucket = request.getfixturevalue("s3_bucket")
        locations = {
            "handoff": {"staging": bucket.url("staging")},
            "lake": {"warehouse": bucket.url("lake")},
        }
    cluster = SparkStandalone(tmp_path / "spark-standalone")
    try:
        master_url = cluster.start()
        assert master_url.startswith("spark://127.0.0.1:"), master_url
        assert set(cluster.pids()) == {"master", "worker"}

        pipelines = tmp_path / "pipelines"
        config_path = write_config(
            pipelines,
            f"sqlite:///{tmp_path / 'sluice.db'}",
            pattern=str(tmp_path / "logs" / "access.log*"),
            **locations,
        )
        well_formed = list(access_lines(WELL_FORMED, seed=11, end=LINES_END))
        append(tmp_path / "logs" / "access.log", *well_formed[:200], *MALFORMED)
        append(tmp_path / "logs" / "access.log", *well_formed[200:])

        monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(pipelines))
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", spark_connection(master_url))
        monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # the driver, for the executors
        run_pipeline_dag(pipelines)

        config = load_pipeline_config(config_path)
        summary = summarize_lake(config)
        assert summary.rows == {"access": WELL_FORMED}
        assert summary.distinct_event_ids == WELL_FORMED
        assert sum(summary.rejects.values()) == len(MALFORMED), summary.rejects
        [checkpoint] = PipelineOperations(config_path).checkpoints.newest()
        assert checkpoint.state == CheckpointState.COMMITTED
        assert checkpoint.line_count == WELL_FORMED + len(MALFORMED)

        # The job ran on the cluster: the master registered it, the worker ran its tasks.
        master_log = (cluster.run_dir / "logs" / "master.log").read_text(errors="replace")
        assert "Registering app sluice-land-web_access" in master_log, cluster.logs()
        executor_logs = cluster.executor_logs()
        assert executor_logs, f"the worker launched no executor\n{cluster.logs()}"
        assert any("Running task" in log.read_text(errors="replace") for log in executor_logs)
        if storage == "object-store":  # everything went through the store, nothing local
            assert any(key.endswith("/_manifest.json") for key in bucket.keys("staging"))
            assert any(key.endswith(".parquet") for key in bucket.keys("lake"))
            assert not (pipelines / "data" / "lake").exists()
            assert not (pipelines / "data" / "staging").exists()
        print(f"standalone cluster started in {cluster.started_seconds:.0f} s at {master_url}")
    finally:
        cluster.stop()
