"""Sinks: where the collector delivers lines.

The handoff sink stages lines as Parquet part files and seals them, at each checkpoint barrier,
into an immutable batch folder that the Spark landing job reads.
"""

from pipeline_core.sinks._handoff import (
    MANIFEST_NAME,
    Barrier,
    HandoffWriter,
    ManifestRange,
    PartFile,
    SealedBatch,
    checkpoint_dir,
)
from pipeline_core.sinks._lines import HANDOFF_SCHEMA, lines_table

__all__ = [
    "HANDOFF_SCHEMA",
    "MANIFEST_NAME",
    "Barrier",
    "HandoffWriter",
    "ManifestRange",
    "PartFile",
    "SealedBatch",
    "checkpoint_dir",
    "lines_table",
]
