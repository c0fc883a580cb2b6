"""The collector: one mailbox thread reading every pipeline's files, Logtail's stage queues, and
a ring per pipeline consumed by its sink groups.

Checkpoint requests arrive as max-priority mails; each becomes a barrier behind the last chunk
read, and once every sink group has passed it the batch sealed by the handoff sink is recorded,
with the files' offsets and the acker's in-flight trees, in one metastore transaction.
"""

from pipeline_core.collector._checkpoints import CheckpointCoordinator, SealedCheckpoint
from pipeline_core.collector._collector import Collector
from pipeline_core.collector._config_problems import (
    ConfigProblem,
    config_problems_file,
    read_config_problems,
)
from pipeline_core.collector._config_watch import ConfigChange, ConfigEvent, ConfigSource
from pipeline_core.collector._events import EventKind, PipelineEvent
from pipeline_core.collector._garbage import freeze_startup_objects
from pipeline_core.collector._lifecycle import (
    CollectorMode,
    IllegalPipelineTransitionError,
    PipelineState,
)
from pipeline_core.collector._metric_families import metrics_registry, prometheus_text
from pipeline_core.collector._metrics import (
    FileMetrics,
    PipelineMetrics,
    QueueMetrics,
    SinkGroupMetrics,
    UploadMetrics,
)
from pipeline_core.collector._metrics_export import MetricsExporter, metrics_file, read_metrics
from pipeline_core.collector._ops_server import ListenAddress, OpsServer
from pipeline_core.collector._readiness import (
    METASTORE_GRACE_SECONDS,
    HealthProbes,
    ProbeResult,
)
from pipeline_core.collector._results import AckerStats, CollectorResult, PipelineResult
from pipeline_core.collector._service import CollectorService
from pipeline_core.collector._session import CollectorSession, StopCause

__all__ = [
    "METASTORE_GRACE_SECONDS",
    "AckerStats",
    "CheckpointCoordinator",
    "Collector",
    "CollectorMode",
    "CollectorResult",
    "CollectorService",
    "CollectorSession",
    "ConfigChange",
    "ConfigEvent",
    "ConfigProblem",
    "ConfigSource",
    "EventKind",
    "FileMetrics",
    "HealthProbes",
    "IllegalPipelineTransitionError",
    "ListenAddress",
    "MetricsExporter",
    "OpsServer",
    "PipelineEvent",
    "PipelineMetrics",
    "PipelineResult",
    "PipelineState",
    "ProbeResult",
    "QueueMetrics",
    "SealedCheckpoint",
    "SinkGroupMetrics",
    "StopCause",
    "UploadMetrics",
    "config_problems_file",
    "freeze_startup_objects",
    "metrics_file",
    "metrics_registry",
    "prometheus_text",
    "read_config_problems",
    "read_metrics",
]
