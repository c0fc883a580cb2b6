"""Helpers for testing pipelines: sample access logs with malformed lines and rotations.

Shipped with Sluice so users can test their own pipelines the way its suite does.
"""

from pipeline_core.testing._access_logs import (
    MALFORMED_SAMPLES,
    SampleWrite,
    access_line,
    access_lines,
    append_sample_access_logs,
)

__all__ = [
    "MALFORMED_SAMPLES",
    "SampleWrite",
    "access_line",
    "access_lines",
    "append_sample_access_logs",
]
