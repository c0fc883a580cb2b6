"""PipelineLanding: landing one pipeline's sealed checkpoints: the landing plan (what is left to
land, and a checkpoint whose staging is gone marked failed), the Spark job's submission
(spark-submit through the Spark provider's hook, or a Spark Connect server), and the commit
that checks what the lake tables hold against what was sealed."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from pipeline_core._landing_mode import LandingMode
from pipeline_core._pipeline_checkpoints import PipelineCheckpoints
from pipeline_core._pipeline_context import PipelineContext
from pipeline_core._pipeline_views import CheckpointInfo
from pipeline_core.errors import LandingError
from pipeline_core.landing._connect import JobSubmitter
from pipeline_core.landing._spec import LandingInput, SparkJobSpec, landing_job_spec
from pipeline_core.landing._submitters import SubmitSettings, landing_submitter
from pipeline_core.metastore import CheckpointFailedError, CheckpointState

LOCAL_MASTER = "local[*]"
"""The master of ``sluice land``'s spark-submit when Airflow knows no ``spark_default``."""
log = logging.getLogger(__name__)


class LandingProgress(Protocol):
    """What :meth:`PipelineLanding.land` tells as it goes (``sluice land`` prints it)."""

    def submitting(self, command: str) -> None:
        """spark-submit (or the job's driver on Spark Connect) starts now, with this command
        line (secrets masked)."""

    def spark_finished(self, seconds: float) -> None:
        """The job ended well after ``seconds``: the lake tables hold the landing."""

    def committing(self, checkpoint_ids: Sequence[int]) -> None:
        """The checkpoints are checked against the tables and committed now."""


