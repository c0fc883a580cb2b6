"""Sink groups: delivery throughput on the ring, and the time to fail over.

1. Throughput: one producer publishes ``--mib`` MiB of nginx lines, in chunks of ``--chunk-kib``
   KiB, into a ring consumed by one sink group (``SinkGroupEventHandler`` -> ``SinkRunner`` ->
   ``DefaultSinkProcessor``), then a checkpoint barrier; timed until the group passed it.
   - group -> ``null`` sink, against handing the same chunks to a thread through ``queue.Queue``;
   - group -> ``file`` sink (fsync at the barrier), against a thread writing the same chunks to
     a file and fsyncing it.
2. Failover: a ``FailoverSinkProcessor`` over two HTTP sinks on loopback servers; the primary
   server is stopped and the time from then to the first batch delivered by the backup is
   measured, with the HTTP sink retrying once (``max_attempts: 1``) and with its default
   bounded retries (5 attempts, jittered exponential waits).

    .venv/bin/python bench/bench_sinks.py [--mib 128] [--chunk-kib 256] [--runs 5]

Prints medians with min-max and ratios; writes bench/results/sinks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline_core.collector import EventKind, PipelineEvent  # noqa: E402
from pipeline_core.collector._sink_group import BarrierPassed, SinkGroupEventHandler  # noqa: E402
from pipeline_core.ring import BatchEventProcessor, RingBuffer  # noqa: E402
from pipeline_core.sinks import (  # noqa: E402
    Barrier,
    BatchChannel,
    DefaultSinkProcessor,
    DeliveryBatch,
    FailoverSinkProcessor,
    HttpSink,
    NullSink,
    RollingFileSink,
    RunnerOutcome,
    Sink,
    SinkRunner,
)
from pipeline_core.sinks._retry import RetryPolicy  # noqa: E402
from pipeline_core.source import Chunk  # noqa: E402
from pipeline_core.source._chunk import count_lines  # noqa: E402
from pipeline_core.testing import access_lines  # noqa: E402
from tests.support.http_server import RecordingHttpServer  # noqa: E402


def make_chunks(mib: int, chunk_kib: int) -> list[Chunk]:
    block = b"\n".join(access_lines(20_000, seed=7)) + b"\n"
    chunks, offset, target = [], 0, mib * 1024 * 1024
    while offset < target:
        data = block[: chunk_kib * 1024]
        data = data[: data.rindex(b"\n") + 1]
        chunks.append(Chunk("access", "bench", offset, data, count_lines(data)))
        offset += len(data)
    return chunks


def time_group(sink: Sink, chunks: list[Chunk]) -> float:
    ring = RingBuffer.create_single_producer(PipelineEvent, 64)
    processor = DefaultSinkProcessor("bench", sink)
    passed = threading.Event()

    def on_passed(_: BarrierPassed) -> None:
        passed.set()

    handler = SinkGroupEventHandler(processor, SinkRunner(processor), BatchChannel(), on_passed)
    consumer = BatchEventProcessor(ring, ring.new_barrier(), handler)
    ring.add_gating_sequences(consumer.sequence)
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    started = time.perf_counter()
    for chunk in chunks:
        sequence = ring.next()
        event = ring.get(sequence)
        event.kind, event.chunk, event.barrier = EventKind.CHUNK, chunk, None
        ring.publish(sequence)
    sequence = ring.next()
    event = ring.get(sequence)
    event.kind, event.chunk = EventKind.BARRIER, None
    event.barrier = Barrier(1, datetime.now(timezone.utc), ())
    ring.publish(sequence)
    if not passed.wait(300):
        raise RuntimeError("the sink group did not pass the barrier")
    elapsed = time.perf_counter() - started
    consumer.halt()
    thread.join(10)
    return elapsed


def time_queue(
    chunks: list[Chunk], consume: Callable[[Chunk], object], finish: Callable[[], None]
) -> float:
    channel: queue.Queue[Chunk | None] = queue.Queue(64)

    def run() -> None:
        while (chunk := channel.get()) is not None:
            consume(chunk)
        finish()

    thread = threading.Thread(target=run, daemon=True)
    started = time.perf_counter()
    thread.start()
    for chunk in chunks:
        channel.put(chunk)
    channel.put(None)
    thread.join()
    return time.perf_counter() - started


def file_baseline(chunks: list[Chunk], path: Path) -> float:
    handle = open(path, "ab")  # noqa: SIM115 - closed in finish

    def finish() -> None:
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()

    return time_queue(chunks, lambda c: handle.write(c.data), finish)


def failover_seconds(max_attempts: int) -> float:
    primary, backup = RecordingHttpServer().start(), RecordingHttpServer().start()
    try:
        retry = RetryPolicy(max_attempts=max_attempts)
        sinks: list[Sink] = [
            HttpSink("primary", primary.url, gzip=False, retry=retry),
            HttpSink("backup", backup.url, gzip=False, retry=retry),
        ]
        processor = FailoverSinkProcessor("web", sinks, {"primary": 10, "backup": 5})
        runner = SinkRunner(processor, max_backoff_sleep=0.0)
        channel = BatchChannel()
        for sink in sinks:
            sink.set_channel(channel)
        processor.start()
        batch = DeliveryBatch(tuple(make_chunks(1, 4)[:1]), 0)
        channel.put(batch)
        assert runner.run_once() is RunnerOutcome.DELIVERED and primary.accepted()
        primary.stop()
        started = time.perf_counter()
        channel.put(batch)
        while runner.run_once() is not RunnerOutcome.DELIVERED:
            pass
        elapsed = time.perf_counter() - started
        assert backup.accepted()
        processor.stop()
        return elapsed
    finally:
        primary.stop()
        backup.stop()


def summary(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--chunk-kib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    chunks = make_chunks(args.mib, args.chunk_kib)
    mb = sum(len(c.data) for c in chunks) / 1e6
    times: dict[str, list[float]] = {k: [] for k in ("queue", "null", "file_write", "file")}
    with tempfile.TemporaryDirectory(dir=ROOT / "bench" / "data") as scratch:
        for run in range(args.runs):
            times["queue"].append(time_queue(chunks, lambda _: None, lambda: None))
            times["null"].append(time_group(NullSink("null"), chunks))
            times["file_write"].append(file_baseline(chunks, Path(scratch) / f"plain-{run}"))
            sink = RollingFileSink("file", Path(scratch) / f"sink-{run}", max_bytes=1 << 40)
            times["file"].append(time_group(sink, chunks))
    failover = {
        "max_attempts=1": [failover_seconds(1) for _ in range(args.runs)],
        "max_attempts=5": [failover_seconds(5) for _ in range(3)],
    }
    print(f"{'case':<34}{'median MB/s':>12}{'min-max':>16}")
    rates = {}
    for case, label in [
        ("queue", "queue.Queue hand-off (baseline)"),
        ("null", "sink group -> null"),
        ("file_write", "thread write+fsync (baseline)"),
        ("file", "sink group -> file"),
    ]:
        rates[case] = mb / statistics.median(times[case])
        low, high = mb / max(times[case]), mb / min(times[case])
        print(f"{label:<34}{rates[case]:>12.0f}{low:>9.0f}-{high:<7.0f}")
    print(f"null group / queue.Queue = {rates['null'] / rates['queue']:.2f}")
    print(f"file group / plain writes = {rates['file'] / rates['file_write']:.2f}")
    for case, values in failover.items():
        s = summary(values)
        print(
            f"failover, http {case}: median {s['median'] * 1000:.1f} ms "
            f"({s['min'] * 1000:.1f}-{s['max'] * 1000:.1f})"
        )
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "sinks.json").write_text(
        json.dumps(
            {
                "mb": mb,
                "chunks": len(chunks),
                "seconds": times,
                "mb_per_s": rates,
                "failover_seconds": {k: summary(v) for k, v in failover.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
