"""Throughput of the ring (RingBuffer + BatchEventProcessor) against ``queue.Queue``.

One producer thread hands N small items (ints) to one consumer thread, which adds them up:

- ring, one item per claim/publish (``next()`` / ``get(seq).value = item`` / ``publish(seq)``)
- ring, ``--claim`` items per claim/publish (``next(k)`` / fill / ``publish(lo, hi)``)
- ``queue.Queue``, one item per ``put``
- ``queue.Queue``, lists of ``--list-size`` items per ``put``

Both channels are bounded to about the same number of items (``--ring-size``). Prints the median
items/s of ``--runs`` runs per variant and the ring/Queue ratios.

    .venv/bin/python bench/bench_ring.py [--items 1000000] [--runs 3] [--ring-size 4096]
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_core.ring import BatchEventProcessor, EventHandler, RingBuffer


class Slot:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class SummingHandler(EventHandler[Slot]):
    def __init__(self, last_sequence: int) -> None:
        self.total = 0
        self.last_sequence = last_sequence
        self.done = threading.Event()

    def on_event(self, event: Slot, sequence: int, end_of_batch: bool) -> None:
        self.total += event.value
        if end_of_batch and sequence == self.last_sequence:
            self.done.set()


def run_ring(items: int, ring_size: int, claim: int) -> float:
    ring = RingBuffer.create_single_producer(Slot, ring_size)
    handler = SummingHandler(items - 1)
    processor = BatchEventProcessor(ring, ring.new_barrier(), handler)
    ring.add_gating_sequences(processor.sequence)
    consumer = threading.Thread(target=processor.run)
    consumer.start()
    next_, get, publish = ring.next, ring.get, ring.publish

    start = time.perf_counter()
    if claim == 1:
        for item in range(items):
            sequence = next_()
            get(sequence).value = item
            publish(sequence)
    else:
        for first in range(0, items, claim):
            n = min(claim, items - first)
            hi = next_(n)
            lo = hi - n + 1
            for offset in range(n):
                get(lo + offset).value = first + offset
            publish(lo, hi)
    handler.done.wait()
    elapsed = time.perf_counter() - start

    processor.halt()
    consumer.join()
    assert handler.total == items * (items - 1) // 2, "ring lost or duplicated items"
    return items / elapsed


def run_queue(items: int, capacity: int) -> float:
    channel: queue.Queue[int | None] = queue.Queue(maxsize=capacity)
    result: list[int] = []

    def consume() -> None:
        total = 0
        get = channel.get
        while (item := get()) is not None:
            total += item
        result.append(total)

    consumer = threading.Thread(target=consume)
    consumer.start()
    put = channel.put
    start = time.perf_counter()
    for item in range(items):
        put(item)
    put(None)
    consumer.join()
    elapsed = time.perf_counter() - start
    assert result == [items * (items - 1) // 2], "queue lost or duplicated items"
    return items / elapsed


def run_queue_lists(items: int, capacity: int, list_size: int) -> float:
    channel: queue.Queue[list[int] | None] = queue.Queue(maxsize=max(1, capacity // list_size))
    result: list[int] = []

    def consume() -> None:
        total = 0
        get = channel.get
        while (batch := get()) is not None:
            for item in batch:
                total += item
        result.append(total)

    consumer = threading.Thread(target=consume)
    consumer.start()
    put = channel.put
    start = time.perf_counter()
    for first in range(0, items, list_size):
        put(list(range(first, min(first + list_size, items))))
    put(None)
    consumer.join()
    elapsed = time.perf_counter() - start
    assert result == [items * (items - 1) // 2], "queue lost or duplicated items"
    return items / elapsed


def median_rate(runs: int, variant: Callable[[], float]) -> float:
    return statistics.median(variant() for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ring-size", type=int, default=4096)
    parser.add_argument("--claim", type=int, default=100, help="items per ring claim (batched)")
    parser.add_argument("--list-size", type=int, default=1000, help="items per Queue list")
    args = parser.parse_args()
    n, size = args.items, args.ring_size

    print(f"{n:,} items, 2 threads, median of {args.runs} runs, capacity {size} items")
    results = {
        "ring, 1 item per publish": median_rate(args.runs, lambda: run_ring(n, size, 1)),
        f"ring, {args.claim} items per publish": median_rate(
            args.runs, lambda: run_ring(n, size, args.claim)
        ),
        "queue.Queue, 1 item per put": median_rate(args.runs, lambda: run_queue(n, size)),
        f"queue.Queue, lists of {args.list_size}": median_rate(
            args.runs, lambda: run_queue_lists(n, size, args.list_size)
        ),
    }
    for name, rate in results.items():
        print(f"  {name:<32} {rate:>14,.0f} items/s")
    ring_single, ring_batched, queue_single, queue_lists = results.values()
    print(f"  ratio ring/Queue (1 item each)        {ring_single / queue_single:6.2f}x")
    print(f"  ratio ring batched/Queue lists        {ring_batched / queue_lists:6.2f}x")
    print(f"  ratio ring batched/Queue 1 item       {ring_batched / queue_single:6.2f}x")


if __name__ == "__main__":
    main()
