"""Mailbox benchmark: throughput, put-to-run latency, checkpoint latency under a busy reader.

Run: ``.venv/bin/python bench/bench_mailbox.py [--mails N] [--runs R] [--json PATH]``

Every figure is the median of ``--runs`` runs (3 by default):

* throughput: one producer thread ``execute``s N mails on the main executor while the mailbox
  thread runs ``run_mailbox_loop``; measured from the first put to the last mail run. Two loop
  shapes: the default action suspended (the loop blocks on the mailbox) and the default action
  available but returning at once (the lock-free hot path between calls).
* put-to-run latency: mails put one at a time, 200 µs apart, into an idle loop (default
  action suspended), as reported by ``MailboxProcessor.metrics()``.
* checkpoint latency: the default action is busy in 25 ms slices (CPU work, like a read slice);
  another thread puts a ``MAX_PRIORITY`` mail at random moments and waits for it to run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MailboxDefaultAction,
    MailboxProcessor,
    TaskMailbox,
)

Controller = MailboxDefaultAction.Controller
SLICE_SECONDS = 0.025


def run_loop_on_thread(
    default_action: Callable[[Controller], None],
    drive: Callable[[MailboxProcessor], None],
) -> MailboxProcessor:
    """Run a processor's loop on a new mailbox thread while ``drive`` runs on this one."""
    ready = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            ready.set()
            processor.run_mailbox_loop()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=loop, name="mailbox")
    processor = MailboxProcessor(default_action, TaskMailbox(owner_thread=thread))
    thread.start()
    ready.wait()
    drive(processor)
    processor.all_actions_completed()
    thread.join()
    processor.close()
    if errors:
        raise errors[0]
    return processor


def suspend(controller: Controller) -> None:
    controller.suspend_default_action()


def return_at_once(controller: Controller) -> None:
    return None


def throughput(mails: int, default_action: Callable[[Controller], None]) -> float:
    """Mails per second from one producer thread through the loop."""
    done = threading.Event()
    remaining = [mails]

    def count() -> None:
        remaining[0] -= 1
        if not remaining[0]:
            done.set()

    def drive(processor: MailboxProcessor) -> None:
        execute = processor.get_main_mailbox_executor().execute
        start = time.perf_counter()
        for _ in range(mails):
            execute(count, "count")
        done.wait()
        elapsed.append(time.perf_counter() - start)

    elapsed: list[float] = []
    run_loop_on_thread(default_action, drive)
    return mails / elapsed[0]


def idle_latency(mails: int) -> tuple[float, float]:
    """(p50, p99) put-to-run latency in seconds of paced mails into an idle loop."""

    def drive(processor: MailboxProcessor) -> None:
        execute = processor.get_main_mailbox_executor().execute
        ran = threading.Event()
        for _ in range(mails):
            ran.clear()
            execute(ran.set, "ping")
            ran.wait()
            time.sleep(0.0002)

    processor = run_loop_on_thread(suspend, drive)
    metrics = processor.metrics()
    return metrics.latency_p50, metrics.latency_p99


def busy_slice(controller: Controller) -> None:
    """About 25 ms of CPU work in small steps, like a reader hashing what it read."""
    deadline = time.perf_counter() + SLICE_SECONDS
    block = b"x" * 65536
    while time.perf_counter() < deadline:
        hashlib.blake2b(block).digest()


def checkpoint_latency(requests: int, seed: int) -> list[float]:
    """Put-to-run seconds of MAX_PRIORITY mails put at random moments into a busy loop."""
    rng = random.Random(seed)
    latencies: list[float] = []

    def drive(processor: MailboxProcessor) -> None:
        checkpoints = processor.get_mailbox_executor(MAX_PRIORITY)
        for n in range(requests):
            time.sleep(rng.uniform(0.0, 2 * SLICE_SECONDS))
            ran = threading.Event()
            ran_at: list[float] = []

            def checkpoint(ran: threading.Event = ran, ran_at: list[float] = ran_at) -> None:
                ran_at.append(time.perf_counter())
                ran.set()

            put_at = time.perf_counter()
            checkpoints.execute(checkpoint, "checkpoint %d", n)
            ran.wait()
            latencies.append(ran_at[0] - put_at)

    run_loop_on_thread(busy_slice, drive)
    return latencies


def percentile(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(quantile * len(ordered) + 0.999999) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, default=200_000, help="mails per throughput run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median taken)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    runs = range(args.runs)

    idle_tput = statistics.median(throughput(args.mails, suspend) for _ in runs)
    hot_tput = statistics.median(throughput(args.mails, return_at_once) for _ in runs)
    idle = [idle_latency(2000) for _ in runs]
    checkpoint_runs = [checkpoint_latency(40, seed) for seed in runs]

    figures = {
        "python": sys.version.split()[0],
        "throughput_idle_loop_mails_per_s": round(idle_tput),
        "throughput_hot_loop_mails_per_s": round(hot_tput),
        "put_to_run_p50_us": round(statistics.median(p50 for p50, _ in idle) * 1e6, 1),
        "put_to_run_p99_us": round(statistics.median(p99 for _, p99 in idle) * 1e6, 1),
        "checkpoint_slice_ms": SLICE_SECONDS * 1e3,
        "checkpoint_p50_ms": round(
            statistics.median(statistics.median(run) for run in checkpoint_runs) * 1e3, 2
        ),
        "checkpoint_p99_ms": round(
            statistics.median(percentile(run, 0.99) for run in checkpoint_runs) * 1e3, 2
        ),
        "checkpoint_max_ms": round(max(max(run) for run in checkpoint_runs) * 1e3, 2),
    }
    width = max(len(key) for key in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
