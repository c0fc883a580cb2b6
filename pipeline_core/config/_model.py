"""Typed pipeline configuration. Every model rejects unknown keys."""

from __future__ import annotations

import socket
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceFormat(StrEnum):
    """How the Spark job parses a source's lines."""

    NGINX_COMBINED = "nginx_combined"
    JSON_LINES = "json_lines"
    RAW = "raw"


class StartPosition(StrEnum):
    """Where reading starts in a file first seen by a pipeline."""

    BEGINNING = "beginning"
    END = "end"


class SourceConfig(_Strict):
    """One group of files read alike."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] = "default"
    paths: Annotated[list[str], Field(min_length=1)]
    """Glob patterns (``**`` allowed); relative ones resolve against the config's folder."""
    exclude: list[str] = []
    """Glob patterns of paths never read (for example compressed rotations, ``*.gz``)."""
    format: SourceFormat
    time_field: str | None = None
    """For ``json_lines``: the field holding the event time (default ``time``)."""
    start_at: StartPosition = StartPosition.BEGINNING


class HandoffConfig(_Strict):
    """The handoff sink: where sealed batches are staged for Spark."""

    staging_dir: Path | None = None
    """Default: ``<data_dir>/staging``."""
    max_part_bytes: Annotated[int, Field(gt=0)] = 128 * 1024 * 1024
    """A part file is closed and a new one started past this many line bytes."""
    row_group_bytes: Annotated[int, Field(gt=0)] = 16 * 1024 * 1024


class LakeConfig(_Strict):
    path: Path | None = None
    """Root of the lake tables. Default: ``<data_dir>/lake``."""


class MetastoreConfig(_Strict):
    url: str | None = None
    """SQLAlchemy URL. Default: SQLite file ``<data_dir>/sluice.db``. The environment variable
    ``SLUICE_METASTORE_URL`` overrides it."""


class CollectorConfig(_Strict):
    """Tuning of the collector. Defaults follow Logtail's."""

    host: str = Field(default_factory=socket.gethostname)
    read_slice_ms: Annotated[int, Field(gt=0)] = 25
    read_chunk_bytes: Annotated[int, Field(ge=4096)] = 1024 * 1024
    max_line_bytes: Annotated[int, Field(ge=1024)] = 1024 * 1024
    signature_bytes: Annotated[int, Field(ge=16, le=65536)] = 1024
    ring_size: Annotated[int, Field(ge=2)] = 256
    discovery_interval_s: Annotated[float, Field(gt=0)] = 1.0
    lease_seconds: Annotated[float, Field(gt=0)] = 60.0
    rotated_grace_s: Annotated[float, Field(ge=0)] = 5.0
    """While tailing, how long a file renamed away or deleted is still watched for appends
    after its end is reached (``--once`` runs finish it at its end)."""

    @field_validator("ring_size")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("must be a power of two")
        return value


class PipelineConfig(_Strict):
    """A pipeline: its sources, where batches are staged, the lake, the metastore, the schedule.

    ``config_path`` is the file the config was read from (relative paths resolve against its
    folder); it is set by the loader, not written in the file.
    """

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    sources: Annotated[list[SourceConfig], Field(min_length=1)]
    data_dir: Path = Path("data")
    handoff: HandoffConfig = HandoffConfig()
    lake: LakeConfig = LakeConfig()
    metastore: MetastoreConfig = MetastoreConfig()
    collector: CollectorConfig = CollectorConfig()
    schedule: str | None = "*/5 * * * *"
    """Cron expression or Airflow preset of the pipeline's DAG; null for manual runs only."""
    config_path: Path | None = Field(default=None, exclude=True)

    @field_validator("sources")
    @classmethod
    def _unique_source_names(cls, sources: list[SourceConfig]) -> list[SourceConfig]:
        names = [source.name for source in sources]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique, repeated: {', '.join(duplicated)}")
        return sources

    @property
    def staging_dir(self) -> Path:
        return self.handoff.staging_dir or self.data_dir / "staging"

    @property
    def lake_dir(self) -> Path:
        return self.lake.path or self.data_dir / "lake"

    @property
    def metastore_url(self) -> str:
        return self.metastore.url or f"sqlite:///{self.data_dir / 'sluice.db'}"

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(name)
