"""SluiceHook: one pipeline's ``PipelineOperations``, opened on first use."""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING

from airflow.sdk import BaseHook

if TYPE_CHECKING:
    from pipeline_core.operations import (
        CheckpointInfo,
        CollectReport,
        PipelineOperations,
        SparkJobSpec,
    )


class SluiceHook(BaseHook):
    """Talk to one Sluice pipeline, named by its config file.

    A pipeline is configured by its YAML file, not by an Airflow connection: the file names the
    metastore, staging and lake. The hook does no I/O when it is created; the facade
    (``pipeline_core.operations.PipelineOperations``) is imported and built on the first call,
    so creating a hook at DAG-parse time or in an operator costs nothing.

    :param config_path: path of the pipeline's config file (``pipelines/<name>.yaml``).
    """

    hook_name = "Sluice pipeline"

    def __init__(self, *, config_path: str | os.PathLike[str], logger_name: str | None = None):
        super().__init__(logger_name=logger_name)
        self.config_path = os.fspath(config_path)
        self._operations: PipelineOperations | None = None

    def get_conn(self) -> PipelineOperations:
        """Return the pipeline's facade, creating it on first use."""
        if self._operations is None:
            # Imported here so parsing a DAG file never pays for pipeline_core's imports.
            from pipeline_core.operations import PipelineOperations

            self._operations = PipelineOperations(self.config_path)
        return self._operations

    @property
    def operations(self) -> PipelineOperations:
        return self.get_conn()

    def request_checkpoint(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        """Request a checkpoint; the same ``run_id`` always gets the same checkpoint."""
        return self.operations.request_checkpoint(run_id=run_id, data_interval=data_interval)

    def worker_is_live(self) -> bool:
        """True while a long-running collector holds the pipeline's lease on this host."""
        return self.operations.worker_is_live()

    def collect_once(self) -> CollectReport:
        """Collect every file to its current end in this process and seal pending checkpoints."""
        return self.operations.collect_once()

    def checkpoint(self, checkpoint_id: int) -> CheckpointInfo:
        return self.operations.checkpoint(checkpoint_id)

    def landing_job(self, checkpoint_id: int) -> SparkJobSpec:
        """The spark-submit spec that lands sealed checkpoint ``checkpoint_id``."""
        return self.operations.landing_job(checkpoint_id)

    def commit(self, checkpoint_id: int) -> CheckpointInfo:
        """Mark a landed checkpoint committed."""
        return self.operations.commit(checkpoint_id)

    def pending_landings(self) -> list[CheckpointInfo]:
        """Sealed checkpoints not yet committed, oldest first."""
        return self.operations.pending_landings()


def parse_checkpoint_id(value: int | str) -> int:
    """A checkpoint id from an operator argument, which a template renders as text.

    :raises ValueError: the value is not a positive integer (for example ``"None"``, rendered
        when the upstream XCom is missing).
    """
    try:
        checkpoint_id = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"checkpoint id must be a positive integer, got {value!r}") from None
    if checkpoint_id <= 0:
        raise ValueError(f"checkpoint id must be a positive integer, got {value!r}")
    return checkpoint_id
