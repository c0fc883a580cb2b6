"""Pipeline configuration: one YAML file per pipeline, validated into typed objects.

Unknown keys are rejected; a bad file raises :class:`~pipeline_core.errors.ConfigError` naming
the file, the key and what was expected. ``${VAR}`` and ``${VAR:-default}`` in string values
come from the environment (``$$`` is a ``$``); whatever is printed about a config goes through
:meth:`PipelineConfig.masked`, which hides the values of secret variables and URL passwords.
"""

from pipeline_core._metastore_pooling import METASTORE_POOLING_ENV, MetastorePooling
from pipeline_core.config._collector import CollectorConfig
from pipeline_core.config._description import describe_pipeline_config
from pipeline_core.config._loader import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.config._multiline import MultilineConfig, MultilinePreset
from pipeline_core.config._pipeline import DEFAULT_SINK, PipelineConfig, SinkConfig
from pipeline_core.config._secrets import (
    MASK,
    SECRET_NAME_PARTS,
    SecretMask,
    looks_secret,
    mask_url_passwords,
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
from pipeline_core.config._source import SourceConfig, StartPosition
from pipeline_core.config._storage import (
    HandoffConfig,
    LakeConfig,
    MetastoreConfig,
    StagingAccess,
)
from pipeline_core.config._worker import HOST_PATTERN, WorkerConfig
from pipeline_core.formats import SourceFormat

__all__ = [
    "DEFAULT_SINK",
    "HOST_PATTERN",
    "MASK",
    "METASTORE_POOLING_ENV",
    "METASTORE_URL_ENV",
    "SECRET_NAME_PARTS",
    "CollectorConfig",
    "FileSinkConfig",
    "HandoffConfig",
    "HandoffSinkConfig",
    "HttpFormat",
    "HttpSinkConfig",
    "LakeConfig",
    "MetastoreConfig",
    "MetastorePooling",
    "MultilineConfig",
    "MultilinePreset",
    "NullSinkConfig",
    "PipelineConfig",
    "ProcessorKind",
    "RewindKind",
    "SecretMask",
    "SelectorKind",
    "SinkConfig",
    "SinkGroupConfig",
    "SourceConfig",
    "SourceFormat",
    "SqlSinkConfig",
    "StagingAccess",
    "StartPosition",
    "StdoutSinkConfig",
    "WorkerConfig",
    "describe_pipeline_config",
    "load_pipeline_config",
    "looks_secret",
    "mask_url_passwords",
]
