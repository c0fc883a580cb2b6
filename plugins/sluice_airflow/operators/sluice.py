"""Operators for one Sluice DAG run: request checkpoint N, land it with Spark, commit it.

Each operator is thin: keyword-only ``__init__`` with no I/O, templated ``config_path`` (and
``checkpoint_id`` where the checkpoint comes from an upstream XCom), and the work done by
:class:`~sluice_airflow.hooks.sluice.SluiceHook`.

What a run lands depends on its kind and its ``mode`` param (:class:`RunMode`), read by
:class:`RequestCheckpointOperator` when it runs; the other tasks follow its XCom, which is one
checkpoint id or a list of them.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from sluice_airflow.hooks.sluice import SluiceHook, parse_checkpoint_ids

if TYPE_CHECKING:
    from airflow.sdk import Context

    from pipeline_core.operations import CheckpointInfo

CHECKPOINT_DIR_KEY = "checkpoint_dir"
"""XCom key under which :class:`RequestCheckpointOperator` pushes the checkpoint's staging dir."""
BACKFILL_RUN_TYPE = "backfill"
"""``dag_run.run_type`` of the runs ``airflow backfill create`` makes (``DagRunType.BACKFILL_JOB``
in airflow-core, ``DagRunType.BACKFILL`` in the Task SDK: both have this value)."""


class RunMode(StrEnum):
    """What a pipeline DAG run does; the ``mode`` param of a manually triggered run."""

    NORMAL = "normal"
    """Request this run's checkpoint, have it sealed (in-process or by a live worker), land it,
    commit it. Scheduled runs always do this."""
    REPROCESS = "reprocess"
    """Land the sealed or committed checkpoint ``checkpoint_id`` again (its lake output is
    replaced) and commit it; nothing is collected."""
    SPARK_ONLY = "spark_only"
    """Land and commit every sealed checkpoint not committed yet; nothing is collected."""
    FORCE_SEAL = "force_seal"
    """Like ``normal``, but collect and seal in this task even when ``collect_if_idle`` is off
    or a worker looks live; if a worker does hold the lease, the request waits for it."""


def run_mode(context: Context) -> RunMode:
    """The run's mode: its ``mode`` param (``normal`` when there is none)."""
    params = context.get("params") or {}
    value = params.get("mode") or RunMode.NORMAL.value
    try:
        return RunMode(value)
    except ValueError:
        choices = ", ".join(mode.value for mode in RunMode)
        raise AirflowFailException(f"unknown mode {value!r}; choose one of {choices}") from None


def is_backfill(context: Context) -> bool:
    """True in a run made by ``airflow backfill create``."""
    run_type = getattr(context.get("dag_run"), "run_type", None)
    return run_type is not None and str(getattr(run_type, "value", run_type)) == BACKFILL_RUN_TYPE


