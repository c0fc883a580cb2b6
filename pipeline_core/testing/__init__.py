"""Helpers for testing pipelines: sample access logs with malformed lines and rotations, and
reading back what a pipeline staged.

Shipped with Sluice so users can test their own pipelines the way its suite does.
"""

from pipeline_core.testing._access_logs import (
    MALFORMED_SAMPLES,
    SampleWrite,
    access_line,
    access_lines,
    append_sample_access_logs,
)
from pipeline_core.testing._staging import StagedLine, staged_lines, staged_payloads, staging_folder

__all__ = [
    "MALFORMED_SAMPLES",
    "SampleWrite",
    "StagedLine",
    "access_line",
    "access_lines",
    "append_sample_access_logs",
    "staged_lines",
    "staged_payloads",
    "staging_folder",
]
