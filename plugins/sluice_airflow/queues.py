"""Routing the collector worker DAG: one task per log host, each on its host's queue.

A collector must run on the host whose files it reads. A pipeline config's ``worker``
section names its log hosts (``pipeline_core.config.WorkerConfig``); the worker DAG then has
one ``collect_<host>`` task per host, queued on that host's queue (``sluice-<host>`` by
default) and, when ``worker.executor`` says so, sent to that executor (``EdgeExecutor`` beside
a default ``LocalExecutor``). A worker on each host serves that host's queue only (``airflow
edge worker --queues sluice-web-1``), and each task collects *as* its host. Without hosts the
DAG keeps its one ``collect`` task on Airflow's default queue and executor.

Like :mod:`sluice_airflow.pipeline_configs`, this is read at parse time and never breaks it:
a config without a ``worker`` section costs a plain YAML read; one with a section is checked
with the config's own model, and a section that does not validate (or an executor Airflow
does not have) is logged and falls back, while the tasks, which validate the whole config,
fail with the error naming the key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sluice_airflow.pipeline_configs import config_document

log = logging.getLogger(__name__)

WORKER_SECTION = "worker"
DEFAULT_TASK_ID = "collect"


@dataclass(frozen=True)
class CollectorRoute:
    """One collector task of the worker DAG: its id, the host it collects as, where it runs."""

    task_id: str
    host: str | None = None
    """The host the task collects as; ``None``: the config's ``collector.host``."""
    queue: str | None = None
    """The task's Airflow queue; ``None``: ``[operators] default_queue``."""
    executor: str | None = None
    """The task's Airflow executor; ``None``: the default executor."""

    def operator_kwargs(self) -> dict[str, Any]:
        """``task_id`` and what is set of ``host``, ``queue`` and ``executor``, as keyword
        arguments of :class:`~sluice_airflow.operators.worker.CollectorWorkerOperator`."""
        kwargs: dict[str, Any] = {"task_id": self.task_id}
        for key in ("host", "queue", "executor"):
            value = getattr(self, key)
            if value is not None:
                kwargs[key] = value
        return kwargs


DEFAULT_ROUTE = CollectorRoute(DEFAULT_TASK_ID)
"""No hosts configured: one task on the default queue and executor, as ``collector.host``."""


def collector_routes(config: Path) -> list[CollectorRoute]:
    """The collector tasks of ``config``'s worker DAG: one per ``worker.hosts`` entry, in the
    config's order, or :data:`DEFAULT_ROUTE` alone when it names none (or cannot be read)."""
    section = _worker_section(config)
    if section is None:
        return [DEFAULT_ROUTE]
    # Imported only for configs that route their collectors, so that the others keep the
    # parse free of pipeline_core.
    from pydantic import ValidationError

    from pipeline_core.config import WorkerConfig

    try:
        worker = WorkerConfig.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in (WORKER_SECTION, *e['loc']))}: {e['msg']}"
            for e in exc.errors()
        )
        log.warning("%s: %s; the worker DAG keeps one task on the default queue", config, problems)
        return [DEFAULT_ROUTE]
    if not worker.hosts:
        return [DEFAULT_ROUTE]
    executor = worker.executor
    if executor is not None and not executor_is_configured(executor):
        log.warning(
            "%s: %s.executor %r is not one of Airflow's executors ([core] executor); the "
            "collector tasks go to the default executor on their queues",
            config,
            WORKER_SECTION,
            executor,
        )
        executor = None
    return [
        CollectorRoute(f"{DEFAULT_TASK_ID}_{host}", host, worker.queue_of(host), executor)
        for host in worker.hosts
    ]


def routing_summary(routes: list[CollectorRoute]) -> str:
    """A Markdown line for the DAG's docs: where each collector task runs."""
    if routes == [DEFAULT_ROUTE]:
        return "One collector task, `collect`, on Airflow's default queue and executor."
    executor = routes[0].executor or "the default executor"
    tasks = ", ".join(f"`{route.task_id}` on queue `{route.queue}`" for route in routes)
    return f"One collector task per log host ({executor}): {tasks}."


def executor_is_configured(name: str) -> bool:
    """Whether Airflow's ``[core] executor`` has executor ``name`` (alias, class name or
    module path). True when this process cannot tell (no Airflow core to ask)."""
    try:
        from airflow.exceptions import AirflowConfigException, UnknownExecutorException
        from airflow.executors.executor_loader import ExecutorLoader
    except ImportError:
        return True
    try:
        ExecutorLoader.lookup_executor_name_by_str(name, validate_teams=False)
    except (UnknownExecutorException, AirflowConfigException):
        return False
    return True


def _worker_section(config: Path) -> object | None:
    """The config's ``worker`` section (plain YAML), or ``None`` without one."""
    try:
        document = config_document(config)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # dag_settings has logged it; the tasks report it
    return None if document is None else document.get(WORKER_SECTION)
