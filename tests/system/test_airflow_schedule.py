"""Scheduled runs and a backfill through a real Airflow: every line lands once (issue 7).

A real Airflow runs on loopback with all its components (api-server, scheduler with the
LocalExecutor, DAG processor, triggerer) on a throw-away home (the variables of
``scripts/airflow-env.sh``) with the repository's DAGs and plugins. Its metadata database is a
database of its own on the suite's PostgreSQL server (with four components and CLI commands
writing at once, SQLite's single writer makes commands fail with "database is locked"). Its
pipelines folder holds one pipeline, ``web_access``, scheduled every minute on sample nginx
logs (with malformed lines and a rotation), its metastore in SQLite, landed by Spark in
``local[1]``.

1. ``airflow dags unpause``: the scheduler makes the first run at once (the DAG does not catch
   up, so the run covers the last whole minute) and the next one when that minute has passed.
   More lines are written once the first run has collected, so the second run lands new ones.
   (Each run's request task collects and seals its checkpoint itself, no collector worker
   being live, so the ``wait_sealed`` sensor finds it sealed and does not defer: the
   triggerer runs, healthy, but gets no trigger.)
2. ``airflow backfill create --reprocess-behavior completed`` over the first run's interval:
   the scheduler runs that interval again as a backfill run, which lands the first run's
   checkpoint again and collects nothing.
3. Every process is stopped (by the process group each was started in) and none may be
   left: no process may still carry the site's ``AIRFLOW_HOME``.
4. The lake (``summarize_lake``) holds one row per well-formed line written, each event id
   once, and one reject per malformed line.

Scheduled runs after the second one (the minute keeps ticking during the backfill) collect
nothing new: their checkpoints are empty and commit without a Spark application; those done
when the backfill is must have landed nothing, the others are stopped with the scheduler.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import summarize_lake
from pipeline_core.testing import SampleWrite, append_sample_access_logs
from tests.support.pipelines import write_config
from tests.system.airflow_site import (
    COMPONENTS,
    AirflowSite,
    RestClient,
    airflow_postgres_database,
    kill_leftovers,
    running_airflow_site,
    site_home,
    site_pipelines,
    wait_for_site,
)

pytestmark = [pytest.mark.slow, pytest.mark.system, pytest.mark.postgres_pass]  # lanes balance

DAG_ID = "sluice_web_access"
CRON = "* * * * *"
SETTINGS = {
    # New DAGs start paused (scripts/airflow-env.sh has them start unpaused): the test
    # unpauses the pipeline's DAG as a user would.
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
    "AIRFLOW__CORE__PARALLELISM": "2",
    "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
    "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[1]"}),
}
# One step may wait for a Spark landing started beside the other lane's Spark jobs on 2 busy
# cores: the backfill's took 4 minutes once.
WAIT_SECONDS = 420.0
POLL_SECONDS = 2.0

T = TypeVar("T")


@pytest.mark.timeout(1200)  # 550-620 s beside the other lane's Spark jobs on 2 busy cores
def test_scheduled_runs_and_a_backfill_land_every_line_once(tmp_path: Path) -> None:
    pipelines = site_pipelines(tmp_path)
    config = write_config(pipelines, f"sqlite:///{tmp_path / 'sluice.db'}", schedule=CRON)
    logs = pipelines / "logs"
    writes = [append_sample_access_logs(logs, lines=200, malformed=3, seed=7)]
    with airflow_postgres_database() as database:
        try:
            with running_airflow_site(tmp_path, SETTINGS | database, COMPONENTS) as site:
                writes.append(run_the_schedule_and_a_backfill(site, logs, writes[0]))
        finally:
            leftovers = kill_leftovers(site_home(tmp_path))
    assert not leftovers, f"processes left running (now killed): {leftovers}"

    summary = summarize_lake(load_pipeline_config(config))
    malformed = sum(write.malformed for write in writes)
    assert summary.rows == {"access": sum(write.lines for write in writes) - malformed}
    assert summary.distinct_event_ids == summary.rows["access"], "duplicate event ids"
    assert sum(summary.rejects.values()) == malformed


def run_the_schedule_and_a_backfill(
    site: AirflowSite, logs: Path, first_write: SampleWrite
) -> SampleWrite:
    """Two scheduled runs with new lines between them, then a backfill of the first one.

    Returns what was written between the runs; checks what each run committed.
    """
    api = RestClient(site)
    wait_until(site, "the DAG is parsed", lambda: dag_parsed(api))
    site.airflow("dags", "unpause", DAG_ID)

    # Run 1 collects the lines written so far; lines written after its request task end up
    # in run 2 (max_active_runs=1 keeps run 2 queued until run 1 is done).
    first = wait_until(site, "a scheduled run collected", lambda: collected_run(api))
    second_write = append_sample_access_logs(logs, lines=150, malformed=5, seed=8)
    wait_until(site, f"run {first['dag_run_id']} succeeded", lambda: succeeded(api, first))
    second = wait_until(site, "a second scheduled run succeeded", lambda: next_run(api, first))

    landed = [committed(api, first), committed(api, second)]
    assert [item["checkpoint_ids"] for item in landed] == [[1], [2]]
    for item, write in zip(landed, (first_write, second_write), strict=True):
        assert (item["lines"], item["rejects"]) == (write.lines, write.malformed), item
        assert item["rows"] == write.lines - write.malformed, item

    # The backfill turns run 1 into a backfill run (same run id) and runs each task again.
    tries_before = task_tries(api, first)
    interval_start = first["logical_date"]
    output = site.airflow(
        "backfill",
        "create",
        "--dag-id",
        DAG_ID,
        "--from-date",
        interval_start,
        "--to-date",
        interval_start,
        "--reprocess-behavior",
        "completed",
    )
    wait_until(site, f"the backfill completed ({output.strip()[-300:]})", lambda: backfilled(api))
    rerun = wait_until(site, "the backfill run succeeded", lambda: succeeded(api, first))
    assert rerun["run_type"] == "backfill"
    assert task_tries(api, first) == {task: tries + 1 for task, tries in tries_before.items()}
    relanded = committed(api, first)
    assert relanded["checkpoint_ids"] == [1]
    assert (relanded["rows"], relanded["rejects"]) == (landed[0]["rows"], landed[0]["rejects"])

    # Scheduled runs kept coming every minute (each requests and seals a checkpoint of its
    # own): the ones done by now landed nothing; the others stop with the scheduler.
    ours = (first["dag_run_id"], second["dag_run_id"])
    for run in dag_runs(api):
        if run["dag_run_id"] not in ours and run["state"] == "success":
            assert committed(api, run)["lines"] == 0, run
    return second_write


# -- what the REST API says ----------------------------------------------------------------


def dag_parsed(api: RestClient) -> bool | None:
    dags = api.get("dags", dag_id_pattern=DAG_ID)["dags"]
    return True if any(dag["dag_id"] == DAG_ID for dag in dags) else None


def dag_runs(api: RestClient) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = api.get(f"dags/{DAG_ID}/dagRuns", limit=100)["dag_runs"]
    failed = [run for run in runs if run["state"] == "failed"]
    if failed:
        pytest.fail(f"run {failed[0]['dag_run_id']} failed: {task_states(api, failed[0])}")
    return sorted(runs, key=lambda run: run["logical_date"])


def task_instances(api: RestClient, run: dict[str, Any]) -> list[dict[str, Any]]:
    path = f"dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances"
    instances: list[dict[str, Any]] = api.get(path)["task_instances"]
    return instances


def task_states(api: RestClient, run: dict[str, Any]) -> dict[str, str | None]:
    return {ti["task_id"]: ti["state"] for ti in task_instances(api, run)}


def task_tries(api: RestClient, run: dict[str, Any]) -> dict[str, int]:
    """Each task's try number (one more for every task of a run that runs again)."""
    return {ti["task_id"]: ti["try_number"] for ti in task_instances(api, run)}


