"""Pipeline configuration: one YAML file per pipeline, validated into typed objects.

Unknown keys are rejected; a bad file raises :class:`~pipeline_core.errors.ConfigError` naming
the file, the key and what was expected.
"""

from pipeline_core.config._loader import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.config._model import (
    CollectorConfig,
    HandoffConfig,
    LakeConfig,
    MetastoreConfig,
    PipelineConfig,
    SourceConfig,
    SourceFormat,
    StartPosition,
)

__all__ = [
    "METASTORE_URL_ENV",
    "CollectorConfig",
    "HandoffConfig",
    "LakeConfig",
    "MetastoreConfig",
    "PipelineConfig",
    "SourceConfig",
    "SourceFormat",
    "StartPosition",
    "load_pipeline_config",
]
