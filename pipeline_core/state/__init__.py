"""A read-only snapshot of each pipeline, for people: what is left to read, what was sealed.

For every pipeline config of ``$SLUICE_PIPELINES_DIR`` a :class:`PipelineSnapshot` holds the
tracked files with the bytes not yet covered by a sealed batch, the newest checkpoints with
their batches (and, when a lookup is given, the Airflow DAG run that requested each one), the
sink groups with each sink's stored penalty/backoff state, the collector leases, and what each
collector host read, and had not read yet, over the last day (samples it stores)::

    pipelines dir ─► config ─┬─► metastore rows (SELECT only) ─────────────┐
                             ├─► files on disk (stat, first bytes) ─────────┤
                             └─► running collector's metrics file (fresh) ──┼─► PipelineSnapshot
    DagRunLookup (optional: Airflow's dag_run rows by run_id) ──────────────┘

Read-only means read-only: the snapshot reads the metastore through its read-only view
(:func:`pipeline_core.metastore.open_view`: SELECTs only, one connection outside any pool); it
never migrates a schema and never creates a metastore that does not exist yet (a pipeline that
never ran shows no state and says so).
What only a running collector knows (stage queue depths against their watermarks, read
offsets, trees in flight now) comes from the metrics file it rewrites every few seconds while
that report is fresh, and is otherwise reported as not available, never guessed; the acker
trees it saved at its last checkpoint or time slice come from the metastore.

Every model is a frozen pydantic model; ``to_dict()`` gives its JSON form.

The status ``sluice status`` and ``sluice report`` show (:func:`pipeline_status`,
:func:`newest_checkpoints`) is read the same way, through a view of the metastore the command
holds (``PipelineContext.view``), which must exist and be migrated.
"""

from pipeline_core.state._files import file_snapshots
from pipeline_core.state._models import (
    AckerTreesSnapshot,
    BatchSnapshot,
    CheckpointSnapshot,
    DagRunLookup,
    DagRunSnapshot,
    FileSnapshot,
    FileStatus,
    LeaseSnapshot,
    LiveCollectorSnapshot,
    PipelineSnapshot,
    PipelineSummary,
    ReadProgressSnapshot,
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
from pipeline_core.state._progress import MAX_PROGRESS_POINTS
from pipeline_core.state._snapshot import (
    ACKER_TREES_NOT_STORED,
    DEFAULT_PROGRESS_WINDOW,
    QUEUE_DEPTHS_NOT_REPORTED,
    READ_PROGRESS_NOT_STORED,
    checkpoint_of_run,
    take_snapshot,
    take_snapshots,
)
from pipeline_core.state._status import PipelineStatus, newest_checkpoints, pipeline_status

__all__ = [
    "ACKER_TREES_NOT_STORED",
    "DAG_ID_PREFIX",
    "DEFAULT_PROGRESS_WINDOW",
    "MAX_PROGRESS_POINTS",
    "PIPELINES_DIR_ENV",
    "QUEUE_DEPTHS_NOT_REPORTED",
    "READ_PROGRESS_NOT_STORED",
    "AckerTreesSnapshot",
    "BatchSnapshot",
    "CheckpointSnapshot",
    "DagRunLookup",
    "DagRunSnapshot",
    "FileSnapshot",
    "FileStatus",
    "LeaseSnapshot",
    "LiveCollectorSnapshot",
    "PipelineSnapshot",
    "PipelineStatus",
    "PipelineSummary",
    "ReadProgressSnapshot",
    "SinkGroupSnapshot",
    "SinkSnapshot",
    "StageQueueSnapshot",
    "checkpoint_of_run",
    "file_snapshots",
    "find_pipeline",
    "newest_checkpoints",
    "pipeline_configs",
    "pipeline_name",
    "pipeline_status",
    "pipelines_dir",
    "take_snapshot",
    "take_snapshots",
]
