"""A collector routed to its log host's queue runs on a real Edge worker there.

A real Airflow runs on loopback (api-server with the Edge worker API, scheduler, DAG
processor; metadata on the suite's PostgreSQL server) with the executors ``LocalExecutor`` (the
default) and ``EdgeExecutor``. Its DAGs folder holds one file: the worker DAG of pipeline
``web_access`` built by the real factory (``build_worker_dag``, with a short ``run_for``),
whose config names one log host, ``edge-host-a``, and the executor ``EdgeExecutor``: one task,
``collect_edge-host-a``, on queue ``sluice-edge-host-a``.

``airflow edge worker --queues sluice-edge-host-a --edge-hostname edge-host-a`` runs as a
process of its own, pulling work from the api-server over HTTP as it would on the log host.
The test unpauses the DAG and checks that:

1. the collector takes the lease of ``edge-host-a`` (not of the config's ``collector.host``),
   and seals a checkpoint requested meanwhile with every line written, as host ``edge-host-a``;
2. the task instance ran on queue ``sluice-edge-host-a`` through ``EdgeExecutor`` on the
   worker ``edge-host-a`` (its ``hostname``, and the Edge provider's job row), and returned
   the host it collected as;
3. every process started is gone at the end (none carries the site's ``AIRFLOW_HOME``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from pipeline_core.metastore import CheckpointState
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append_sample_access_logs
from tests.support.pipelines import write_config
from tests.support.processes import stop_group
from tests.system.airflow_site import (
    AirflowSite,
    RestClient,
    airflow_postgres_database,
    component_log,
    kill_leftovers,
    running_airflow_site,
    site_home,
    site_pipelines,
    wait_for_site,
)

pytestmark = [pytest.mark.slow, pytest.mark.system, pytest.mark.postgres_pass]  # lanes balance

HOST = "edge-host-a"
QUEUE = f"sluice-{HOST}"
DAG_ID = "sluice_web_access_worker"
TASK_ID = f"collect_{HOST}"
RUN_FOR_SECONDS = 25
EDGE_EXECUTOR = "airflow.providers.edge3.executors.EdgeExecutor"
SETTINGS = {
    "AIRFLOW__CORE__EXECUTOR": f"LocalExecutor,{EDGE_EXECUTOR}",
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
    "AIRFLOW__CORE__PARALLELISM": "2",
    "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
    "AIRFLOW__EDGE__API_ENABLED": "True",
    "AIRFLOW__EDGE__JOB_POLL_INTERVAL": "1",
    "AIRFLOW__EDGE__HEARTBEAT_INTERVAL": "5",
}
DAG_FILE = """\
from datetime import timedelta
from pathlib import Path

from sluice_airflow.dag_factory import build_worker_dag

dag = build_worker_dag(Path({config!r}), run_for=timedelta(seconds={run_for}))
"""
WAIT_SECONDS = 180.0
POLL_SECONDS = 1.0
STOP_SECONDS = 60.0

T = TypeVar("T")


@pytest.mark.timeout(900)
def test_a_collector_routed_to_its_host_queue_runs_on_that_edge_worker(tmp_path: Path) -> None:
    pipelines = site_pipelines(tmp_path)
    config = write_config(
        pipelines,
        f"sqlite:///{tmp_path / 'sluice.db'}",
        collector={"lease_seconds": 10},
        worker={"hosts": [HOST], "executor": "EdgeExecutor"},
    )
    written = append_sample_access_logs(pipelines / "logs", lines=300, malformed=3, seed=11)
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "sluice_edge_worker.py").write_text(
        DAG_FILE.format(config=str(config), run_for=RUN_FOR_SECONDS)
    )
    settings = SETTINGS | {"AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    as_host = PipelineOperations(config, host=HOST)

    with airflow_postgres_database() as database:
        try:
            with (
                running_airflow_site(
                    tmp_path, settings | database, ("scheduler", "dag-processor")
                ) as site,
                edge_worker(site, tmp_path / "edge-worker.log"),
            ):
                api = RestClient(site)
                wait_until(site, "the worker DAG is parsed", lambda: dag_parsed(api))
                site.airflow("dags", "unpause", DAG_ID)

                wait_until(site, f"a collector holds {HOST}'s lease", as_host.worker_is_live)
                assert not PipelineOperations(config).worker_is_live()  # collector.host: free
                requested = as_host.request_checkpoint(run_id="edge-test")
                sealed = wait_until(
                    site,
                    "the collector on the Edge worker sealed the requested checkpoint",
                    lambda: sealed_checkpoint(as_host, requested.checkpoint_id),
                )
                instance = wait_until(
                    site, f"{TASK_ID} of the first run succeeded", lambda: finished_task(api)
                )
                # The task instance succeeds before the worker reports its job's end.
                jobs = wait_until(
                    site,
                    "the Edge worker reported the first run's job ended",
                    lambda: ended_edge_jobs(
                        database["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"], instance["dag_run_id"]
                    ),
                )
                site.airflow("dags", "pause", DAG_ID)
                result = task_result(api, instance)
        finally:
            leftovers = kill_leftovers(site_home(tmp_path))
    assert not leftovers, f"processes left running (now killed): {leftovers}"

    assert sealed.hosts == (HOST,)
    assert sealed.line_count == written.lines
    assert (instance["queue"], instance["hostname"]) == (QUEUE, HOST), instance
    assert instance["executor"] == "EdgeExecutor", instance
    assert (instance["dag_run_id"], QUEUE, HOST, "success") in jobs, jobs
    assert result["host"] == HOST
    assert result["stopped_by"] == "run_for"
    assert requested.checkpoint_id in result["checkpoints_sealed"]


@contextmanager
def edge_worker(site: AirflowSite, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``airflow edge worker`` serving :data:`QUEUE` as :data:`HOST`, in a process group of
    its own, stopped (SIGTERM, then SIGKILL) on exit."""
    env = site.env | {"AIRFLOW__EDGE__API_URL": f"{site.url}/edge_worker/v1/rpcapi"}
    command = [sys.executable, "-m", "airflow", "edge", "worker"]
    command += ["--queues", QUEUE, "--edge-hostname", HOST, "--concurrency", "1"]
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        stop_group(process, signal.SIGTERM, STOP_SECONDS)


