"""Operators for one Sluice DAG run: request checkpoint N, land it with Spark, commit it.

Each operator is thin: keyword-only ``__init__`` with no I/O, templated ``config_path`` (and
``checkpoint_id`` where the checkpoint comes from an upstream XCom), and the work done by
:class:`~sluice_airflow.hooks.sluice.SluiceHook` over ``pipeline_core``.

What a run lands depends on its kind and its ``mode`` param (:class:`RunMode`): the decision is
``pipeline_core.runs.plan_run``, which :class:`RequestCheckpointOperator` calls when it runs;
the other tasks follow its XCom, which is one checkpoint id or a list of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from pipeline_core._compat import StrEnum
from sluice_airflow.hooks.sluice import SluiceHook

if TYPE_CHECKING:
    from airflow.sdk import Context

    from pipeline_core.landing import JobSubmitter
    from pipeline_core.runs import RunPlan

CHECKPOINT_DIR_KEY = "checkpoint_dir"
"""XCom key under which :class:`RequestCheckpointOperator` pushes the checkpoint's staging dir."""
BACKFILL_RUN_TYPE = "backfill"
"""``dag_run.run_type`` of the runs ``airflow backfill create`` makes (``DagRunType.BACKFILL_JOB``
in airflow-core, ``DagRunType.BACKFILL`` in the Task SDK: both have this value)."""


class RunMode(StrEnum):
    """The choices of a run's ``mode`` param, for DAG files: ``pipeline_core.runs.RunMode``'s.

    What each mode does is decided (and documented) there; the values are repeated here
    because DAG files are parsed without importing ``pipeline_core``, and a test keeps the two
    enums equal.
    """

    NORMAL = "normal"
    REPROCESS = "reprocess"
    SPARK_ONLY = "spark_only"
    FORCE_SEAL = "force_seal"


def run_mode(context: Context) -> RunMode:
    """The run's mode: its ``mode`` param (``normal`` when there is none)."""
    from pipeline_core.runs import RunPlanError, parse_run_mode

    try:
        return RunMode(parse_run_mode((context.get("params") or {}).get("mode")))
    except RunPlanError as exc:
        raise AirflowFailException(str(exc)) from None


def is_backfill(context: Context) -> bool:
    """True in a run made by ``airflow backfill create``."""
    run_type = getattr(context.get("dag_run"), "run_type", None)
    return run_type is not None and str(getattr(run_type, "value", run_type)) == BACKFILL_RUN_TYPE


def run_plan(context: Context, *, collect_if_idle: bool = True) -> RunPlan:
    """The plan of the run whose task context this is (``pipeline_core.runs.plan_run``).

    :raises AirflowFailException: no plan can do what the run asks (no retries).
    """
    from pipeline_core.runs import RunPlanError, plan_run

    params = context.get("params") or {}
    try:
        return plan_run(
            run_mode(context),
            backfill=is_backfill(context),
            run_id=context["run_id"],
            data_interval=_data_interval(context),
            checkpoint_id=params.get("checkpoint_id"),
            collect_if_idle=collect_if_idle,
        )
    except RunPlanError as exc:
        raise AirflowFailException(str(exc)) from exc


