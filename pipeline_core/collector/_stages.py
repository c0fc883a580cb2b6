"""The collector's stage threads between the reader and the ring (Logtail's queue levels).

::

    reader (mailbox thread) --push--> process level --ProcessStage--> BlockedQueue
        --> send level --SendStage--> RingBuffer --> sink groups

A pipeline with nothing in the stages whose ring can take an item now has it published at
once by the reader (:meth:`StageQueues.enter`): the stages would only hand it straight on, and
each hand-off wakes a thread. Anything else goes through the levels, behind what is there.

Each level holds one watermark queue per pipeline. The reader pushes a chunk only while its
pipeline's process queue is writable (otherwise it stops reading that pipeline and waits for
the queue's low-watermark feedback); the process level's ``find_job`` skips a pipeline whose send
queue is at its high watermark; an item the process stage holds when its send queue fills waits
in the ``BlockedQueue`` until that queue's feedback. Barriers travel the same queues (urgent
pushes), so a checkpoint barrier stays behind every chunk read before it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from pipeline_core.acker import new_id
from pipeline_core.collector._events import EventKind, PipelineEvent
from pipeline_core.collector._flow_control import SendRateLimit
from pipeline_core.config import CollectorConfig
from pipeline_core.queues import (
    BlockedQueue,
    PushResult,
    QueueLevel,
    QueueStats,
    UnknownQueueError,
)
from pipeline_core.ring import InsufficientCapacityException, RingBuffer
from pipeline_core.sinks import Barrier
from pipeline_core.source import Chunk

log = logging.getLogger(__name__)

StageItem = Chunk | Barrier
"""What the stage queues carry: a chunk of lines, or a checkpoint barrier behind them."""

T = TypeVar("T")

POLL_SECONDS = 5.0
"""How long a stage thread waits, with no job queued, before looking again: a safety net only.
Whatever can give it a job wakes it (a push, a key made ready, room downstream), and
``stop`` interrupts the wait; a hundred idle pipelines' stages cost nothing between them."""

BUSY_POLL_SECONDS = 0.001
"""How long it waits while jobs are queued but none is servable."""


class StageQueues:
    """The process and send levels, one queue per pipeline in each, and the blocked queue
    between them.

    ``pipeline_of(name)`` gives the send level its readiness: a pipeline is ready to send while
    its ring has a free slot and it is under its send rate.

    Threading model: a pipeline's queues are added with it (before the run by the thread
    adding it, while no other thread runs; during the run on the mailbox thread) and removed
    on the mailbox thread; the levels are thread-safe (the reader pushes on the mailbox
    thread, the stage threads take), and :meth:`stats` may be called from any thread.
    :meth:`enter` is the reader's (the mailbox thread's) only; the counts of items in and
    out of the levels are each written by one thread (in: the reader; out: the send stage).
    """

    def __init__(self, pipeline_of: Callable[[str], PublishTarget | None]) -> None:
        self._pipeline_of = pipeline_of
        self.send: QueueLevel[StageItem] = QueueLevel("send", ready=self._ready_to_send)
        self.process: QueueLevel[StageItem] = QueueLevel("process", downstream=self.send)
        self.to_send = BlockedQueue(self.send)
        self._publish: Callable[[str, StageItem], None] | None = None
        self._entered: dict[str, int] = {}
        """Per pipeline, the items pushed into the process level: written by the reader only."""
        self._left: dict[str, int] = {}
        """Per pipeline, the items of the levels the send stage published: written by the send
        stage only. Equal to ``_entered`` when nothing of the pipeline is in the stages (queued,
        parked, or in a stage thread's hand)."""
        self.published_at_once = 0
        """Items :meth:`enter` published without the levels (the reader's thread)."""

    def add(self, name: str, tuning: CollectorConfig) -> None:
        self.process.add_queue(name, tuning.process_queue_size)
        self.send.add_queue(name, tuning.send_queue_size)
        self._entered[name] = self._left[name] = 0

    def remove(self, name: str) -> None:
        self.process.remove_queue(name)
        self.send.remove_queue(name)
        self._entered.pop(name, None)
        self._left.pop(name, None)

    def sending_through(
        self, publish: Callable[[str, StageItem], None]
    ) -> Callable[[str, StageItem], None]:
        """The send stage's handler: ``publish`` each item, then count it out of the levels.
        :meth:`enter` publishes through the same ``publish`` when the levels are empty."""
        self._publish = publish

        def send(name: str, item: StageItem) -> None:
            publish(name, item)
            if name in self._left:
                self._left[name] += 1

        return send

    def enter(self, name: str, item: StageItem, *, urgent: bool = False) -> PushResult:
        """Hand ``item`` to the stages (the reader's thread, the only one that enters items).

        When nothing of the pipeline is in the levels or a stage thread's hand and its ring
        has a free slot under its send rate, the item is published at once, on this thread:
        no stage thread holds an item of the pipeline, so none publishes into its ring
        meanwhile and order is kept. The levels would only have handed it on, and each
        hand-off wakes a thread: on a file written steadily, the process and send stages'
        wake-ups were a sixth of tailing's CPU. Otherwise the item is pushed into the
        process level (``urgent`` past its high watermark), behind what is there.

        Returns:
            ``PushResult.ACCEPTED``, or ``PushResult.FULL`` (the caller keeps the item).
        """
        entered = self._entered.get(name)
        target = self._pipeline_of(name)
        if (
            self._publish is not None
            and target is not None
            and entered is not None
            and entered == self._left.get(name)
            and target.ring.remaining_capacity() > 0
            and target.rate_limit.ready()
        ):
            self._publish(name, item)
            self.published_at_once += 1
            return PushResult.ACCEPTED
        result = self.process.push(name, item, urgent=urgent)
        if result is PushResult.ACCEPTED and entered is not None:
            self._entered[name] = entered + 1
        return result

    def stats(self, name: str) -> dict[str, QueueStats]:
        """The pipeline's queues (``process``, ``send``) now; empty once it is removed."""
        try:
            return {level.name: level.stats(name) for level in (self.process, self.send)}
        except UnknownQueueError:
            return {}

    def _ready_to_send(self, name: str) -> bool:
        """The send stage's thread: the pipeline's ring has a free slot and it is under its
        rate."""
        target = self._pipeline_of(name)
        if target is None:
            return True
        return target.ring.remaining_capacity() > 0 and target.rate_limit.ready()


