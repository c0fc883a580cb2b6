"""The sink group's ring handler: a delivered batch gives its ring slots back at once."""

from __future__ import annotations

from pipeline_core.collector._events import EventKind, PipelineEvent
from pipeline_core.collector._sink_group import SinkGroupEventHandler
from pipeline_core.ring import Sequence
from pipeline_core.sinks import BatchChannel, DefaultSinkProcessor, SinkRunner
from pipeline_core.source import Chunk
from pipeline_core.testing import RecordingSink


def chunk_event(number: int) -> PipelineEvent:
    event = PipelineEvent()
    event.kind = EventKind.CHUNK
    data = f"line {number}\n".encode()
    event.chunk = Chunk("access", "00000000000000aa", number * 100, data, 1)
    event.children = (0,)
    return event


def test_should_release_the_slots_of_a_delivered_batch_and_say_so() -> None:
    sink = RecordingSink()
    processor = DefaultSinkProcessor("lake", sink)
    released: list[int] = []
    sequence = Sequence()
    handler = SinkGroupEventHandler(
        processor,
        SinkRunner(processor),
        BatchChannel(),
        lambda passed: None,
        sole_consumer=True,
        on_released=lambda: released.append(sequence.get()),
    )
    handler.set_sequence_callback(sequence)
    handler.on_start()
    events = [chunk_event(n) for n in range(3)]

    handler.on_batch_start(3, 3)
    for number, event in enumerate(events):
        handler.on_event(event, number, number == 2)

    assert released == [2]  # the slots were free before the send stage was told
    assert [c.start for b in sink.delivered for c in b.chunks] == [0, 100, 200]
    assert all(event.chunk is None for event in events)  # nothing keeps their bytes alive
