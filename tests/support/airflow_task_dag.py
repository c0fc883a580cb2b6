"""A DAG whose tasks log the ways tasks log, for the log files Airflow writes of them: copied
into a DAGs folder of its own and run by :func:`tests.support.airflow_task_log.run_airflow_tasks`.

* ``talk`` logs through Python's ``logging`` at each level a task logs at by default (a message
  with quotes, a backslash, a newline and non-ASCII text among them), logs a handled exception
  with ``logger.exception``, logs through structlog with keyword arguments of several JSON
  types, and prints a line.
* ``fail`` logs, then raises a chained exception: Airflow logs the failure with its
  ``error_detail``.

Each task appends what it logged to ``$SLUICE_TASK_TRUTH``, one JSON object a line: the task,
the logger, the level, the message, the keyword arguments and the epoch seconds just before
and just after the call.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog
from airflow.sdk import dag, task

LOGGER = "sluice.probe"
STRUCTURED_LOGGER = "sluice.probe.structured"
DAG_ID = "task_log_probe"


def _recorded(task_id: str, logger: str, level: str, message: str, **keys: Any) -> None:
    """Log ``message`` and append what was logged to the truth."""
    before = time.time()
    log_call: Callable[..., None]
    if keys:
        log_call = getattr(structlog.get_logger(logger), level)
        log_call(message, **keys)
    elif level == "exception":
        try:
            {"present": 1}["missing"]
        except KeyError:
            logging.getLogger(logger).exception(message)
    else:
        getattr(logging.getLogger(logger), level)(message)
    after = time.time()
    record = {
        "task_id": task_id, "logger": logger, "level": level, "message": message,
        "keys": keys, "before": before, "after": after,
    }  # fmt: skip
    with open(os.environ["SLUICE_TASK_TRUTH"], "a", encoding="utf-8") as truth:
        truth.write(json.dumps(record) + "\n")


@dag(dag_id=DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False)
def task_log_probe() -> None:
    @task
    def talk() -> None:
        _recorded("talk", LOGGER, "info", "copied 3 files")
        _recorded("talk", LOGGER, "warning", 'a "quoted" path C:\\tmp, then\na second line')
        _recorded("talk", LOGGER, "error", "Zürich: 5 € lost")
        _recorded("talk", LOGGER, "critical", "disk full")
        _recorded("talk", LOGGER, "exception", "lookup failed")
        _recorded(
            "talk", STRUCTURED_LOGGER, "info", "batch done",
            rows=3, ratio=0.5, ok=True, source={"path": "/var/log/a.log", "tags": ["x"]},
            note="plain",
        )  # fmt: skip
        print("printed to stdout")

    @task
    def fail() -> None:
        _recorded("fail", LOGGER, "info", "about to fail")
        try:
            int("not a number")
        except ValueError as exc:
            raise RuntimeError("the task failed on purpose") from exc

    talk() >> fail()


task_log_probe()
