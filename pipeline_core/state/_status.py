"""A pipeline's status on this host, what ``sluice status`` and ``sluice report`` show: its
files with the bytes no sealed batch covers yet, its newest checkpoints, its collector lease.

Read through a :class:`~pipeline_core.metastore.MetastoreView` the caller opens (``sluice``
holds one metastore for its command: ``PipelineContext.view``), so nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline_core._pipeline_views import CheckpointInfo, checkpoint_views
from pipeline_core.config import PipelineConfig
from pipeline_core.metastore import MetastoreView
from pipeline_core.state._files import file_snapshots
from pipeline_core.state._models import FileSnapshot


@dataclass(frozen=True)
class PipelineStatus:
    """Files and what is left to read of them, checkpoints, who holds the collector lease."""

    pipeline: str
    host: str
    """This host: the collector host of the config."""
    files: tuple[FileSnapshot, ...]
    """This host's tracked files, then the files its sources match that are not tracked yet."""
    checkpoints: tuple[CheckpointInfo, ...]
    """The newest, oldest first."""
    lease_holder: str | None
    """The holder of this host's unexpired lease, if any."""


def newest_checkpoints(
    config: PipelineConfig, view: MetastoreView, limit: int = 20
) -> list[CheckpointInfo]:
    """The pipeline's newest ``limit`` checkpoints, oldest first, with their batches (read in
    one query)."""
    records = view.newest_checkpoints(config.name, limit)[::-1]
    batches = view.batches([record.checkpoint_id for record in records])
    return checkpoint_views(records, batches, config.staging_area)


def pipeline_status(config: PipelineConfig, view: MetastoreView, limit: int = 20) -> PipelineStatus:
    """The pipeline on this host: its files, its newest ``limit`` checkpoints, its lease."""
    host = config.collector.host
    files = {host: view.files(config.name, host).get(host, [])}
    return PipelineStatus(
        pipeline=config.name,
        host=host,
        files=tuple(file_snapshots(config, files)),
        checkpoints=tuple(newest_checkpoints(config, view, limit)),
        lease_holder=view.lease_holder(config.name, host),
    )
