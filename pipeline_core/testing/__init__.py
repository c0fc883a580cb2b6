"""Helpers for testing pipelines: sample access logs with malformed lines and rotations,
reading back what a pipeline staged, a fake clock and stub sinks for sink groups, and bounded
waits for what another thread or process does.

Shipped with Sluice so users can test their own pipelines the way its suite does.
"""

from pipeline_core.testing._access_logs import (
    MALFORMED_SAMPLES,
    SampleWrite,
    access_line,
    access_lines,
    append_sample_access_logs,
)
from pipeline_core.testing._sinks import (
    BackoffSink,
    FailingSink,
    FakeClock,
    FlakySink,
    RecordingSink,
    SlowSink,
    StubSink,
    SwitchableSink,
)
from pipeline_core.testing._staging import StagedLine, staged_lines, staged_payloads, staging_folder
from pipeline_core.testing._waiting import holds_within, wait_until

__all__ = [
    "MALFORMED_SAMPLES",
    "BackoffSink",
    "FailingSink",
    "FakeClock",
    "FlakySink",
    "RecordingSink",
    "SampleWrite",
    "SlowSink",
    "StagedLine",
    "StubSink",
    "SwitchableSink",
    "access_line",
    "access_lines",
    "append_sample_access_logs",
    "holds_within",
    "staged_lines",
    "staged_payloads",
    "staging_folder",
    "wait_until",
]
