"""A read-only snapshot of each pipeline, for people: what is left to read, what was sealed.

For every pipeline config of ``$SLUICE_PIPELINES_DIR`` a :class:`PipelineSnapshot` holds the
tracked files with the bytes not yet covered by a sealed batch, the newest checkpoints with
their batches (and, when a lookup is given, the Airflow DAG run that requested each one), the
sink groups with each sink's stored penalty/backoff state, and the collector leases::

    pipelines dir ──► config ──► metastore rows (SELECT only) ──┐
                         └─────► files on disk (stat, first bytes) ─┼─► PipelineSnapshot
    DagRunLookup (optional: Airflow's dag_run rows by run_id) ──────┘

Read-only means read-only: the snapshot is built with plain SELECTs over the metastore's tables
(:mod:`pipeline_core.metastore._schema`); it never migrates a schema and never creates a
metastore that does not exist yet (a pipeline that never ran shows no state and says so).
What is not persisted is reported as not available, never guessed: stage queue depths are only
known inside a running collector (pass its ``Collector.stage_stats()`` to report them), and
in-flight acker trees are shown as the collector last saved them.

Every model is a frozen pydantic model; ``to_dict()`` gives its JSON form.
"""

from pipeline_core.state._models import (
    AckerTreesSnapshot,
    BatchSnapshot,
    CheckpointSnapshot,
    DagRunLookup,
    DagRunSnapshot,
    FileSnapshot,
    FileStatus,
    LeaseSnapshot,
    PipelineSnapshot,
    PipelineSummary,
    SinkGroupSnapshot,
    SinkSnapshot,
    StageQueueSnapshot,
)
from pipeline_core.state._pipelines import (
    DAG_ID_PREFIX,
    PIPELINES_DIR_ENV,
    find_pipeline,
    pipeline_configs,
    pipeline_name,
    pipelines_dir,
)
from pipeline_core.state._snapshot import (
    ACKER_TREES_NOT_STORED,
    QUEUE_DEPTHS_NOT_REPORTED,
    checkpoint_of_run,
    take_snapshot,
    take_snapshots,
)

__all__ = [
    "ACKER_TREES_NOT_STORED",
    "DAG_ID_PREFIX",
    "PIPELINES_DIR_ENV",
    "QUEUE_DEPTHS_NOT_REPORTED",
    "AckerTreesSnapshot",
    "BatchSnapshot",
    "CheckpointSnapshot",
    "DagRunLookup",
    "DagRunSnapshot",
    "FileSnapshot",
    "FileStatus",
    "LeaseSnapshot",
    "PipelineSnapshot",
    "PipelineSummary",
    "SinkGroupSnapshot",
    "SinkSnapshot",
    "StageQueueSnapshot",
    "checkpoint_of_run",
    "find_pipeline",
    "pipeline_configs",
    "pipeline_name",
    "pipelines_dir",
    "take_snapshot",
    "take_snapshots",
]