class RequestCheckpointOperator(BaseOperator):
    """Decide which checkpoints this DAG run lands; request and seal a new one if it is due.

    * **normal** (every scheduled run): the checkpoint is requested for the run's ``run_id``
      (a retried task gets the same checkpoint) and data interval; earlier checkpoints sealed
      but not committed (sealed by a worker as it stopped) are landed along with it. If it is
      still waiting to be sealed, no long-running collector holds the pipeline's lease and
      ``collect_if_idle`` is true, the task collects every file to its current end and seals
      it itself (one-shot mode); otherwise the live collector seals it and the downstream
      sensor waits for that.
    * **force_seal**: the same, but the task tries to collect and seal at once whatever
      ``collect_if_idle`` says and without asking whether a worker is live. Only one collector
      may read a pipeline's files on a host (the lease): if a worker holds it, the request
      stays for the worker, which seals it at its next barrier, and the sensor waits.
    * **reprocess**: the ``checkpoint_id`` param names a sealed or committed checkpoint to land
      again; nothing is requested or collected.
    * **spark_only**: every sealed checkpoint not committed yet; nothing is collected.
    * **backfill runs** (``airflow backfill create``), whatever the mode: the sealed or
      committed checkpoints of the run's data interval
      (``PipelineOperations.checkpoints_in_interval``); nothing is requested or collected, and
      an interval without any is an empty, successful run.

    Returns (XCom ``return_value``) the checkpoint id for **normal** (a list when earlier
    sealed checkpoints land with it), **force_seal** and **reprocess**, a list of ids (maybe
    empty) for **spark_only** and backfill runs. When it
    returns one id it also pushes the checkpoint's staging directory under the XCom key
    ``checkpoint_dir``.

    :param config_path: the pipeline's config file. (templated)
    :param collect_if_idle: in **normal** runs, collect and seal in this task when no collector
        worker is live.
    """

    template_fields: Sequence[str] = ("config_path",)
    ui_color = "#e8f4fa"

    def __init__(self, *, config_path: str, collect_if_idle: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.collect_if_idle = collect_if_idle

    def execute(self, context: Context) -> int | list[int]:
        hook = SluiceHook(config_path=self.config_path)
        mode = run_mode(context)
        if is_backfill(context):
            if mode is not RunMode.NORMAL:
                self.log.info("A backfill run re-lands its interval; mode %s is ignored", mode)
            return self._backfill(hook, context)
        if mode is RunMode.SPARK_ONLY:
            pending = [info.checkpoint_id for info in hook.pending_landings()]
            self.log.info("Landing the sealed checkpoints not committed yet: %s", pending)
            return pending
        if mode is RunMode.REPROCESS:
            info = self._reprocess_target(hook, context)
        else:
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
        if mode is RunMode.FORCE_SEAL:
            self._collect(hook, info, defer_to_worker=False)
        elif mode is RunMode.NORMAL and self.collect_if_idle:
            self._collect(hook, info, defer_to_worker=True)
        if mode is RunMode.NORMAL:
            # Checkpoints sealed outside any DAG run (a collector worker sealing what it read
            # when it stops) are landed by the next scheduled run, so no line waits for a
            # manual spark_only run.
            older = [
                pending.checkpoint_id
                for pending in hook.pending_landings()
                if pending.checkpoint_id < info.checkpoint_id
            ]
            if older:
                self.log.info("Also landing earlier sealed checkpoints %s", older)
                return [*older, info.checkpoint_id]
        return info.checkpoint_id

    def _reprocess_target(self, hook: SluiceHook, context: Context) -> CheckpointInfo:
        from pipeline_core.errors import CheckpointError

        requested = (context.get("params") or {}).get("checkpoint_id")
        if requested in (None, ""):
            raise AirflowFailException("mode reprocess needs the checkpoint_id param")
        try:
            ids = parse_checkpoint_ids(requested)
            if len(ids) != 1:
                raise ValueError(f"one checkpoint id is needed, got {requested!r}")
            return hook.landable(ids[0])
        except (ValueError, CheckpointError) as exc:
            raise AirflowFailException(f"cannot reprocess: {exc}") from exc

    def _backfill(self, hook: SluiceHook, context: Context) -> list[int]:
        interval = _data_interval(context)
        if interval is None:
            raise AirflowFailException("a backfill run without a data interval lands nothing")
        found = hook.checkpoints_in_interval(*interval)
        ids = [info.checkpoint_id for info in found]
        if ids:
            self.log.info("Backfill of %s - %s re-lands checkpoints %s", *interval, ids)
        else:
            self.log.info("Backfill of %s - %s: no checkpoint was sealed then", *interval)
        return ids

    def _collect(self, hook: SluiceHook, info: CheckpointInfo, *, defer_to_worker: bool) -> None:
        from pipeline_core.errors import CollectorBusyError
        from pipeline_core.operations import CheckpointState

        if info.state != CheckpointState.REQUESTED:
            # Sealed already (a retry, or a live collector was quick): collecting now would
            # seal a new checkpoint that no DAG run lands.
            return
        if defer_to_worker and hook.worker_is_live():
            self.log.info("A collector worker holds the lease; it seals the checkpoint")
            return
        try:
            report = hook.collect_once()
        except CollectorBusyError:
            self.log.info("A collector worker holds the lease; it seals the checkpoint")
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
    """Spark-submit the landing job of sealed checkpoints (``spark_jobs/land_checkpoint.py``).

    The job's application, arguments, name, Spark conf, environment and py-files come from the
    pipeline (``SluiceHook.landing_job``) when the task runs, so the DAG file needs nothing
    from the config. ``conf`` and ``env_vars`` given to the operator are laid over the
    pipeline's. Every other ``SparkSubmitOperator`` argument (``conn_id``, memory, ...) passes
    through. When ``spark-submit`` is not on ``PATH`` and no ``spark_binary`` is given, the
    one installed next to the running Python (the virtualenv's pyspark) is used.

    A list of checkpoints is landed one spark-submit after the other, oldest first; an empty
    list lands nothing. Landing a checkpoint again replaces its output in the lake.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the sealed checkpoint, usually
        ``"{{ ti.xcom_pull(task_ids='request_checkpoint') }}"``; or a list of them. (templated)
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
        checkpoint_id: int | str | list[int],
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id

    def execute(self, context: Context) -> None:
        checkpoint_ids = parse_checkpoint_ids(self.checkpoint_id)
        if not checkpoint_ids:
            self.log.info("No checkpoint to land")
            return
        hook = SluiceHook(config_path=self.config_path)
        operator_conf = dict(self.conf or {})
        operator_env = dict(self.env_vars or {})
        for checkpoint_id in checkpoint_ids:
            spec = hook.landing_job(checkpoint_id)
            # SparkSubmitOperator builds its SparkSubmitHook from these attributes in execute().
            self.application = spec.application
            self.application_args = list(spec.application_args)
            self.name = spec.name
            self.conf = {**spec.conf, **operator_conf}
            self.env_vars = {**spec.env_vars, **operator_env}
            self.py_files = spec.py_files
            if self._spark_binary is None:
                self._spark_binary = _fallback_spark_submit()
            self._hook = None  # never reuse a hook built for another checkpoint
            self.log.info(
                "Landing checkpoint %d: %s %s",
                checkpoint_id,
                spec.application,
                spec.application_args,
            )
            super().execute(context)


class CommitCheckpointOperator(BaseOperator):
    """Commit landed checkpoints and return what landed.

    For one checkpoint, returns (XCom ``return_value``) ``{"checkpoint_id", "checkpoint_ids",
    "lines", "bytes", "rows", "rejects", "landing"}``: lines and bytes sealed into the
    checkpoint, the totals of parsed rows and rejected lines the landing job reported (``None``
    when it did not report them), and the job's summary itself (rows per source table, rejects
    per reason). For a list of checkpoints (``spark_only`` and backfill runs) ``checkpoint_id``
    is ``None``, the counts are totals over the list and ``checkpoints`` holds each one's
    summary; an empty list commits nothing and returns zeros.

    The same summary, with the ``lake`` root, is the ``extra`` of the asset events of the
    task's ``outlets`` (the pipeline's lake table), so DAGs scheduled on the asset see what
    landed. Airflow 3.3 gives a running task no way to set its DAG run's note (the Task SDK's
    execution API has no such call), so :func:`run_note` formats the one-line note for a
    listener in the scheduler to set.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the landed checkpoint, or a list of them. (templated)
    """

    template_fields: Sequence[str] = ("config_path", "checkpoint_id")
    ui_color = "#e9f7e9"

    def __init__(
        self, *, config_path: str, checkpoint_id: int | str | list[int], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id

    def execute(self, context: Context) -> dict[str, Any]:
        single = not isinstance(self.checkpoint_id, list | tuple) and not str(
            self.checkpoint_id
        ).strip().startswith("[")
        hook = SluiceHook(config_path=self.config_path)
        landed = [
            _landed(hook.commit(checkpoint_id))
            for checkpoint_id in parse_checkpoint_ids(self.checkpoint_id)
        ]
        summary = landed[0] if single else _totals(landed)
        self.log.info("Committed: %s", run_note(summary))
        self._describe_asset_events(context, hook, summary)
        return summary

    def _describe_asset_events(
        self, context: Context, hook: SluiceHook, summary: dict[str, Any]
    ) -> None:
        assets = [outlet for outlet in self.outlets if isinstance(outlet, Asset)]
        if not assets:
            return
        extra = {key: value for key, value in summary.items() if key != "checkpoints"}
        extra["lake"] = str(hook.lake_dir())
        events = context["outlet_events"]
        for asset in assets:
            events[asset].extra.update(extra)


def run_note(summary: Mapping[str, Any]) -> str:
    """One line for a DAG run's note from a commit summary (what the commit task returns)."""
    ids = summary.get("checkpoint_ids") or []
    if not ids:
        return "no checkpoint to land"
    which = f"checkpoint {ids[0]}" if len(ids) == 1 else f"checkpoints {', '.join(map(str, ids))}"
    rows = summary.get("rows")
    rejects = summary.get("rejects")
    return (
        f"{which}: {summary.get('lines')} lines ({summary.get('bytes')} bytes) -> "
        f"{'?' if rows is None else rows} rows, {'?' if rejects is None else rejects} rejects"
    )


def _landed(info: CheckpointInfo) -> dict[str, Any]:
    return {
        "checkpoint_id": info.checkpoint_id,
        "checkpoint_ids": [info.checkpoint_id],
        "lines": info.line_count,
        "bytes": info.byte_count,
        "rows": _total(info.landing.get("rows")),
        "rejects": _total(info.landing.get("rejects")),
        "landing": dict(info.landing),
    }


def _totals(landed: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str) -> int | None:
        counts = [item[key] for item in landed]
        return None if any(count is None for count in counts) else sum(counts)

    return {
        "checkpoint_id": None,
        "checkpoint_ids": [item["checkpoint_id"] for item in landed],
        "lines": total("lines"),
        "bytes": total("bytes"),
        "rows": total("rows"),
        "rejects": total("rejects"),
        "checkpoints": landed,
    }


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
