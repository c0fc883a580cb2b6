"""Where the reader's items enter the stages: at once into the ring when nothing of the
pipeline is in the stages, else through the levels, and in order either way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline_core.collector._events import PipelineEvent
from pipeline_core.collector._flow_control import SendRateLimit
from pipeline_core.collector._stages import ProcessStage, RingPublisher, StageItem, StageQueues
from pipeline_core.config import CollectorConfig
from pipeline_core.queues import PushResult
from pipeline_core.ring import RingBuffer, Sequence
from pipeline_core.source import Chunk

RING_SIZE = 4


@dataclass
class Target:
    """What the publisher needs of a pipeline: its ring (with one consumer's sequence gating
    it, moved by the test), its sink groups and its send rate."""

    ring: RingBuffer[PipelineEvent] = field(
        default_factory=lambda: RingBuffer.create_single_producer(PipelineEvent, RING_SIZE)
    )
    consumed: Sequence = field(default_factory=Sequence)
    groups: tuple[object, ...] = (object(),)
    rate_limit: SendRateLimit = field(default_factory=lambda: SendRateLimit(None))
    bytes_sent: int = 0

    def __post_init__(self) -> None:
        self.ring.add_gating_sequences(self.consumed)


def published(anchored: list[tuple[str, int, int]]) -> list[int]:
    """The start offsets of the chunks published, in order (each is anchored as it is
    published; a chunk's tree is its start + 1)."""
    return [tree - 1 for _, tree, _ in anchored]


def chunk(start: int) -> Chunk:
    return Chunk("access", "f" * 16, start, bytearray(b"line\n"), 1, tree=start + 1, edge=7)


Send = Callable[[str, StageItem], None]


def stages(target: Target) -> tuple[StageQueues, Send, list[tuple[str, int, int]]]:
    """The stage queues of pipeline ``p`` over ``target``; the send stage's handler; the
    edges anchored."""
    anchored: list[tuple[str, int, int]] = []
    queues = StageQueues(lambda name: target if name == "p" else None)
    queues.add(
        "p",
        CollectorConfig(host="h", ring_size=RING_SIZE, process_queue_size=8, send_queue_size=8),
    )
    publisher = RingPublisher(lambda name: target, lambda *edge: anchored.append(edge))
    return queues, queues.sending_through(publisher), anchored


def run_stages(queues: StageQueues, send: Send) -> None:
    """What the process and send stage threads do, until nothing is servable."""
    process = ProcessStage(queues.to_send)
    while True:
        job = queues.process.find_job()
        if job is not None:
            process(*job)
            continue
        job = queues.send.find_job()
        if job is None:
            return
        send(*job)


def test_should_publish_at_once_while_nothing_of_the_pipeline_is_in_the_stages() -> None:
    target = Target()
    queues, _, anchored = stages(target)
    for start in range(3):
        assert queues.enter("p", chunk(start)) is PushResult.ACCEPTED
    assert target.ring.cursor == 2
    assert published(anchored) == [0, 1, 2]
    assert queues.published_at_once == 3
    assert queues.process.size("p") == 0
    assert [edge[:2] for edge in anchored] == [("p", 1), ("p", 2), ("p", 3)]
    assert target.bytes_sent == 15


def test_should_go_through_the_levels_in_order_once_the_ring_is_full() -> None:
    target = Target()
    queues, send, anchored = stages(target)

    for start in range(RING_SIZE + 2):  # the last two find the ring full
        assert queues.enter("p", chunk(start)) is PushResult.ACCEPTED
    assert queues.published_at_once == RING_SIZE
    assert queues.process.size("p") == 2

    target.consumed.set(RING_SIZE - 1)  # the sinks took every slot: room for all again
    # Items of the pipeline are still in the levels: this one queues behind them.
    assert queues.enter("p", chunk(RING_SIZE + 2)) is PushResult.ACCEPTED
    assert queues.published_at_once == RING_SIZE
    assert queues.process.size("p") == 3

    run_stages(queues, send)
    assert queues.process.size("p") == queues.send.size("p") == 0
    # Everything left the levels: the next item is published at once again.
    assert queues.enter("p", chunk(RING_SIZE + 3)) is PushResult.ACCEPTED
    assert queues.published_at_once == RING_SIZE + 1
    assert published(anchored) == list(range(RING_SIZE + 4))


def test_should_keep_items_in_the_levels_while_the_send_rate_is_spent() -> None:
    target = Target(rate_limit=SendRateLimit(1))
    queues, _, anchored = stages(target)
    assert queues.enter("p", chunk(0)) is PushResult.ACCEPTED  # spends the second's byte
    assert queues.enter("p", chunk(1)) is PushResult.ACCEPTED
    assert published(anchored) == [0]
    assert queues.process.size("p") == 1


def test_should_refuse_an_item_when_the_process_queue_is_full_and_the_ring_too() -> None:
    target = Target()
    queues, _, _ = stages(target)
    items: list[StageItem] = [chunk(start) for start in range(RING_SIZE + 8)]
    results = [queues.enter("p", item) for item in items]
    assert results.count(PushResult.ACCEPTED) == RING_SIZE + 8
    assert queues.enter("p", chunk(99)) is PushResult.FULL  # 8 queued: the high watermark
    assert queues.process.size("p") == 8
