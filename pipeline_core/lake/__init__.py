"""The lake: Apache Iceberg tables in a SQL catalog that lives in the metastore's database.

Each source of a pipeline lands into ``<namespace>.<source>`` and the lines that did not parse
into ``<namespace>._rejects`` (the namespace is ``lake.namespace``, by default the pipeline's
name). Table data and metadata are under the warehouse, ``lake.warehouse``: a folder or an
object store's URL (``s3://``, ``gs://``, ``abfs://``), read and written through its FileIO.

* :mod:`._schemas`: the declared schema per source format, partitioned by ``day(event_time)``.
* :mod:`._catalog`: :class:`LakeCatalog`, the catalog on the metastore's database; creates
  tables and adds the columns a declared schema gained.
* :mod:`._commits`: :func:`commit_files`, one atomic and idempotent commit of a landing's data
  files into a table (``LandingMode.APPEND`` or ``REPLACE``).
* :mod:`._reading`: what landed per checkpoint and a summary of the tables, read from them.
* :mod:`._maintenance`: compaction, snapshot expiry and orphan file removal.
* :mod:`._retention`: :class:`PipelineRetention`, what one pipeline keeps and for how long
  (its staging, its metastore rows) and its lake's maintenance (:func:`maintain_lake`).

The landing job (``spark_jobs``) imports the catalog, schemas and commits on its driver, so
those modules import nothing of the rest of ``pipeline_core`` but ``errors``, ``storage`` and
``_landing_mode`` (``_retention`` imports the metastore only where it uses it).
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import TYPE_CHECKING

from pipeline_core._landing_mode import LandingMode
from pipeline_core.lake._catalog import (
    CATALOG_NAME,
    LakeCatalog,
    LakeLocation,
    catalog_url,
    check_evolution,
    open_lake,
    store_properties,
    type_shape,
    warehouse_uri,
)
from pipeline_core.lake._commits import (
    CHECKPOINT_IDS_PROPERTY,
    LANDING_ID_PROPERTY,
    CommitOutcome,
    CommitResult,
    TableCommit,
    checkpoints_with_rows,
    commit_files,
)
from pipeline_core.lake._maintenance import (
    Compaction,
    MaintenanceReport,
    compact_table,
    expire_snapshots,
    files_per_day,
    remove_orphan_files,
)
from pipeline_core.lake._reading import (
    LakeSummary,
    LandedCheckpoint,
    landed_checkpoints,
    summarize_tables,
    table_names,
)
from pipeline_core.lake._retention import PipelineRetention
from pipeline_core.lake._schemas import (
    CHECKPOINT_COLUMN,
    MANAGED_PROPERTIES,
    MANIFESTS_BEFORE_MERGE,
    METADATA_VERSIONS_KEPT,
    REJECTS_SCHEMA,
    REJECTS_TABLE,
    TARGET_FILE_BYTES,
    partition_spec,
    source_schema,
    time_column,
)
from pipeline_core.storage import location_filesystem

if TYPE_CHECKING:
    from pipeline_core.config import PipelineConfig

__all__ = [
    "CATALOG_NAME",
    "CHECKPOINT_COLUMN",
    "CHECKPOINT_IDS_PROPERTY",
    "LANDING_ID_PROPERTY",
    "MANAGED_PROPERTIES",
    "MANIFESTS_BEFORE_MERGE",
    "METADATA_VERSIONS_KEPT",
    "REJECTS_SCHEMA",
    "REJECTS_TABLE",
    "TARGET_FILE_BYTES",
    "CommitOutcome",
    "CommitResult",
    "Compaction",
    "LakeCatalog",
    "LakeLocation",
    "LakeSummary",
    "LandedCheckpoint",
    "LandingMode",
    "MaintenanceReport",
    "PipelineRetention",
    "TableCommit",
    "catalog_url",
    "check_evolution",
    "checkpoints_with_rows",
    "commit_files",
    "compact_table",
    "expire_snapshots",
    "files_per_day",
    "lake_location",
    "landed_checkpoints",
    "location_filesystem",
    "maintain_lake",
    "open_lake",
    "partition_spec",
    "remove_orphan_files",
    "source_schema",
    "store_properties",
    "summarize_lake",
    "summarize_tables",
    "table_names",
    "time_column",
    "type_shape",
    "warehouse_uri",
]


def lake_location(config: PipelineConfig) -> LakeLocation:
    """Where the lake tables of ``config``'s pipeline are."""
    return LakeLocation(
        config.metastore_url,
        config.lake_warehouse,
        config.lake_namespace,
        config.metastore.pooling,
    )


def summarize_lake(config: PipelineConfig) -> LakeSummary:
    """What the pipeline's lake tables hold (see :func:`summarize_tables`)."""
    with open_lake(lake_location(config)) as lake:
        return summarize_tables(lake, [source.name for source in config.sources])


def maintain_lake(config: PipelineConfig, day: date | None = None) -> MaintenanceReport:
    """Compact, expire and clean every table of the pipeline.

    ``day``: compact only this day partition; by default every day before today (UTC) that
    has more than one data file.
    """
    report = MaintenanceReport()
    today = datetime.now(timezone.utc).date()
    with open_lake(lake_location(config)) as lake:
        for name in table_names({s.name: s.format.value for s in config.sources}):
            table = lake.load(name)
            if table is None:
                continue
            days = (
                [day]
                if day is not None
                else [
                    d
                    for d, files in files_per_day(table).items()
                    if d is not None and d < today and files > 1
                ]
            )
            for each in days:
                report.compactions.append(compact_table(table, each))
            report.expired_snapshots += expire_snapshots(table)
            report.orphan_files += remove_orphan_files(table)
    return report
