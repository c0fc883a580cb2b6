"""Helpers for testing pipelines: sample access logs with malformed lines and rotations,
distinct lines to append and a log writer rotating under a collector, tailing files without a
collector, checkpoints requested while one runs, reading back what a pipeline staged and what
landed (and whether every line landed exactly once), a fake clock and stub sinks for sink
groups, the production code's named fault points, and bounded waits for what another thread or
process does.

Shipped with Sluice so users can test their own pipelines the way its suite does.
"""

from pipeline_core._fault_points import FaultPoint
from pipeline_core.testing._access_logs import (
    MALFORMED_SAMPLES,
    SampleWrite,
    access_line,
    access_lines,
    append_sample_access_logs,
)
from pipeline_core.testing._checkpoint_requests import CheckpointRequests
from pipeline_core.testing._exactly_once import (
    ExactlyOnce,
    check_exactly_once,
    lake_table,
    nginx_lines,
)
from pipeline_core.testing._fault_hooks import at_fault_point, raising_at
from pipeline_core.testing._lake import table_rows
from pipeline_core.testing._lines import (
    ACCESS_LINES_END,
    UniqueAccessLines,
    append,
    append_bytes,
    lines,
    padded_lines,
)
from pipeline_core.testing._log_writer import WriterReport, write_logs
from pipeline_core.testing._reading import (
    MiB,
    Received,
    read_everything,
    read_framed,
    reader_of,
    source_of,
    tail_folder,
    watch,
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
    "ACCESS_LINES_END",
    "MALFORMED_SAMPLES",
    "BackoffSink",
    "CheckpointRequests",
    "ExactlyOnce",
    "FailingSink",
    "FakeClock",
    "FaultPoint",
    "FlakySink",
    "MiB",
    "Received",
    "RecordingSink",
    "SampleWrite",
    "SlowSink",
    "StagedLine",
    "StubSink",
    "SwitchableSink",
    "UniqueAccessLines",
    "WriterReport",
    "access_line",
    "access_lines",
    "append",
    "append_bytes",
    "append_sample_access_logs",
    "at_fault_point",
    "check_exactly_once",
    "holds_within",
    "lake_table",
    "lines",
    "nginx_lines",
    "padded_lines",
    "raising_at",
    "read_everything",
    "read_framed",
    "reader_of",
    "source_of",
    "staged_lines",
    "staged_payloads",
    "staging_folder",
    "table_rows",
    "tail_folder",
    "wait_until",
    "watch",
    "write_logs",
]
