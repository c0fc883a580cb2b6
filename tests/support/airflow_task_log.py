"""Task logs written by a real Airflow 3: :func:`run_airflow_tasks` runs the DAG of
:mod:`tests.support.airflow_task_dag` the way a deployment runs tasks, and returns the log files
Airflow wrote and what the tasks logged (their ground truth).

A task's log file is written by the task supervisor of a worker, which runs the task in a
process of its own and talks to the API server's execution API; ``dag.test()`` without an
executor runs tasks in-process and writes no file. So this starts Airflow's API server on a
free port, then ``airflow dags test --use-executor`` with the ``LocalExecutor``: its workers
supervise each task and write ``<base_log_folder>/dag_id=.../run_id=.../task_id=.../attempt=1.log``.
Everything runs in an Airflow home of its own, in processes of their own (about 40 s).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.airflow import migrated_database
from tests.support.processes import free_port, stop_group

DAG_PROGRAM = Path(__file__).with_name("airflow_task_dag.py")
DAG_ID = "task_log_probe"


@dataclass(frozen=True)
class AirflowTaskLogs:
    """What one run of the probe DAG left: each task's log file, and the truth (each record a
    task logged, as :mod:`tests.support.airflow_task_dag` wrote it)."""

    logs: dict[str, Path]
    """By task id."""
    truth: list[dict[str, Any]]
    run_id: str


def _airflow_env(home: Path, port: int, truth: Path) -> dict[str, str]:
    base = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "SLUICE_"))
    }
    return base | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "1",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "SLUICE_TASK_TRUTH": str(truth),
    }


def _airflow(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "airflow", *arguments]


def _wait_serving(port: int, server: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/version", timeout=2):
                return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(
                    f"Airflow's API server did not serve on port {port} (exit status "
                    f"{server.returncode})"
                ) from None
            time.sleep(0.5)


def run_airflow_tasks(folder: Path, timeout: float = 300.0) -> AirflowTaskLogs:
    """Run the probe DAG once with Airflow in ``folder`` (its home); returns its task logs.

    Raises:
        TimeoutError: the API server did not start.
        AssertionError: a task wrote no log (the output is in ``folder/*.out``).
    """
    home = folder / "airflow"
    (home / "dags").mkdir(parents=True)
    (home / "plugins").mkdir()
    shutil.copy(DAG_PROGRAM, home / "dags" / DAG_PROGRAM.name)
    truth = folder / "truth.jsonl"
    port = free_port()
    env = _airflow_env(home, port, truth)
    migrated_database(home)
    with (folder / "api-server.out").open("wb") as out:
        server = subprocess.Popen(
            _airflow("api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"),
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        _wait_serving(port, server, timeout)
        with (folder / "dags-test.out").open("wb") as out:
            # The run fails (its task ``fail`` does): the exit status says nothing here.
            subprocess.run(
                _airflow("dags", "test", "--use-executor", DAG_ID), env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout,
                check=False,
            )  # fmt: skip
    finally:
        stop_group(server, signal.SIGTERM, 10.0)
    logs = {
        path.parent.name.removeprefix("task_id="): path
        for path in (home / "logs").glob(f"dag_id={DAG_ID}/run_id=*/task_id=*/attempt=1.log")
    }
    assert set(logs) == {"talk", "fail"}, f"task logs: {sorted(logs)} (see {folder}/*.out)"
    run_id = logs["talk"].parents[1].name.removeprefix("run_id=")
    records = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines()]
    return AirflowTaskLogs(logs, records, run_id)
