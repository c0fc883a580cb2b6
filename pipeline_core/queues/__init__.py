"""Multi-level high/low-watermark feedback queues between Sluice's stages.

Each stage (read -> parse -> send) owns a ``QueueLevel``: one FIFO per pipeline key, all under
one lock. A queue refuses non-urgent pushes from its high watermark until it is drained to its
low watermark (hysteresis); urgent pushes (a rotated file's last data) always get in::

                 submit                  find_job  submit                  find_job
    reader --> BlockedQueue ---> QueueLevel "parse" ---> BlockedQueue ---> QueueLevel "send" -> send
                    ^              (one FIFO per key)          ^             (one FIFO per key)
                    |                |        ^                |                    |
                    +-- feedback ----+        +-- skip key k --+---- feedback ------+
                   on_writable(key)      while send[k] blocked      on_writable(key)

    async feedback: a queue drained from its high to its low mark calls on_writable(key)
    upward (the BlockedQueue re-submits parked items; the upper level's waiters wake).
    sync feedback: the parse level's find_job skips a key whose "send" queue is blocked.

``find_job`` resumes its round robin after the key it served last (fairness) and skips keys
whose downstream queue is blocked (isolation: one stuck key does not stall the others). A
consumer blocks in ``wait_for_job(timeout)``; a push or the downstream's feedback wakes it.
An item refused by a full queue waits in a ``BlockedQueue`` instead of being re-queued at
the tail of its source, and goes back in order when that queue's feedback arrives.

Typical wiring::

    send = QueueLevel[Batch]("send")
    parse = QueueLevel[Chunk]("parse", downstream=send)
    for key in keys:
        parse.add_queue(key, high=64)
        send.add_queue(key, high=16)
    to_parse, to_send = BlockedQueue(parse), BlockedQueue(send)
    to_parse.submit(key, chunk)                       # reader thread
    job = parse.wait_for_job(0.5)                     # parse thread
    if job: to_send.submit(job[0], parse_chunk(job[1]))

``WatermarkQueue`` is the same watermark contract for a single queue with its own lock.
"""

from ._blocked import BlockedQueue
from ._exceptions import DuplicateQueueError, QueueClosedError, QueueError, UnknownQueueError
from ._level import QueueLevel
from ._stats import Placement, PushResult, QueueStats
from ._watermark_queue import WatermarkQueue
from ._watermarks import FeedbackListener

__all__ = [
    "BlockedQueue",
    "DuplicateQueueError",
    "FeedbackListener",
    "Placement",
    "PushResult",
    "QueueClosedError",
    "QueueError",
    "QueueLevel",
    "QueueStats",
    "UnknownQueueError",
    "WatermarkQueue",
]
