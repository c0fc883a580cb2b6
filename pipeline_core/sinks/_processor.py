"""``SinkProcessor``: how a sink group chooses which of its sinks delivers the next batch."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pipeline_core.sinks._sink import Sink
from pipeline_core.sinks._status import Status


class SinkProcessor(ABC):
    """The policy of one sink group (Flume's ``SinkProcessor``).

    ``process()`` makes one delivery attempt through the group's sinks and returns the status
    of the sink that answered; it raises ``EventDeliveryException`` when no sink could take
    the batch. Called from the group's delivery thread only.
    """

    def __init__(self, group: str, sinks: Sequence[Sink]) -> None:
        self.group = group
        self._sinks = tuple(sinks)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.group!r}, {[s.name for s in self._sinks]})"

    @property
    def sinks(self) -> tuple[Sink, ...]:
        """Every sink of the group, in configuration order."""
        return self._sinks

    def start(self) -> None:
        for sink in self._sinks:
            sink.start()

    def stop(self) -> None:
        for sink in self._sinks:
            sink.stop()

    @abstractmethod
    def process(self) -> Status:
        """One delivery attempt."""
