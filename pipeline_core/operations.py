"""PipelineOperations: the one facade over a pipeline that the CLI and Airflow both call.

It names the role services of one pipeline and hands each call of a run to its owner; the
rarer calls go to the service itself (``pipeline.retention.maintain()``):

    context      PipelineContext: the config (with the caller's defaults), the metastore
    checkpoints  PipelineCheckpoints: checkpoint views and commands, collecting once
    landing      PipelineLanding (landing/): the landing plan, the Spark job, the commit
    retention    PipelineRetention (lake/): staging and metastore retention, maintenance

The status (``sluice status``, ``report``) is ``pipeline_core.state``'s. Every call opens what
it needs and closes it again: an instance is cheap to create, in an Airflow task too (no I/O
in an operator's ``__init__``). A block of calls holds one metastore::

    with open_pipeline("pipeline.yaml") as pipeline:
        info = pipeline.checkpoint(7)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline_core._landing_mode import LandingMode
from pipeline_core._pipeline_checkpoints import PipelineCheckpoints
from pipeline_core._pipeline_context import PipelineContext
from pipeline_core._pipeline_views import CheckpointInfo, CollectReport
from pipeline_core._stop_request import StopRequest
from pipeline_core.config import PipelineConfig
from pipeline_core.landing import LandingProgress, PipelineLanding, SparkJobSpec
from pipeline_core.metastore import CheckpointState

if TYPE_CHECKING:
    from pipeline_core.lake import PipelineRetention

__all__ = [
    "CheckpointInfo",
    "CheckpointState",
    "CollectReport",
    "LandingProgress",
    "PipelineOperations",
    "SparkJobSpec",
    "open_pipeline",
]


class PipelineOperations:
    """Operations on one pipeline, named by its config file; the options are
    :class:`PipelineContext`'s (metastore and lake defaults, host, whether to migrate)."""

    def __init__(
        self,
        config_path: str | Path,
        *,
        metastore_url: str | None = None,
        lake_dir: str | Path | None = None,
        host: str | None = None,
        migrate: bool = True,
    ) -> None:
        self.context = PipelineContext(
            config_path, metastore_url=metastore_url, lake_dir=lake_dir, host=host, migrate=migrate
        )
        self.checkpoints = PipelineCheckpoints(self.context)
        self.landing = PipelineLanding(
            self.context, self.checkpoints, lambda: self.retention.remove_committed_staging()
        )

    @property
    def retention(self) -> PipelineRetention:
        """Imported on first use: the lake's libraries are never a collector's."""
        from pipeline_core.lake import PipelineRetention

        return PipelineRetention(self.context)

    def __enter__(self) -> PipelineOperations:
        """Hold one metastore for the block. Raises MetastoreError when it cannot be opened."""
        self.context.hold()
        return self

    def __exit__(self, *exc: object) -> None:
        self.context.release()

    @property
    def config(self) -> PipelineConfig:
        """The validated config (read on first use). Raises ConfigError."""
        return self.context.config

    def request_checkpoint(
        self, run_id: str | None = None, data_interval: tuple[datetime, datetime] | None = None
    ) -> CheckpointInfo:
        return self.checkpoints.request(run_id, data_interval)

    def checkpoint(self, checkpoint_id: int) -> CheckpointInfo:
        return self.checkpoints.get(checkpoint_id)

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> tuple[str, ...]:
        return self.checkpoints.excuse_lapsed_hosts(checkpoint_id)

    def landable(self, checkpoint_id: int) -> CheckpointInfo:
        return self.checkpoints.landable(checkpoint_id)

    def checkpoints_in_interval(self, start: datetime, end: datetime) -> list[CheckpointInfo]:
        return self.checkpoints.in_interval(start, end)

    def pending_landings(self) -> list[CheckpointInfo]:  # sealed, not committed; oldest first
        return self.checkpoints.in_states(CheckpointState.SEALED)

    def worker_is_live(self) -> bool:
        return self.checkpoints.worker_is_live()

    def collect_once(self, stop: StopRequest | None = None) -> CollectReport:
        return self.checkpoints.collect_once(stop)

    def landing_job(
        self,
        checkpoint_ids: Sequence[int],
        landing_id: str,
        mode: LandingMode = LandingMode.APPEND,
        *,
        dry_run: bool = False,
    ) -> SparkJobSpec | None:
        return self.landing.job(checkpoint_ids, landing_id, mode, dry_run=dry_run)

    def land(
        self,
        checkpoint_ids: Sequence[int],
        *,
        landing_id: str | None = None,
        mode: LandingMode = LandingMode.APPEND,
        progress: LandingProgress | None = None,
        spark_connect: str | None = None,
    ) -> list[CheckpointInfo]:
        return self.landing.land(
            checkpoint_ids,
            landing_id=landing_id,
            mode=mode,
            progress=progress,
            spark_connect=spark_connect,
        )

    def commit(self, checkpoint_ids: Sequence[int]) -> list[CheckpointInfo]:
        return self.landing.commit(checkpoint_ids)


open_pipeline = PipelineOperations
"""``with open_pipeline(path, **options) as pipeline:`` one pipeline holding one metastore for
the block (opened on entering, closed on leaving)."""