class PipelineLanding:
    """Landing the checkpoints of the pipeline of ``context``; ``after_commit`` runs after
    each commit (retention: the staging of committed checkpoints past its hours)."""

    def __init__(
        self,
        context: PipelineContext,
        checkpoints: PipelineCheckpoints,
        after_commit: Callable[[], object] = lambda: None,
    ) -> None:
        self._context = context
        self._checkpoints = checkpoints
        self._after_commit = after_commit

    def job(
        self,
        checkpoint_ids: Sequence[int],
        landing_id: str,
        mode: LandingMode = LandingMode.APPEND,
        *,
        dry_run: bool = False,
    ) -> SparkJobSpec | None:
        """The spark-submit spec of one job landing ``checkpoint_ids`` into the lake tables, or
        None when none of them is left to land.

        A sealed checkpoint one of whose recorded batches is not in staging any more can never
        be landed: it is marked FAILED with that error (DAG runs waiting for it fail with it). A
        committed one whose staging was removed (``handoff.retain_hours``) is left out with a
        warning: its rows stay in the tables as they are. An empty one (no line sealed: a run
        of an idle schedule) is left out too: the tables hold nothing of it, so a commit
        needs no Spark application for it.

        ``dry_run``: change nothing (no checkpoint marked FAILED, no archive of the job
        written): the spec says what a landing would submit.

        Raises:
            CheckpointFailedError: one is FAILED, or was just marked so.
            CheckpointError: one is unknown, of another pipeline, or not sealed yet.
        """
        config = self._context.config
        inputs = []
        with self._context.metastore() as metastore:  # one for every look and mark
            for checkpoint_id in dict.fromkeys(checkpoint_ids):
                info = self._checkpoints.landable(checkpoint_id)
                missing = config.staging_area.missing_batches(checkpoint_id, info.hosts)
                if missing is None:
                    if info.line_count or info.byte_count:
                        inputs.append(LandingInput(checkpoint_id, info.hosts))
                elif info.state is CheckpointState.COMMITTED:
                    log.warning(
                        "checkpoint %d is not landed again: %s; its rows stay in the lake as "
                        "they are",
                        checkpoint_id,
                        missing,
                    )
                else:
                    if not dry_run:
                        metastore.transitions.fail_checkpoint(checkpoint_id, missing)
                        log.error("checkpoint %d failed: %s", checkpoint_id, missing)
                    raise CheckpointFailedError(checkpoint_id, missing)
        if not inputs:
            return None
        return landing_job_spec(config, inputs, landing_id, mode, write_archive=not dry_run)

    def land(
        self,
        checkpoint_ids: Sequence[int],
        *,
        landing_id: str | None = None,
        mode: LandingMode = LandingMode.APPEND,
        progress: LandingProgress | None = None,
        spark_connect: str | None = None,
    ) -> list[CheckpointInfo]:
        """Land ``checkpoint_ids`` in one Spark job (the provider's SparkSubmitHook, as the DAG
        does; with ``spark_connect``, an ``sc://`` URL, on that Spark Connect server) and commit
        them, telling ``progress`` each phase. An interrupt (``KeyboardInterrupt``) while Spark
        runs kills the job and is raised again: none of the checkpoints is committed then.

        Raises:
            LandingError: the Spark job failed or what the tables hold does not add up.
        """
        ids = list(dict.fromkeys(checkpoint_ids))
        spec = self.job(ids, landing_id or f"sluice-land-{uuid.uuid4().hex}", mode)
        if spec is not None:
            hook = _submitter(spec, spark_connect)
            if progress is not None:
                progress.submitting(hook.command_line(spec.application))
            started = time.monotonic()
            try:
                hook.submit(spec.application)
            except KeyboardInterrupt:
                hook.on_kill()  # Spark stops with us: nothing of these checkpoints is committed
                raise
            except Exception as exc:
                raise LandingError(f"landing checkpoints {ids} failed: {exc}") from exc
            if progress is not None:
                progress.spark_finished(time.monotonic() - started)
        if progress is not None:
            progress.committing(ids)
        return self.commit(ids)

    @staticmethod
    def command(spec: SparkJobSpec, spark_connect: str | None = None) -> str:
        """The command line :meth:`land` would run for ``spec`` (secrets masked): spark-submit,
        or with ``spark_connect`` the job's driver (the URL goes in its environment). The
        metastore URL is never on spark-submit's command line (``SparkSubmitJob``)."""
        return _submitter(spec, spark_connect).command_line(spec.application)

    def commit(self, checkpoint_ids: Sequence[int]) -> list[CheckpointInfo]:
        """Mark landed checkpoints committed, with what the lake tables hold of each (rows per
        table, rejects per reason, the tables' snapshots, the lines it sealed as
        ``input_lines``, and the events they hold as ``input_events`` where multiline events
        make them fewer).

        Raises:
            LandingError: the tables hold another number of rows + rejects than a checkpoint
                sealed events (it was not landed, or only into some tables). A row is an event:
                a line, or the lines of a multiline event.
        """
        config = self._context.config
        ids = list(dict.fromkeys(checkpoint_ids))
        with self._context.metastore():
            infos = self._checkpoints.views([self._checkpoints.record(i) for i in ids])
        sources = [source.name for source in config.sources]
        # The lake (Iceberg, Arrow) is imported where it is read: a collecting process never is.
        from pipeline_core.lake import lake_location, landed_checkpoints, open_lake

        with open_lake(lake_location(config)) as lake:
            landed = landed_checkpoints(lake, sources, ids)
        for info in infos:
            found, sealed = landed[info.checkpoint_id], info.event_count
            if found.lines != sealed:
                counted = "" if sealed == info.line_count else f" ({sealed} events)"
                raise LandingError(
                    f"checkpoint {info.checkpoint_id} sealed {info.line_count} lines{counted} but "
                    f"the lake tables hold {sum(found.rows.values())} rows and "
                    f"{sum(found.rejects.values())} rejects of it"
                )
        with self._context.metastore() as metastore:
            records = []
            for info in infos:
                summary = {**landed[info.checkpoint_id].to_json(), "input_lines": info.line_count}
                if info.event_count != info.line_count:
                    summary["input_events"] = info.event_count
                records.append(metastore.commit_checkpoint(info.checkpoint_id, summary))
            committed = self._checkpoints.views(records)
        self._after_commit()
        return committed


def _submitter(spec: SparkJobSpec, spark_connect: str | None) -> JobSubmitter:
    """``spec`` on the Spark Connect server at ``spark_connect``, else through the Spark
    provider's hook on ``spark_default`` (``local[*]`` when Airflow knows no such connection),
    with the spark-submit of this environment."""
    settings = SubmitSettings(spark_connect=spark_connect, default_master=LOCAL_MASTER)
    return landing_submitter(spec, settings, logger=log)
