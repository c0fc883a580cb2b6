"""The pipeline config's root: its sections, the sinks and sink groups, and the values
derived from them (where staging, the spool, the lake and the metastore are)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, PrivateAttr, field_validator, model_validator

from pipeline_core.config._base import NAME_PATTERN, _Strict
from pipeline_core.config._collector import CollectorConfig
from pipeline_core.config._secrets import SecretMask
from pipeline_core.config._sink_groups import HandoffSinkConfig, ProcessorKind, SinkGroupConfig
from pipeline_core.config._sinks import (
    FileSinkConfig,
    HttpSinkConfig,
    NullSinkConfig,
    SqlSinkConfig,
    StdoutSinkConfig,
)
from pipeline_core.config._source import SourceConfig
from pipeline_core.config._storage import HandoffConfig, LakeConfig, MetastoreConfig
from pipeline_core.config._worker import WorkerConfig
from pipeline_core.staging_contract import StagingArea
from pipeline_core.storage import StorageLocation

SinkConfig = Annotated[
    HandoffSinkConfig
    | HttpSinkConfig
    | SqlSinkConfig
    | FileSinkConfig
    | NullSinkConfig
    | StdoutSinkConfig,
    Field(discriminator="type"),
]
"""One sink's config; its ``type`` key chooses the model."""

