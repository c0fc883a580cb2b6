"""Case 8: tail latency: how long after its write a line reaches the collector's sinks.

Lines a writer appends between logrotate's copy and its truncate (copytruncate) survive only
if the collector read them first, so a caught-up collector must read a line soon after it is
written. A collector process tails one file (continuous mode, as ``sluice collect`` runs it)
into the lake and into a probe sink group; the probe records, on its sink thread, when each
batch arrived (arrival at a sink is an upper bound of the read latency: the line also went
through both stage queues and the ring). The writer (this process) appends lines that carry
their write time (``time.monotonic_ns()``, one clock for every process of the machine):

* ``10 MB/s`` and ``1 MB/s``: what is due every millisecond (a burst of about eighty, or
  eight, 125-byte lines);
* ``10 lines/s``: one line every 100 ms (a quiet log: every line finds the collector idle).

Each line's latency is its arrival minus its write time; the figures are the p50, p99 and
maximum of a run, medians over the runs. The baseline is the same collector with
``collector.file_events: poll`` (a caught-up collector looks again every 0.2 s), measured in
the same run, one after the other. The collector's CPU over the writing is noted beside.
Target: p99 at most 100 ms with file events.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import common
from bench.common import Context, Row, Stat
from pipeline_core.sinks import Sink, Status

TARGET_P99_MS = 100.0
LINE_BYTES = 125
MODES = ("inotify", "poll")
SETTLE_SECONDS = 1.5
"""After the last write: longer than the poll and the fallback, so every line has arrived."""


@dataclass(frozen=True)
class Load:
    name: str
    bytes_per_s: int
    tick_s: float
    """How often the writer appends what is due."""
    seconds: float
    quick_seconds: float


LOADS = (
    Load("10 MB/s", 10_000_000, 0.001, 20.0, 5.0),
    Load("1 MB/s", 1_000_000, 0.001, 20.0, 5.0),
    Load("10 lines/s", 10 * LINE_BYTES, 0.1, 30.0, 10.0),
)


def run(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    for load in LOADS:
        seconds = load.quick_seconds if ctx.quick else load.seconds
        figures: dict[str, dict[str, list[float]]] = {
            mode: {"p50": [], "p99": [], "max": [], "cpu": [], "lines": []} for mode in MODES
        }
        for index in range(ctx.sizes.runs):
            order = MODES if index % 2 == 0 else MODES[::-1]  # neither always goes first
            for mode in order:
                measured = latency_once(ctx.work("latency"), mode, load, seconds)
                for key, value in measured.items():
                    figures[mode][key].append(value)
        ctx.work("latency")
        rows += _rows(load, seconds, figures)
    return rows


def _rows(load: Load, seconds: float, figures: dict[str, dict[str, list[float]]]) -> list[Row]:
    events, poll = figures["inotify"], figures["poll"]
    rows = []
    for key in ("p50", "p99", "max"):
        ours, theirs = Stat(events[key], "ms"), Stat(poll[key], "ms")
        row = Row(
            case="8",
            measure=f"tail latency, {load.name} for {seconds:.0f} s: {key}",
            sluice=ours,
            baseline=theirs,
            baseline_name="poll",
            ratio=common.paired_ratio(events[key], poll[key]),
        )
        if key == "p99":
            row.target = f"p99 <= {TARGET_P99_MS:.0f} ms"
            row.met = ours.median <= TARGET_P99_MS
            row.note = (
                f"collector CPU {Stat(events['cpu'], '% core').text()} with inotify, "
                f"{Stat(poll['cpu'], '% core').text()} polling; "
                f"{Stat(events['lines'], 'lines', 0).text()} per run"
            )
        row.details = {"inotify": events, "poll": poll}
        rows.append(row)
    return rows


def latency_once(work: Path, mode: str, load: Load, seconds: float) -> dict[str, float]:
    """One collector process, one writer: the run's latency percentiles (ms), the
    collector's CPU (% of a core) while the writer wrote, and the lines measured."""
    log = work / "logs" / "access.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(common.first_line("latency"))
    config = _config(work, log, mode)
    out = work / "arrivals.json"
    collector = subprocess.Popen(
        [common.PYTHON, "-m", "bench.cases.tail_latency", str(config), str(out)],
        cwd=common.ROOT,
        env=common.child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        ready = out.with_suffix(".ready")
        common.wait_for(ready.exists, 60, "the collector's first delivery")
        cpu_before = common.cpu_seconds(collector.pid)
        started = time.perf_counter()
        written = append_stamped(log, load, seconds)
        cpu = common.cpu_seconds(collector.pid) - cpu_before
        wall = time.perf_counter() - started
        time.sleep(SETTLE_SECONDS)
    finally:
        _, errors = collector.communicate(timeout=120)  # closes its standard input: stop
    if collector.returncode != 0:
        raise RuntimeError(f"the collector exited {collector.returncode}: {errors[-2000:]!r}")
    latencies = sorted(json.loads(out.read_text())["latencies_ms"])
    if len(latencies) != written:
        raise RuntimeError(f"{written} lines written, {len(latencies)} arrived ({mode})")
    return {
        "p50": _percentile(latencies, 50),
        "p99": _percentile(latencies, 99),
        "max": latencies[-1],
        "cpu": 100 * cpu / wall,
        "lines": float(written),
    }


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted values."""
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _config(work: Path, log: Path, mode: str) -> Path:
    document = {
        "name": common.PIPELINE,
        "sources": [{"name": "access", "paths": [str(log)], "format": "raw"}],
        "data_dir": str(work / "data"),
        "collector": {"host": common.HOST, "file_events": mode},
        "sinks": {"lake": {"type": "handoff"}, "probe": {"type": "null"}},
        "sink_groups": [
            {"name": "lake", "sinks": ["lake"]},
            {"name": "probe", "sinks": ["probe"]},
        ],
        "schedule": None,
    }
    path = work / "pipeline.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def append_stamped(log: Path, load: Load, seconds: float) -> int:
    """Append ``<monotonic ns> <sequence> <padding>`` lines of ``LINE_BYTES`` at the load's
    rate, what is due every tick, for ``seconds``; returns the number of lines."""
    lines = 0
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(load.bytes_per_s * elapsed) // LINE_BYTES + 1 - lines
            if due > 0:
                stamp = time.monotonic_ns()
                burst = b"".join(_line(stamp, lines + i) for i in range(due))
                os.write(fd, burst)
                lines += due
            time.sleep(load.tick_s)
    finally:
        os.close(fd)
    return lines


def _line(stamp: int, sequence: int) -> bytes:
    head = b"%d %d " % (stamp, sequence)
    return head + b"x" * (LINE_BYTES - len(head) - 1) + b"\n"


# -------------------------------------------------------------------------- the child


class ArrivalSink(Sink):
    """Notes when each batch arrived (on the sink group's thread); the lines are read after
    the run, so that the measuring costs the delivery nothing."""

    def __init__(self, name: str, ready: Path) -> None:
        super().__init__(name)
        self.arrivals: list[tuple[int, bytes]] = []
        self._ready: Path | None = ready

    def process(self) -> Status:
        with self.channel.transaction() as transaction:
            batch = transaction.take()
            if batch is None:
                return Status.BACKOFF
            now = time.monotonic_ns()
            self.arrivals += [(now, bytes(chunk.data)) for chunk in batch.chunks]
            transaction.commit()
        if self._ready is not None:  # once: the measured delivery pays no system call for it
            self._ready.touch()
            self._ready = None
        return Status.READY

    def latencies_ms(self) -> list[float]:
        latencies = []
        for arrived, data in self.arrivals:
            for line in data.splitlines():
                stamp = line.split(b" ", 1)[0]
                if stamp.isdigit():
                    latencies.append((arrived - int(stamp)) / 1e6)
        return latencies


def main() -> None:
    """Child: tail the config's file until standard input closes; write the latencies."""
    from pipeline_core.collector import Collector
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.metastore import Metastore

    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    config = load_pipeline_config(args.config)
    metastore = Metastore.open(config.metastore_url)
    probe = ArrivalSink("probe", args.out.with_suffix(".ready"))
    collector = Collector(config, metastore, sinks={"probe": probe})

    def stop_when_told() -> None:
        sys.stdin.read()
        collector.stop()

    threading.Thread(target=stop_when_told, daemon=True).start()
    collector.run()
    metastore.close()
    result: dict[str, Any] = {"latencies_ms": probe.latencies_ms()}
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
