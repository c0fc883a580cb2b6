"""The collector: files -> ring buffer -> handoff sink, driven by one mailbox thread.

Checkpoint requests arrive as max-priority mails; each becomes a barrier in the ring behind the
last chunk read, and the batch sealed at that barrier is recorded, with the files' offsets, in
one metastore transaction.
"""

from pipeline_core.collector._checkpoints import CheckpointCoordinator, SealedCheckpoint
from pipeline_core.collector._collector import Collector, CollectorMode, CollectorResult
from pipeline_core.collector._events import EventKind, PipelineEvent

__all__ = [
    "CheckpointCoordinator",
    "Collector",
    "CollectorMode",
    "CollectorResult",
    "EventKind",
    "PipelineEvent",
    "SealedCheckpoint",
]