class RequestCheckpointOperator(BaseOperator):
    """Decide which checkpoints this DAG run lands; request and seal a new one if it is due.

    The decision is ``pipeline_core.runs.plan_run``: which checkpoints each kind of run (its
    ``mode`` param, or a backfill) lands, and when it requests or collects, is the table in
    ``pipeline_core.runs``. This task reads the run's kind and params, has the hook carry the
    plan out and returns what the run lands. A run that cannot be planned (an unknown mode, a bad
    ``checkpoint_id``) fails at once, without retries.

    Returns (XCom ``return_value``) the checkpoint id for **normal** (a list when earlier
    sealed checkpoints land with it), **force_seal** and **reprocess**, a list of ids (maybe
    empty) for **spark_only** and backfill runs. When the run has a checkpoint of its own it
    also pushes that checkpoint's staging directory under the XCom key ``checkpoint_dir``.

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
        from pipeline_core.runs import RunPlanError, execute_plan

        plan = run_plan(context, collect_if_idle=self.collect_if_idle)
        try:
            result = execute_plan(plan, SluiceHook(config_path=self.config_path).operations)
        except RunPlanError as exc:
            raise AirflowFailException(str(exc)) from exc
        if result.checkpoint is not None:
            from pipeline_core.config import mask_url_passwords

            staging_dir = mask_url_passwords(str(result.checkpoint.staging))
            context["ti"].xcom_push(key=CHECKPOINT_DIR_KEY, value=staging_dir)
        return result.lands


class LandCheckpointOperator(BaseOperator):
    """Land sealed checkpoints with one Spark application (``spark_jobs/land.py``).

    When the task runs, the pipeline (``SluiceHook.landing_job``) says what is left to land of
    ``checkpoint_id`` and gives the job's application, arguments, name, Spark conf, environment
    and py-files; the operator builds a plain ``SparkSubmitHook`` from that and this
    operator's settings and submits it once, however many checkpoints the list holds: one
    Spark application, one commit per lake table. ``conf`` and ``env_vars`` given here are laid
    over the pipeline's; ``spark_submit_kwargs`` passes any other ``SparkSubmitHook`` argument
    (memory, cores, ``deploy_mode``, ``verbose`` ...). When ``spark-submit`` is not on ``PATH``
    and no ``spark_binary`` is given, the one installed beside the running Python (the
    virtualenv's pyspark) is used. The metastore URL (``SLUICE_METASTORE_URL`` of the
    environment) never goes on spark-submit's command line: a YARN or Kubernetes master, whose
    spark-submit would carry it there, gets it in a file only this user can read
    (``pipeline_core.landing.SparkSubmitJob``).

    When the ``conn_id`` connection is of type ``spark_connect`` (the Spark provider's
    ``SparkConnectHook``), the same job runs on that warm Spark Connect server instead
    (``pipeline_core.landing.SparkConnectSubmitter``: its driver is a child process of the task,
    with the pipeline's environment and ``env_vars``); ``conf``, ``spark_binary`` and
    ``spark_submit_kwargs`` are spark-submit's and do not apply (the server has its settings).

    Nothing is carried between attempts: every execution (a retry, a cleared task) asks the
    lake tables again. Normal runs leave out checkpoints a table holds already, so a retry
    after a landing that committed never lands it twice, and one that did not commit lands it
    in full; reprocess and backfill runs replace the checkpoints' rows in the same commit. An
    empty list, or a list the tables already hold, submits nothing.

    One task per checkpoint instead of one per run: map the operator over the request task's
    list, ``LandCheckpointOperator.partial(task_id="land", config_path=...)
    .expand(checkpoint_id=request.output)``.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the sealed checkpoint, usually
        ``"{{ ti.xcom_pull(task_ids='request_checkpoint') }}"``; or a list of them. (templated)
    :param conn_id: the Spark connection (``spark_default``: ``local[*]`` unless it says
        otherwise; of type ``spark_connect``, the Spark Connect server to land on).
    :param conf: Spark properties laid over the pipeline's. (templated)
    :param env_vars: environment of spark-submit, laid over the pipeline's. (templated)
    :param spark_binary: the spark-submit command; default as described above.
    :param spark_submit_kwargs: further ``SparkSubmitHook`` arguments.
    """

    template_fields: Sequence[str] = ("config_path", "checkpoint_id", "conf", "env_vars")
    template_fields_renderers = {"conf": "json", "env_vars": "json"}
    ui_color = "#fff1e0"

    def __init__(
        self,
        *,
        config_path: str,
        checkpoint_id: int | str | list[int],
        conn_id: str = "spark_default",
        conf: dict[str, Any] | None = None,
        env_vars: dict[str, Any] | None = None,
        spark_binary: str | None = None,
        spark_submit_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id
        self.conn_id = conn_id
        self.conf = conf
        self.env_vars = env_vars
        self.spark_binary = spark_binary
        self.spark_submit_kwargs = dict(spark_submit_kwargs or {})
        self._submitting: JobSubmitter | None = None

    def execute(self, context: Context) -> None:
        from pipeline_core.lake import LandingMode
        from pipeline_core.runs import parse_checkpoint_ids

        checkpoint_ids = parse_checkpoint_ids(self.checkpoint_id)
        if not checkpoint_ids:
            self.log.info("No checkpoint to land")
            return
        plan = run_plan(context)
        mode = LandingMode.REPLACE if plan.replaces_landed else LandingMode.APPEND
        hook = SluiceHook(config_path=self.config_path)
        spec = hook.landing_job(checkpoint_ids, landing_id=str(context["run_id"]), mode=mode)
        if spec is None:
            self.log.info("Nothing left to land of checkpoints %s", checkpoint_ids)
            return
        from pipeline_core.landing import SubmitSettings, landing_submitter

        url = hook.spark_connect_url(self.conn_id)
        settings = SubmitSettings(
            spark_connect=url,
            conn_id=self.conn_id,
            conf=self.conf or {},
            env_vars=self.env_vars or {},
            spark_binary=self.spark_binary,
            hook_arguments=self.spark_submit_kwargs,
        )
        submitter = landing_submitter(spec, settings, logger=self.log)
        where = "in one Spark application" if url is None else "on Spark Connect"
        self.log.info(
            "Landing checkpoints %s %s (%s): %s",
            checkpoint_ids,
            where,
            mode.value,
            submitter.command_line(spec.application),
        )
        self._submitting = submitter
        try:
            submitter.submit(spec.application)
        finally:
            self._submitting = None

    def on_kill(self) -> None:
        if self._submitting is not None:
            self._submitting.on_kill()


class CommitCheckpointOperator(BaseOperator):
    """Commit landed checkpoints and return what landed.

    Returns (XCom ``return_value``) ``pipeline_core.runs.commit_summary`` of them: for one
    checkpoint ``{"checkpoint_id", "checkpoint_ids", "lines", "bytes", "rows", "rejects",
    "landing"}``; for a list of them (``spark_only`` and backfill runs) ``checkpoint_id`` is
    ``None``, the counts are totals over the list and ``checkpoints`` holds each one's
    summary; an empty list commits nothing and returns zeros.

    The same summary, with the ``lake`` root, is the ``extra`` of the asset events of the
    task's ``outlets`` (the pipeline's lake asset), so DAGs scheduled on the asset see what
    landed. An outlet partitioned by data interval
    (``sluice_airflow.pipeline_configs.lake_interval_asset``) also gets one partition key per
    data interval the committed checkpoints belong to (``pipeline_core.runs.interval_keys``),
    so partition-aware DAGs run once per interval.

    Airflow 3.3 gives a running task no way to set its DAG run's note (the Task SDK's
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
        from pipeline_core.runs import (
            commit_summary,
            interval_keys,
            names_one_checkpoint,
            parse_checkpoint_ids,
        )

        hook = SluiceHook(config_path=self.config_path)
        checkpoint_ids = parse_checkpoint_ids(self.checkpoint_id)
        committed = hook.operations.commit(checkpoint_ids) if checkpoint_ids else []
        summary = commit_summary(committed, single=names_one_checkpoint(self.checkpoint_id))
        self.log.info("Committed: %s", run_note(summary))
        partitions = interval_keys(committed, _data_interval(context))
        self._describe_asset_events(context, hook, summary, partitions)
        return summary

    def _describe_asset_events(
        self, context: Context, hook: SluiceHook, summary: dict[str, Any], partitions: list[str]
    ) -> None:
        from sluice_airflow.pipeline_configs import INTERVAL_PARTITIONED

        assets = [outlet for outlet in self.outlets if isinstance(outlet, Asset)]
        if not assets:
            return
        extra = {key: value for key, value in summary.items() if key != "checkpoints"}
        from pipeline_core.config import mask_url_passwords

        extra["lake"] = mask_url_passwords(str(hook.operations.config.lake_warehouse))
        events = context["outlet_events"]
        for asset in assets:
            events[asset].extra.update(extra)
            partitioned = (asset.extra or {}).get("partitioned_by") == INTERVAL_PARTITIONED
            if partitioned and partitions:
                events[asset].add_partitions(partitions)


def run_note(summary: Mapping[str, Any]) -> str:
    """One line for a DAG run's note from a commit summary (``pipeline_core.runs.run_note``)."""
    from pipeline_core.runs import run_note as note

    return note(summary)


def _data_interval(context: Context) -> tuple[datetime, datetime] | None:
    start = context.get("data_interval_start")
    end = context.get("data_interval_end")
    if start is None or end is None:
        return None
    return start, end
