"""Where the collector worker DAG runs its collectors: one task per log host, a queue each."""

from __future__ import annotations

import re
import string
from typing import Annotated

from pydantic import Field, field_validator

from pipeline_core.config._base import HOST_PATTERN as HOST_PATTERN
from pipeline_core.config._base import MAX_HOST_CHARS, _Strict

HOST_PLACEHOLDER = "host"
DEFAULT_QUEUE = "sluice-{host}"
MAX_QUEUE_CHARS = 256
"""The width of Airflow's ``task_instance.queue`` (and of the Edge provider's job queue)."""

_QUEUE_CHARS = re.compile(r"^[A-Za-z0-9._:@-]+$")
"""What a queue name may hold: no comma (``airflow edge worker --queues`` and Celery's
``--queues`` take a comma-separated list) and no white space."""


class WorkerConfig(_Strict):
    """The ``sluice_<name>_worker`` DAG: on which log hosts its collectors run.

    Without ``hosts`` (the default) the DAG has one task, ``collect``, on Airflow's default
    queue, collecting as ``collector.host`` wherever the executor runs it. With ``hosts``, it
    has one task per host, ``collect_<host>``, on that host's queue (``queue`` with ``{host}``
    replaced), collecting as that host (its ``collector.host``, whatever the file says): run a
    worker serving exactly that queue on the host itself (``airflow edge worker --queues
    sluice-web-1``, or a Celery worker with ``--queues``).
    """

    hosts: list[Annotated[str, Field(pattern=HOST_PATTERN)]] = []
    """The log hosts of the pipeline, each collected by a task of its own."""
    queue: Annotated[str, Field(min_length=1)] = DEFAULT_QUEUE
    """Each host's Airflow queue; ``{host}`` is replaced by the host's name (required, so that
    every host gets a queue of its own)."""
    executor: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*$")] | None = None
    """The Airflow executor of the per-host tasks, when it is not the default one (the first
    of ``[core] executor``): ``EdgeExecutor`` beside ``LocalExecutor``, for example. Null: the
    default executor. Ignored without ``hosts``."""

    @field_validator("hosts")
    @classmethod
    def _unique_hosts(cls, hosts: list[str]) -> list[str]:
        repeated = sorted({host for host in hosts if hosts.count(host) > 1})
        if repeated:
            raise ValueError(f"host names must be unique, repeated: {', '.join(repeated)}")
        return hosts

    @field_validator("queue")
    @classmethod
    def _one_queue_per_host(cls, queue: str) -> str:
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(queue) if name is not None]
        except ValueError as exc:
            raise ValueError(f"not a queue template: {exc}") from None
        if fields != [HOST_PLACEHOLDER]:
            raise ValueError(
                "must hold '{host}' exactly once and no other '{...}' field, so that each host "
                f"gets a queue of its own (got fields {fields})"
            )
        longest = queue_name(queue, "h" * MAX_HOST_CHARS)
        if _QUEUE_CHARS.fullmatch(queue_name(queue, "h")) is None:
            raise ValueError("a queue name may hold letters, digits and . _ : @ - only")
        if len(longest) > MAX_QUEUE_CHARS:
            raise ValueError(f"a queue name must fit in {MAX_QUEUE_CHARS} characters")
        return queue

    def queue_of(self, host: str) -> str:
        """The Airflow queue of ``host``'s collector task."""
        return queue_name(self.queue, host)


def queue_name(template: str, host: str) -> str:
    """``template`` with ``{host}`` replaced by ``host``."""
    return template.format_map({HOST_PLACEHOLDER: host})
