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

The handoff sink stages lines as raw part files and seals them, at each checkpoint barrier,
into an immutable batch folder that the Spark landing job reads; the folder's layout and its
manifest are ``pipeline_core.staging_contract``'s. With staging in an object store the batch
is sealed into a local spool (its bytes counted by a ``SpoolBudget``) and then uploaded by
``upload_sealed_batch``: parts first, each checked against the manifest's CRC-32, the manifest
last.
"""

from pipeline_core.config._sinks import HttpFormat
from pipeline_core.errors import EventDeliveryException, SinkRejectedError
from pipeline_core.sinks._batch import DeliveryBatch, LogEvent, event_id
from pipeline_core.sinks._batch_upload import (
    ReadBack,
    UploadedBatch,
    upload_sealed_batch,
    verify_local_batch,
)
from pipeline_core.sinks._channel import BatchChannel, ChannelFullError, Transaction
from pipeline_core.sinks._clock import SYSTEM_CLOCK, Clock, SystemClock
from pipeline_core.sinks._default_processor import DefaultSinkProcessor
from pipeline_core.sinks._factory import build_sink
from pipeline_core.sinks._failover import FailoverSinkProcessor
from pipeline_core.sinks._file import RollingFileSink
from pipeline_core.sinks._handoff import Barrier, HandoffWriter, SealedBatch
from pipeline_core.sinks._handoff_sink import HandoffSink
from pipeline_core.sinks._http import HttpSink
from pipeline_core.sinks._load_balancing import LoadBalancingSinkProcessor, SinkSelector
from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._retry import RetryPolicy
from pipeline_core.sinks._runner import RunnerCounters, RunnerOutcome, SinkRunner
from pipeline_core.sinks._sink import BatchSink, Sink
from pipeline_core.sinks._sink_state import (
    HEALTHY,
    InMemorySinkStateStore,
    SinkHealth,
    SinkStateStore,
)
from pipeline_core.sinks._spool_budget import SpoolBudget
from pipeline_core.sinks._sql import SqlSink
from pipeline_core.sinks._status import Status
from pipeline_core.sinks._trial import NullSink, StdoutSink

__all__ = [
    "HEALTHY",
    "SYSTEM_CLOCK",
    "Barrier",
    "BatchChannel",
    "BatchSink",
    "ChannelFullError",
    "Clock",
    "DefaultSinkProcessor",
    "DeliveryBatch",
    "EventDeliveryException",
    "FailoverSinkProcessor",
    "HandoffSink",
    "HandoffWriter",
    "HttpFormat",
    "HttpSink",
    "InMemorySinkStateStore",
    "LoadBalancingSinkProcessor",
    "LogEvent",
    "NullSink",
    "ReadBack",
    "RetryPolicy",
    "RollingFileSink",
    "RunnerCounters",
    "RunnerOutcome",
    "SealedBatch",
    "Sink",
    "SinkHealth",
    "SinkProcessor",
    "SinkRejectedError",
    "SinkRunner",
    "SinkSelector",
    "SinkStateStore",
    "SpoolBudget",
    "SqlSink",
    "Status",
    "StdoutSink",
    "SystemClock",
    "Transaction",
    "UploadedBatch",
    "build_sink",
    "event_id",
    "upload_sealed_batch",
    "verify_local_batch",
]
