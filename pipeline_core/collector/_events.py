"""What travels through the collector's ring buffer."""

from __future__ import annotations

from enum import Enum

from pipeline_core.sinks import Barrier
from pipeline_core.source import Chunk


class EventKind(Enum):
    CHUNK = "chunk"
    BARRIER = "barrier"


class PipelineEvent:
    """A preallocated ring slot: a chunk of lines, or a checkpoint barrier behind them."""

    __slots__ = ("barrier", "children", "chunk", "kind")

    def __init__(self) -> None:
        self.kind = EventKind.CHUNK
        self.chunk: Chunk | None = None
        self.barrier: Barrier | None = None
        self.children: tuple[int, ...] = ()
        """The acker edge ids anchored on the chunk, one per sink group (by group index)."""

    def clear(self) -> None:
        """Drop the payload once handled, so the slot does not keep its bytes alive."""
        self.chunk = None
        self.barrier = None
        self.children = ()
