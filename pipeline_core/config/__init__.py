"""Pipeline configuration: one YAML file per pipeline, validated into typed objects.

Unknown keys are rejected; a bad file raises :class:`~pipeline_core.errors.ConfigError` naming
the file, the key and what was expected.
"""

from pipeline_core.config._loader import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.config._model import (
    DEFAULT_SINK,
    CollectorConfig,
    HandoffConfig,
    LakeConfig,
    MetastoreConfig,
    PipelineConfig,
    SinkConfig,
    SourceConfig,
    SourceFormat,
    StartPosition,
)
from pipeline_core.config._sink_groups import (
    HandoffSinkConfig,
    ProcessorKind,
    RewindKind,
    SelectorKind,
    SinkGroupConfig,
)
from pipeline_core.config._sinks import (
    FileSinkConfig,
    HttpFormat,
    HttpSinkConfig,
    NullSinkConfig,
    SqlSinkConfig,
    StdoutSinkConfig,
)
from pipeline_core.config._worker import HOST_PATTERN, WorkerConfig

__all__ = [
    "DEFAULT_SINK",
    "HOST_PATTERN",
    "METASTORE_URL_ENV",
    "CollectorConfig",
    "FileSinkConfig",
    "HandoffConfig",
    "HandoffSinkConfig",
    "HttpFormat",
    "HttpSinkConfig",
    "LakeConfig",
    "MetastoreConfig",
    "NullSinkConfig",
    "PipelineConfig",
    "ProcessorKind",
    "RewindKind",
    "SelectorKind",
    "SinkConfig",
    "SinkGroupConfig",
    "SourceConfig",
    "SourceFormat",
    "SqlSinkConfig",
    "StartPosition",
    "StdoutSinkConfig",
    "WorkerConfig",
    "load_pipeline_config",
]