# -- what Airflow and the metastore say ----------------------------------------------------


def dag_parsed(api: RestClient) -> bool | None:
    dags = api.get("dags", dag_id_pattern=DAG_ID)["dags"]
    return True if any(dag["dag_id"] == DAG_ID for dag in dags) else None


def finished_task(api: RestClient) -> dict[str, Any] | None:
    """The collector task instance of the first run, once it has succeeded."""
    runs = sorted(api.get(f"dags/{DAG_ID}/dagRuns", limit=10)["dag_runs"], key=run_after)
    if not runs:
        return None
    path = f"dags/{DAG_ID}/dagRuns/{runs[0]['dag_run_id']}/taskInstances/{TASK_ID}"
    instance: dict[str, Any] = api.get(path)
    if instance["state"] in ("failed", "upstream_failed", "removed"):
        pytest.fail(f"{TASK_ID} ended {instance['state']}: {instance}")
    return instance if instance["state"] == "success" else None


def run_after(run: dict[str, Any]) -> str:
    return str(run.get("run_after") or run.get("logical_date") or "")


def task_result(api: RestClient, instance: dict[str, Any]) -> dict[str, Any]:
    path = f"dags/{DAG_ID}/dagRuns/{instance['dag_run_id']}/taskInstances/{TASK_ID}"
    value = api.get(f"{path}/xcomEntries/return_value")["value"]
    result: dict[str, Any] = json.loads(value) if isinstance(value, str) else value
    return result


def sealed_checkpoint(operations: PipelineOperations, checkpoint_id: int) -> Any:
    info = operations.checkpoint(checkpoint_id)
    return info if info.state == CheckpointState.SEALED else None


def edge_jobs(airflow_database_url: str) -> set[tuple[str, str, str | None, str]]:
    """The Edge provider's job rows of the collector task: (run id, queue, worker, state)."""
    engine = sa.create_engine(airflow_database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT run_id, queue, edge_worker, state FROM edge_job "
                    "WHERE dag_id = :dag AND task_id = :task"
                ),
                {"dag": DAG_ID, "task": TASK_ID},
            )
            return {(row.run_id, row.queue, row.edge_worker, row.state) for row in rows}
    finally:
        engine.dispose()


def ended_edge_jobs(
    airflow_database_url: str, run_id: str
) -> set[tuple[str, str, str | None, str]] | None:
    """``edge_jobs`` once the job of ``run_id`` has ended (neither queued nor running)."""
    jobs = edge_jobs(airflow_database_url)
    states = {state for run, _, _, state in jobs if run == run_id}
    return jobs if states and not states & {"queued", "scheduled", "running"} else None


# -- waiting -------------------------------------------------------------------------------


def wait_until(site: AirflowSite, what: str, probe: Callable[[], T | None]) -> T:
    """:func:`wait_for_site` within this test's bounds, with the edge worker's log."""
    logs = {
        "scheduler": component_log(site, "scheduler"),
        "edge worker": site.log.with_name("edge-worker.log"),
    }
    return wait_for_site(site, what, probe, seconds=WAIT_SECONDS, every=POLL_SECONDS, logs=logs)