class StageThread(Generic[T]):
    """A daemon thread serving one queue level: ``find_job`` round robin, one job at a time.

    ``handle(key, item)`` runs on this thread. A handler error is reported through
    ``on_error`` and stops the stage (the collector then stops); ``stop()`` ends the loop after
    the job in hand.
    """

    def __init__(
        self,
        name: str,
        level: QueueLevel[T],
        handle: Callable[[str, T], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self._level = level
        self._handle = handle
        self._on_error = on_error
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    @property
    def stopping(self) -> threading.Event:
        return self._stopped

    @property
    def name(self) -> str:
        return self._thread.name

    @property
    def alive(self) -> bool:
        """Whether its thread runs (any thread)."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stopped.set()
        self._level.interrupt()  # do not wait out the poll
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopped.is_set():
            # Jobs waiting but not servable (their next stage or sink is full) come free
            # without a push to wake us: look again soon.
            poll = BUSY_POLL_SECONDS if self._level.total_size() else POLL_SECONDS
            job = self._level.wait_for_job(poll)
            if job is None:
                continue
            try:
                self._handle(*job)
            except Exception as exc:
                log.error("%s stopped: %s", self._thread.name, exc)
                self._on_error(exc)
                return


class ProcessStage:
    """Per-pipeline processing between reading and sending; hands items on in order.

    Chunks are shipped as read (parsing belongs to the Spark job); the stage is where
    per-pipeline processing goes, and the point where a pipeline whose sinks are slow stops
    taking work, so the reader stops reading it.
    """

    def __init__(self, to_send: BlockedQueue[StageItem]) -> None:
        self._to_send = to_send

    def __call__(self, key: str, item: StageItem) -> None:
        self._to_send.submit(key, item, urgent=isinstance(item, Barrier))


class PublishTarget(Protocol):
    """What the publisher needs of a pipeline."""

    bytes_sent: int

    @property
    def ring(self) -> RingBuffer[PipelineEvent]: ...

    @property
    def groups(self) -> Sequence[object]: ...

    @property
    def rate_limit(self) -> SendRateLimit: ...


class RingPublisher:
    """Publishes send-level items into their pipeline's ring, waiting (not spinning) while the
    slowest sink group holds every slot, and giving up when ``stopping`` is set. (The send
    level skips pipelines whose ring is full, so the wait is short.)

    Each chunk fans out to every sink group: the publisher anchors one new acker edge per
    group on the chunk's tree and acks the edge it received, in one XOR reported through
    ``on_anchored(pipeline, tree, ack_value)``; group ``i`` acks ``children[i]`` once it
    delivered.
    """

    def __init__(
        self,
        pipeline_of: Callable[[str], PublishTarget],
        on_anchored: Callable[[str, int, int], None],
    ) -> None:
        self._pipeline_of = pipeline_of
        self._on_anchored = on_anchored
        self.stopping = threading.Event()

    def __call__(self, key: str, item: StageItem) -> None:
        target = self._pipeline_of(key)
        ring = target.ring
        pause = 0.0005
        while True:
            try:
                sequence = ring.try_next()
                break
            except InsufficientCapacityException:
                if self.stopping.wait(pause):
                    return
                pause = min(pause * 2, 0.01)
        event = ring.get(sequence)
        if isinstance(item, Barrier):
            event.kind = EventKind.BARRIER
            event.barrier = item
            event.chunk = None
            event.children = ()
        else:
            children = tuple(new_id() for _ in range(len(target.groups)))
            ack_value = item.edge
            for child in children:
                ack_value ^= child
            self._on_anchored(key, item.tree, ack_value)
            target.rate_limit.spend(len(item.data))
            target.bytes_sent += len(item.data)
            event.kind = EventKind.CHUNK
            event.chunk = item
            event.barrier = None
            event.children = children
        ring.publish(sequence)
