"""Sinks and sink groups: where the collector delivers lines, with Flume's delivery semantics.

A pipeline has one or more sink groups. Each group is consumed from the collector's ring by one
``BatchEventProcessor``; at the end of every ring batch the group puts the batch in its
``BatchChannel`` and its ``SinkRunner`` polls the group's ``SinkProcessor`` until a sink has
taken it::

    ring --> BatchEventProcessor --> BatchChannel --> SinkProcessor.process() --> Sink.process()
                 (one per group)       (the batch)     default | failover |        handoff, http,
                                                       load_balance              sql, file, ...

``Sink.process()`` returns ``Status.READY`` (delivered) or ``Status.BACKOFF`` (not now) and
raises on failure; a processor raises ``EventDeliveryException`` when every sink failed, and
the ring batch is then rewound by the group's ``BatchRewindStrategy``.

The handoff sink stages lines as Parquet part files and seals them, at each checkpoint barrier,
into an immutable batch folder that the Spark landing job reads.
"""

from pipeline_core.errors import EventDeliveryException, SinkRejectedError
from pipeline_core.sinks._batch import DeliveryBatch, LogEvent, event_id
from pipeline_core.sinks._channel import BatchChannel, ChannelFullError, Transaction
from pipeline_core.sinks._clock import SYSTEM_CLOCK, Clock, SystemClock
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
from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._sink import BatchSink, Sink
from pipeline_core.sinks._sink_state import (
    HEALTHY,
    InMemorySinkStateStore,
    SinkHealth,
    SinkStateStore,
)
from pipeline_core.sinks._status import Status

__all__ = [
    "HANDOFF_SCHEMA",
    "HEALTHY",
    "MANIFEST_NAME",
    "SYSTEM_CLOCK",
    "Barrier",
    "BatchChannel",
    "BatchSink",
    "ChannelFullError",
    "Clock",
    "DeliveryBatch",
    "EventDeliveryException",
    "HandoffWriter",
    "InMemorySinkStateStore",
    "LogEvent",
    "ManifestRange",
    "PartFile",
    "SealedBatch",
    "Sink",
    "SinkHealth",
    "SinkProcessor",
    "SinkRejectedError",
    "SinkStateStore",
    "Status",
    "SystemClock",
    "Transaction",
    "checkpoint_dir",
    "event_id",
    "lines_table",
]
