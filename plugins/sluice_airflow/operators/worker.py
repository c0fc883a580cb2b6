"""CollectorWorkerOperator: the long-running collector as an Airflow task with a bounded lease."""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException

from sluice_airflow.hooks.sluice import SluiceHook

if TYPE_CHECKING:
    from airflow.sdk import Context

    from pipeline_core.collector import CollectorSession

DEFAULT_RUN_FOR = timedelta(hours=1)
LEASE_POLL_SECONDS = 1.0


class CollectorWorkerOperator(BaseOperator):
    """Tail a pipeline's files for ``run_for``, sealing each checkpoint a DAG run requests.

    Runs a ``CollectorSession`` (the mailbox loop) on the task's thread. The collector's control
    thread turns each checkpoint request found in the metastore into a max-priority mail, so
    while this task runs, the pipeline DAG's ``request_checkpoint`` leaves sealing to it and
    its sensor waits for the barrier. When ``run_for`` is up the task calls
    ``collector.stop()``: the collector seals what it has read, at its current read offsets (a
    checkpoint of its own when no run asked for one; the rest is read by the next worker),
    releases its lease and the task ends. Run it from a DAG with ``schedule="@continuous"``
    and ``max_active_runs=1`` and the next run takes over at once.

    ``on_kill`` (the task marked failed or cleared, ``execution_timeout``, the worker told
    to stop) asks the collector to stop the same way (the session stops it from a thread of
    its own: Airflow calls ``on_kill`` from a signal handler); the task ends as soon as the
    seal is written. A worker
    killed without warning (``SIGKILL``, a lost machine) seals nothing. The next worker on the
    same machine sees that the lease's holder process is gone and takes the lease over at
    once; elsewhere the lease expires ``collector.lease_seconds`` (60 s by default) after its
    last renewal, and the next worker waits up to ``lease_wait`` for it. Either way it resumes
    from the offsets of the last sealed checkpoint; nothing sealed is lost and nothing is read
    twice into the lake.

    Returns (XCom ``return_value``) ``{"host", "files", "lines", "bytes", "seconds",
    "checkpoints_sealed", "stopped_by"}``: the host it collected as, files tracked, lines and
    bytes read, how long it ran, the checkpoints it sealed and why it stopped (``"run_for"``
    or ``"on_kill"``).

    :param config_path: the pipeline's config file. (templated)
    :param run_for: how long to collect before stopping (a ``timedelta`` or seconds).
    :param lease_wait: how long to wait for another collector's lease to be released or to
        expire before failing; default ``collector.lease_seconds`` plus 10 s.
    :param host: collect as this host instead of the config's ``collector.host``: the task of
        one of the config's ``worker.hosts``, routed to that host's queue (the DAG factory sets
        both). Its lease, offsets and batches are that host's.
    """

    template_fields: Sequence[str] = ("config_path",)
    ui_color = "#e0f0e8"

    def __init__(
        self,
        *,
        config_path: str,
        run_for: timedelta | float = DEFAULT_RUN_FOR,
        lease_wait: timedelta | float | None = None,
        host: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.host = host
        self.run_for = _seconds(run_for)
        self.lease_wait = None if lease_wait is None else _seconds(lease_wait)
        self._session: CollectorSession | None = None
        self._killed = False

    def execute(self, context: Context) -> dict[str, Any]:
        from pipeline_core.collector import CollectorSession, StopCause

        hook = SluiceHook(config_path=self.config_path, host=self.host)
        config = hook.operations.config
        self._wait_for_lease(hook, config.collector.lease_seconds)
        session = self._session = CollectorSession([config])
        if self._killed:  # on_kill came while the session was being built
            session.stop()
        self.log.info(
            "Collecting pipeline %s as host %s on %s for %.0f s (until stopped)",
            config.name,
            config.collector.host,
            socket.gethostname(),
            self.run_for,
        )
        try:
            result = session.run(until=time.monotonic() + self.run_for)
        finally:
            self._session = None
        summary = {
            "host": config.collector.host,
            "files": result.files,
            "lines": result.lines,
            "bytes": result.bytes,
            "seconds": round(result.seconds, 3),
            "checkpoints_sealed": [checkpoint.checkpoint_id for checkpoint in result.sealed],
            "stopped_by": "on_kill" if session.stopped_by is StopCause.REQUEST else "run_for",
        }
        self.log.info("Collector stopped: %s", summary)
        return summary

    def on_kill(self) -> None:
        """Stop the collector (seal and release the lease) without blocking the caller."""
        self._killed = True
        session = self._session
        if session is not None:
            self.log.info("Stopping the collector (on_kill)")
            session.stop()

    def _wait_for_lease(self, hook: SluiceHook, lease_seconds: float) -> None:
        """Wait while another live collector holds the lease (a killed worker's lease expiring,
        when this machine cannot tell that the worker is dead)."""
        wait = self.lease_wait if self.lease_wait is not None else lease_seconds + 10.0
        deadline = time.monotonic() + wait
        while hook.operations.worker_is_live():
            if self._killed:
                raise AirflowException("killed while waiting for the collector lease")
            if time.monotonic() >= deadline:
                raise AirflowException(
                    f"another collector still holds the lease of this pipeline after {wait:.0f} s"
                    " (a `sluice collect` process, or a worker on this host)"
                )
            self.log.info("Another collector holds the lease; waiting for it to end or expire")
            time.sleep(LEASE_POLL_SECONDS)


def _seconds(value: timedelta | float) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return seconds