def collected_run(api: RestClient) -> dict[str, Any] | None:
    """The first scheduled run, once its request task (which collects) has succeeded."""
    scheduled = [run for run in dag_runs(api) if run["run_type"] == "scheduled"]
    if scheduled and task_states(api, scheduled[0]).get("request_checkpoint") == "success":
        return scheduled[0]
    return None


def succeeded(api: RestClient, run: dict[str, Any]) -> dict[str, Any] | None:
    current: dict[str, Any] = api.get(f"dags/{DAG_ID}/dagRuns/{run['dag_run_id']}")
    if current["state"] == "failed":
        pytest.fail(f"run {run['dag_run_id']} failed: {task_states(api, run)}")
    return current if current["state"] == "success" else None


def next_run(api: RestClient, first: dict[str, Any]) -> dict[str, Any] | None:
    """The scheduled run after ``first``, once it has succeeded."""
    later = [
        run
        for run in dag_runs(api)
        if run["run_type"] == "scheduled" and run["logical_date"] > first["logical_date"]
    ]
    return later[0] if later and later[0]["state"] == "success" else None


def backfilled(api: RestClient) -> bool | None:
    backfills = api.get("backfills", dag_id=DAG_ID)["backfills"]
    return True if backfills and all(b["completed_at"] for b in backfills) else None


def committed(api: RestClient, run: dict[str, Any]) -> dict[str, Any]:
    """What the run's commit task returned: checkpoint ids, lines, rows, rejects."""
    path = f"dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances/commit/xcomEntries"
    value = api.get(f"{path}/return_value")["value"]
    landed: dict[str, Any] = json.loads(value) if isinstance(value, str) else value
    return landed


# -- waiting -------------------------------------------------------------------------------


def wait_until(site: AirflowSite, what: str, probe: Callable[[], T | None]) -> T:
    """:func:`wait_for_site` within this test's bounds."""
    return wait_for_site(site, what, probe, seconds=WAIT_SECONDS, every=POLL_SECONDS)
