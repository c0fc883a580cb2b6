"""Repositories: one repository per record kind, all on one connection."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from pipeline_core.metastore._acker_trees import AckerTreeRepository
from pipeline_core.metastore._batches import BatchRepository
from pipeline_core.metastore._checkpoints import CheckpointRepository
from pipeline_core.metastore._files import FileRepository
from pipeline_core.metastore._leases import LeaseRepository
from pipeline_core.metastore._read_progress import ReadProgressRepository
from pipeline_core.metastore._sink_states import SinkStateRepository


@dataclass(frozen=True)
class Repositories:
    """Every repository on one connection: what one transaction (or one read-only view) reads
    and writes. The only modules that query the tables."""

    checkpoints: CheckpointRepository
    batches: BatchRepository
    files: FileRepository
    leases: LeaseRepository
    acker_trees: AckerTreeRepository
    sink_states: SinkStateRepository
    read_progress: ReadProgressRepository

    @classmethod
    def on(cls, connection: Connection) -> Repositories:
        return cls(
            checkpoints=CheckpointRepository(connection),
            batches=BatchRepository(connection),
            files=FileRepository(connection),
            leases=LeaseRepository(connection),
            acker_trees=AckerTreeRepository(connection),
            sink_states=SinkStateRepository(connection),
            read_progress=ReadProgressRepository(connection),
        )
