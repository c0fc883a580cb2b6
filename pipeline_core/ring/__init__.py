"""The ring: a Disruptor-style bounded channel between Sluice's stages and its sink groups.

A ``RingBuffer`` preallocates ``buffer_size`` (a power of two) events. Producers claim
sequences, fill the events in place and publish them; each consumer is a
``BatchEventProcessor`` running on its own thread, which waits on a ``SequenceBarrier``, hands
every available event to its ``EventHandler`` as one batch and then advances its own
``Sequence``. Producers never pass the slowest *gating* sequence, so a slow consumer
back-pressures the producers::

                    next() / get() / publish()
    producer(s) ------------------------------> RingBuffer (cursor)
                                                 ^    |
           gating sequences: A.sequence,         |    | new_barrier()   (fan-out: A and B
           C.sequence (the ends of each chain) --+    |                  each see every event)
                                   +------------------+-----------------+
                                   v                                    v
                       BatchEventProcessor A                BatchEventProcessor B
                                   |                                    |
                                   v                                    | new_barrier(B.sequence)
                              sink group 1                              v  (pipeline)
                                                            BatchEventProcessor C
                                                                        |
                                                                        v
                                                                   sink group 2

In a pipeline the later stage C sees an event only after B has processed it, so B is always
ahead of C and gating the producer on C alone covers both.

Typical wiring::

    ring = RingBuffer.create_single_producer(Slot, 1024)
    processor = BatchEventProcessor(ring, ring.new_barrier(), handler)
    ring.add_gating_sequences(processor.sequence)
    threading.Thread(target=processor.run).start()
    seq = ring.next(); ring.get(seq).value = item; ring.publish(seq)
    ...
    processor.halt()

On hot paths claim and publish ranges (``hi = ring.next(n)`` ... ``ring.publish(hi - n + 1,
hi)``): one claim and one publish per range, and consumers receive it as one batch. Nothing
on the producer or consumer path takes a lock, except the blocking wait strategies when a
consumer is actually blocked.

Waiting is pluggable (``WaitStrategy``): ``BlockingWaitStrategy`` (the default),
``TimeoutBlockingWaitStrategy``, ``SleepingWaitStrategy``, ``YieldingWaitStrategy``,
``BusySpinWaitStrategy`` and the Flume-style ``BackoffWaitStrategy``. A
``RewindableEventHandler`` can ask for its batch to be replayed by raising
``RewindableException``; a ``BatchRewindStrategy`` decides (``RewindAction``).
"""

from ._barrier import SequenceBarrier
from ._blocking_wait_strategies import BlockingWaitStrategy, TimeoutBlockingWaitStrategy
from ._exception_handlers import ExceptionHandler, FatalExceptionHandler, IgnoreExceptionHandler
from ._exceptions import (
    AlertException,
    InsufficientCapacityException,
    ProcessorAlreadyRunningError,
    RewindableException,
    RingError,
    TimeoutException,
)
from ._handlers import EventHandler, RewindableEventHandler
from ._processor import BatchEventProcessor, ProcessorState
from ._rewind import (
    BatchRewindStrategy,
    EventuallyGiveUpBatchRewindStrategy,
    NanosecondPauseBatchRewindStrategy,
    RewindAction,
    SimpleBatchRewindStrategy,
)
from ._ring_buffer import DataProvider, EventFactory, RingBuffer
from ._sequence import INITIAL_CURSOR_VALUE, FixedSequenceGroup, Sequence
from ._wait_strategies import (
    BackoffWaitStrategy,
    BusySpinWaitStrategy,
    SleepingWaitStrategy,
    WaitStrategy,
    YieldingWaitStrategy,
)

__all__ = [
    "INITIAL_CURSOR_VALUE",
    "AlertException",
    "BackoffWaitStrategy",
    "BatchEventProcessor",
    "BatchRewindStrategy",
    "BlockingWaitStrategy",
    "BusySpinWaitStrategy",
    "DataProvider",
    "EventFactory",
    "EventHandler",
    "EventuallyGiveUpBatchRewindStrategy",
    "ExceptionHandler",
    "FatalExceptionHandler",
    "FixedSequenceGroup",
    "IgnoreExceptionHandler",
    "InsufficientCapacityException",
    "NanosecondPauseBatchRewindStrategy",
    "ProcessorAlreadyRunningError",
    "ProcessorState",
    "RewindAction",
    "RewindableEventHandler",
    "RewindableException",
    "RingBuffer",
    "RingError",
    "Sequence",
    "SequenceBarrier",
    "SimpleBatchRewindStrategy",
    "SleepingWaitStrategy",
    "TimeoutBlockingWaitStrategy",
    "TimeoutException",
    "WaitStrategy",
    "YieldingWaitStrategy",
]