DEFAULT_SINK = "lake"


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
    sinks: dict[str, SinkConfig] = {DEFAULT_SINK: HandoffSinkConfig()}
    """Named sinks; exactly one of type ``handoff`` (the batches the Spark job lands)."""
    sink_groups: list[SinkGroupConfig] | None = None
    """How the sinks are grouped. Omitted: each sink alone in a ``default`` group of its name."""
    priority: int = 0
    """Within each round of a collector serving several pipelines, higher priorities are read
    first; every pipeline is still read every round."""
    schedule: str | None = "*/5 * * * *"
    """Cron expression or Airflow preset of the pipeline's DAG; null for manual runs only."""
    worker: WorkerConfig = WorkerConfig()
    """Where the ``sluice_<name>_worker`` DAG runs its collectors (default: one task on
    Airflow's default queue)."""
    config_path: Path | None = Field(default=None, exclude=True)
    _secret_mask: SecretMask = PrivateAttr(default_factory=SecretMask)

    @field_validator("sources")
    @classmethod
    def _unique_source_names(cls, sources: list[SourceConfig]) -> list[SourceConfig]:
        names = [source.name for source in sources]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique, repeated: {', '.join(duplicated)}")
        return sources

    @model_validator(mode="after")
    def _events_fit_a_read(self) -> PipelineConfig:
        chunk = self.collector.read_chunk_bytes
        for number, source in enumerate(self.sources):
            if source.multiline is not None and source.multiline.max_bytes > chunk:
                raise ValueError(
                    f"sources.{number}.multiline.max_bytes ({source.multiline.max_bytes}) is "
                    f"over collector.read_chunk_bytes ({chunk}): an event must fit one read"
                )
        return self

    @model_validator(mode="after")
    def _sinks_and_groups_agree(self) -> PipelineConfig:
        handoffs = [n for n, c in self.sinks.items() if isinstance(c, HandoffSinkConfig)]
        if len(handoffs) != 1:
            raise ValueError(
                "sinks: a pipeline needs exactly one sink of type 'handoff' (the batches the "
                f"Spark job lands), found {len(handoffs)}"
                + (f": {', '.join(handoffs)}" if handoffs else "")
            )
        bad_names = [name for name in self.sinks if not re.match(NAME_PATTERN, name)]
        if bad_names:
            raise ValueError(f"sinks: invalid sink names {bad_names} (pattern {NAME_PATTERN})")
        groups = self.sink_groups_in_force
        group_names = [group.name for group in groups]
        if len(set(group_names)) != len(group_names):
            raise ValueError("sink_groups: group names must be unique")
        seen: dict[str, str] = {}
        for group in groups:
            for sink in group.sinks:
                if sink not in self.sinks:
                    raise ValueError(f"sink group {group.name!r} names an unknown sink {sink!r}")
                if sink in seen:
                    raise ValueError(
                        f"sink {sink!r} is in two sink groups: {seen[sink]!r} and {group.name!r}"
                    )
                seen[sink] = group.name
        unused = sorted(set(self.sinks) - set(seen))
        if unused:
            raise ValueError(f"sinks not in any sink group: {', '.join(unused)}")
        handoff_group = next(g for g in groups if handoffs[0] in g.sinks)
        if handoff_group.processor is not ProcessorKind.DEFAULT:
            raise ValueError(
                f"the handoff sink {handoffs[0]!r} must be alone in a 'default' group (every "
                f"line must reach the lake), not in {handoff_group.processor.value!r} group "
                f"{handoff_group.name!r}"
            )
        return self

    def masked(self, text: str) -> str:
        """``text`` (anything shown about this config: a value, a message) with the values of
        its secret variables (``${DB_PASSWORD}``...) and every URL's password replaced by
        ``***``."""
        return self._secret_mask(text)

    def with_secrets(self, mask: SecretMask) -> PipelineConfig:
        """A copy whose :meth:`masked` hides what ``mask`` hides (set by the loader)."""
        copy = self.model_copy()
        copy._secret_mask = mask
        return copy

    @property
    def sink_groups_in_force(self) -> list[SinkGroupConfig]:
        """``sink_groups``, or one ``default`` group per sink when it is omitted."""
        if self.sink_groups is not None:
            return self.sink_groups
        return [SinkGroupConfig(name=name, sinks=[name]) for name in self.sinks]

    @property
    def staging_location(self) -> StorageLocation:
        """Where sealed batches are staged (``handoff.staging``, ``handoff.staging_dir`` or
        ``<data_dir>/staging``)."""
        if self.handoff.staging is not None:
            return StorageLocation.parse(self.handoff.staging)
        return StorageLocation.parse(self.handoff.staging_dir or self.data_dir / "staging")

    @property
    def staging_area(self) -> StagingArea:
        """Where the pipeline's sealed checkpoints are (``staging_location``, then
        ``<pipeline>/<checkpoint:08d>``), and the spool they are sealed into first when
        staging is in an object store (``seal_dir``)."""
        location = self.staging_location
        return StagingArea(location, self.name, None if location.is_local else self.seal_dir)

    @property
    def staging_dir(self) -> Path:
        """The local staging folder.

        Raises:
            LocationError: staging is in an object store (``staging_location``).
        """
        return self.staging_location.local_path

    @property
    def seal_dir(self) -> Path:
        """Where the collector seals batches: the staging folder, or with staging in an
        object store the spool (``handoff.spool_dir``, default ``<data_dir>/spool``) they
        are uploaded from."""
        location = self.staging_location
        if location.is_local:
            return location.local_path
        return self.handoff.spool_dir or self.data_dir / "spool"

    @property
    def lake_location(self) -> StorageLocation:
        """Where the lake's tables are (``lake.warehouse``, ``lake.path`` or
        ``<data_dir>/lake``)."""
        if self.lake.warehouse is not None:
            return StorageLocation.parse(self.lake.warehouse)
        return StorageLocation.parse(self.lake.path or self.data_dir / "lake")

    @property
    def lake_dir(self) -> Path:
        """The local warehouse folder.

        Raises:
            LocationError: the lake is in an object store (``lake_location``).
        """
        return self.lake_location.local_path

    @property
    def lake_warehouse(self) -> str | Path:
        """The warehouse as the landing job and the catalog take it: the local folder, or
        the object store's URL."""
        location = self.lake_location
        return location.local_path if location.is_local else location.url

    @property
    def lake_namespace(self) -> str:
        return self.lake.namespace or self.name

    @property
    def metastore_url(self) -> str:
        return self.metastore.url or f"sqlite:///{self.data_dir / 'sluice.db'}"

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(name)
