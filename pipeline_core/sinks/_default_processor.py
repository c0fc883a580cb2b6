"""``DefaultSinkProcessor``: a group of one sink, with no policy at all."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._sink import Sink
from pipeline_core.sinks._status import Status


class DefaultSinkProcessor(SinkProcessor):
    """Passes ``process()`` straight to the group's only sink (Flume's
    ``DefaultSinkProcessor``): its status is returned and its exceptions propagate.

    Threading model: ``process()`` is called from the group's delivery thread only.

    Args:
        group: the sink group's name.
        sink: the sink, or a sequence holding exactly one sink.

    Raises:
        ValueError: if a sequence does not hold exactly one sink.
    """

    def __init__(self, group: str, sink: Sink | Sequence[Sink]) -> None:
        sinks = (sink,) if isinstance(sink, Sink) else tuple(sink)
        if len(sinks) != 1:
            raise ValueError(
                f"sink group {group!r}: the default processor takes exactly one sink, "
                f"got {len(sinks)}"
            )
        super().__init__(group, sinks)
        self._sink = sinks[0]

    def process(self) -> Status:
        return self._sink.process()
