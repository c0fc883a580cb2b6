"""Operators for one Sluice DAG run: request checkpoint N, land it with Spark, commit it.

Each operator is thin: keyword-only ``__init__`` with no I/O, templated ``config_path`` (and
``checkpoint_id`` where the checkpoint comes from an upstream XCom), and the work done by
:class:`~sluice_airflow.hooks.sluice.SluiceHook`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator

from sluice_airflow.hooks.sluice import SluiceHook, parse_checkpoint_id

if TYPE_CHECKING:
    from airflow.sdk import Context

    from pipeline_core.operations import CheckpointInfo

CHECKPOINT_DIR_KEY = "checkpoint_dir"
"""XCom key under which :class:`RequestCheckpointOperator` pushes the checkpoint's staging dir."""


class RequestCheckpointOperator(BaseOperator):
    """Request the checkpoint of this DAG run and, when nobody else will, seal it in-process.

    The checkpoint is requested for the run's ``run_id`` (a retried task gets the same
    checkpoint) and data interval. If it is still waiting to be sealed, no long-running
    collector holds the pipeline's lease and ``collect_if_idle`` is true, the task collects
    every file to its current end and seals it itself (one-shot mode); otherwise the live
    collector seals it and the downstream sensor waits for that.

    Returns the checkpoint id (XCom ``return_value``) and pushes the checkpoint's staging
    directory under the XCom key ``checkpoint_dir``.

    :param config_path: the pipeline's config file. (templated)
    :param collect_if_idle: collect and seal in this task when no collector worker is live.
    """

    template_fields: Sequence[str] = ("config_path",)
    ui_color = "#e8f4fa"

    def __init__(self, *, config_path: str, collect_if_idle: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.collect_if_idle = collect_if_idle

    def execute(self, context: Context) -> int:
        hook = SluiceHook(config_path=self.config_path)
        info = hook.request_checkpoint(
            run_id=context["run_id"], data_interval=_data_interval(context)
        )
        self.log.info(
            "Checkpoint %d of pipeline %s is %s (staging dir %s)",
            info.checkpoint_id,
            info.pipeline,
            info.state.value,
            info.staging_dir,
        )
        context["ti"].xcom_push(key=CHECKPOINT_DIR_KEY, value=str(info.staging_dir))
        if self.collect_if_idle:
            self._collect_if_idle(hook, info)
        return info.checkpoint_id

    def _collect_if_idle(self, hook: SluiceHook, info: CheckpointInfo) -> None:
        from pipeline_core.errors import CollectorBusyError
        from pipeline_core.operations import CheckpointState

        if info.state != CheckpointState.REQUESTED:
            # Sealed already (a retry, or a live collector was quick): collecting now would
            # seal a new checkpoint that no DAG run lands.
            return
        if hook.worker_is_live():
            self.log.info("A collector worker holds the lease; it seals the checkpoint")
            return
        try:
            report = hook.collect_once()
        except CollectorBusyError:
            self.log.info("A collector worker took the lease meanwhile; it seals the checkpoint")
            return
        self.log.info(
            "Collected %d lines (%d bytes) from %d files in %.2f s; sealed checkpoints %s",
            report.lines,
            report.bytes,
            report.files,
            report.seconds,
            [sealed.checkpoint_id for sealed in report.sealed],
        )


class LandCheckpointOperator(SparkSubmitOperator):
    """Spark-submit the landing job of a sealed checkpoint (``spark_jobs/land_checkpoint.py``).

    The job's application, arguments, name, Spark conf, environment and py-files come from the
    pipeline (``SluiceHook.landing_job``) when the task runs, so the DAG file needs nothing
    from the config. ``conf`` and ``env_vars`` given to the operator are laid over the
    pipeline's. Every other ``SparkSubmitOperator`` argument (``conn_id``, memory, ...) passes
    through. When ``spark-submit`` is not on ``PATH`` and no ``spark_binary`` is given, the
    one installed next to the running Python (the virtualenv's pyspark) is used.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the sealed checkpoint, usually
        ``"{{ ti.xcom_pull(task_ids='request_checkpoint') }}"``. (templated)
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "config_path",
        "checkpoint_id",
    )
    ui_color = "#fff1e0"

    def __init__(
        self,
        *,
        config_path: str,
        checkpoint_id: int | str,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id

    def execute(self, context: Context) -> None:
        checkpoint_id = parse_checkpoint_id(self.checkpoint_id)
        spec = SluiceHook(config_path=self.config_path).landing_job(checkpoint_id)
        # SparkSubmitOperator builds its SparkSubmitHook from these attributes in execute().
        self.application = spec.application
        self.application_args = list(spec.application_args)
        self.name = spec.name
        self.conf = {**spec.conf, **(self.conf or {})}
        self.env_vars = {**spec.env_vars, **(self.env_vars or {})}
        self.py_files = spec.py_files
        if self._spark_binary is None:
            self._spark_binary = _fallback_spark_submit()
        self._hook = None  # never reuse a hook built for another checkpoint
        self.log.info(
            "Landing checkpoint %d: %s %s", checkpoint_id, spec.application, spec.application_args
        )
        super().execute(context)


class CommitCheckpointOperator(BaseOperator):
    """Commit a landed checkpoint and return what landed.

    Returns (XCom ``return_value``) ``{"checkpoint_id", "lines", "bytes", "rows", "rejects",
    "landing"}``: lines and bytes sealed into the checkpoint, the totals of parsed rows and
    rejected lines the landing job reported (``None`` when it did not report them), and the
    job's summary itself (rows per source table, rejects per reason). Airflow 3.3 gives a
    running task no supported way to set its DAG run's note, so the summary is the XCom only.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the landed checkpoint. (templated)
    """

    template_fields: Sequence[str] = ("config_path", "checkpoint_id")
    ui_color = "#e9f7e9"

    def __init__(self, *, config_path: str, checkpoint_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id

    def execute(self, context: Context) -> dict[str, Any]:
        checkpoint_id = parse_checkpoint_id(self.checkpoint_id)
        info = SluiceHook(config_path=self.config_path).commit(checkpoint_id)
        landed = {
            "checkpoint_id": info.checkpoint_id,
            "lines": info.line_count,
            "bytes": info.byte_count,
            "rows": _total(info.landing.get("rows")),
            "rejects": _total(info.landing.get("rejects")),
            "landing": dict(info.landing),
        }
        self.log.info("Committed checkpoint %d: %s", checkpoint_id, landed)
        return landed


def _data_interval(context: Context) -> tuple[datetime, datetime] | None:
    start = context.get("data_interval_start")
    end = context.get("data_interval_end")
    if start is None or end is None:
        return None
    return start, end


def _total(count: object) -> int | None:
    """A count the landing job reported: a number, or numbers per table or per reason."""
    if isinstance(count, Mapping):
        return sum(int(value) for value in count.values())
    if isinstance(count, int | float | str):
        return int(count)
    return None


def _fallback_spark_submit() -> str | None:
    """``None`` (the provider's default) when spark-submit is on PATH, else the venv's one."""
    if shutil.which("spark-submit"):
        return None
    beside_python = Path(sys.executable).parent / "spark-submit"
    return str(beside_python) if os.access(beside_python, os.X_OK) else None
