"""Queue benchmark: items/s through two QueueLevels (10 keys) against two ``queue.Queue``s.

Run: ``.venv/bin/python bench/bench_queues.py [--items N] [--runs R]``

Both pipelines have the same shape: one producer thread -> level 1 -> one stage thread ->
level 2 -> one sink thread, bounded at every step. The watermark pipeline spreads items over
10 keys, submits through ``BlockedQueue``s and serves with ``wait_for_job``; the baseline uses
``queue.Queue(maxsize)`` with blocking ``put``/``get``. Prints the median of ``--runs`` runs
(3 by default) for each and their ratio.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline_core.queues import BlockedQueue, QueueLevel  # noqa: E402

KEYS = [f"config-{index}" for index in range(10)]
HIGH = 64
DONE = -1


def run_levels(items: int) -> float:
    send: QueueLevel[int] = QueueLevel("send")
    parse: QueueLevel[int] = QueueLevel("parse", downstream=send)
    for key in KEYS:
        parse.add_queue(key, HIGH)
        send.add_queue(key, HIGH)
    to_parse, to_send = BlockedQueue(parse), BlockedQueue(send)
    finished = threading.Event()

    def produce() -> None:
        count = len(KEYS)
        for value in range(items):
            to_parse.submit(KEYS[value % count], value)

    def stage() -> None:
        while (job := parse.wait_for_job(0.1)) is not None or not parse.closed:
            if job is not None:
                to_send.submit(job[0], job[1])

    def sink() -> None:
        seen = 0
        while seen < items:
            if send.wait_for_job(0.1) is not None:
                seen += 1
        finished.set()

    threads = [threading.Thread(target=target) for target in (produce, stage, sink)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    finished.wait()
    elapsed = time.perf_counter() - start
    parse.close()
    send.close()
    for thread in threads:
        thread.join()
    return items / elapsed


def run_queues(items: int) -> float:
    first: queue.Queue[int] = queue.Queue(HIGH * len(KEYS))
    second: queue.Queue[int] = queue.Queue(HIGH * len(KEYS))

    def produce() -> None:
        for value in range(items):
            first.put(value)
        first.put(DONE)

    def stage() -> None:
        while (value := first.get()) != DONE:
            second.put(value)
        second.put(DONE)

    def sink() -> None:
        while second.get() != DONE:
            pass

    threads = [threading.Thread(target=target) for target in (produce, stage, sink)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return items / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    levels = statistics.median(run_levels(args.items) for _ in range(args.runs))
    queues = statistics.median(run_queues(args.items) for _ in range(args.runs))
    print(f"QueueLevel x2, {len(KEYS)} keys: {levels:12,.0f} items/s (median of {args.runs})")
    print(f"queue.Queue x2:               {queues:12,.0f} items/s (median of {args.runs})")
    print(f"ratio QueueLevel / queue.Queue: {levels / queues:.2f}")


if __name__ == "__main__":
    main()
