"""Case 14: what joining lines into events costs the collector.

Sluice with a multiline source (``multiline: {preset: python}``) against the same collector
reading the same file line by line (no ``multiline``), run by run in turns (which of the two
goes first turned every run): a fresh process collects the file to its end and seals one
checkpoint (``Collector.run_once``, as case 1), and the figure is input MB per second. Both
stage into memory (``/dev/shm``): the case weighs the joining, which is the reading thread's,
while the staging disk's write-back is charged to the sink's thread at random on this machine
(0.3 to 2.9 s of CPU for the same GiB; six pairs' ratios spread from 0.49 to 1.88 on disk);
case 1 measures the disk. Two files of 1 GiB (a run of 256 MiB lasted 0.2 s, a third
of it the seal's fixed cost, the same either way), both written by Python's ``logging`` (the
project's log-writing program, ``tests/support/python_log_program.py``, run once and its
output repeated up to the size): one of short single-line events, where the preset finds
nothing to join and costs only its scan; one where half the events are ``logger.exception``
tracebacks (chained, exception groups, carets), where it joins most lines. Target (issue 28):
at least 0.8 x the line-by-line rate on both. A third row is case 5's measure on a backlog of
tracebacks read with the preset: checkpoint request -> sealed while reading, p99 (target
100 ms), beside an idle collector's, on 256 MiB copies.
"""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

from bench import common
from bench.cases import checkpoint_latency
from bench.cases.throughput import collect_in_child
from bench.common import Context, Row, Stat, paired_ratio

TARGET = 0.8
CHECKPOINT_TARGET_MS = 100.0
CHECKPOINT_FILES = 4
"""The checkpoint row reads this many copies of the traceback file, each behind a first line
of its own (so none looks like a copy of another), to last through its requests."""
PROGRAM = common.ROOT / "tests" / "support" / "python_log_program.py"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SEED_EVENTS = {"lines": 100_000, "tracebacks": 10_000}
"""Events the program writes once per file; the file repeats them up to its size."""
TRACEBACK_SHARE = {"lines": 0.0, "tracebacks": 0.5}
MULTILINE = {"preset": "python"}


def python_log(kind: str, size: int) -> common.RepeatedLog:
    """``bench/data/pylog-<kind>-<MiB>m/app.log``: the program's output, repeated to ``size``."""

    def write_seed(seed: Path) -> int:
        truth = seed.with_name("seed.truth.jsonl")
        subprocess.run(
            [
                common.PYTHON,
                str(PROGRAM),
                "--log",
                str(seed),
                "--truth",
                str(truth),
                "--format",
                FORMAT,
                "--events",
                str(SEED_EVENTS[kind]),
                "--tracebacks",
                str(TRACEBACK_SHARE[kind]),
                "--stacks",
                "0",
                "--seed",
                "14",
            ],
            check=True,
            timeout=1800,
        )
        records = truth.read_bytes().count(b"\n")  # one JSON string a record
        truth.unlink()
        return records

    spec = {"events": SEED_EVENTS[kind], "tracebacks": TRACEBACK_SHARE[kind], "format": FORMAT}
    return common.repeated_log(f"pylog-{kind}-{size // common.MiB}m", spec, size, write_seed)


def run(ctx: Context) -> list[Row]:
    size = 16 * common.MiB if ctx.quick else 1024 * common.MiB
    rows = []
    for kind, label in (("lines", "one-line events"), ("tracebacks", "half tracebacks")):
        path = python_log(kind, size).path
        megabytes = common.size_of(path) / 1e6
        plain: list[float] = []
        joined: list[float] = []
        for run in range(ctx.sizes.runs):
            # Each pair's order turned every run: the first of a pair ran slower on this
            # machine whichever it was (1,306 against 2,877 MB/s, the same file, in a run
            # that always read line by line first).
            turn: tuple[tuple[list[float], dict[str, str] | None], ...] = (
                (plain, None),
                (joined, MULTILINE),
            )
            for seconds, source in turn if run % 2 == 0 else turn[::-1]:
                work = ctx.memory_work("multiline")
                common.warm(path)
                keys: dict[str, object] = {"format": "raw", "multiline": source}
                seconds.append(megabytes / collect_in_child(work, path, keys).seconds)
        ctx.memory_work("multiline")
        sluice = Stat(joined, "MB/s")
        baseline = Stat(plain, "MB/s")
        ratio = paired_ratio(sluice.values, baseline.values)
        rows.append(
            Row(
                case="14",
                measure=f"collector, python preset, {label} -> sealed",
                sluice=sluice,
                baseline=baseline,
                baseline_name="line by line",
                ratio=ratio,
                target=f">= {TARGET} x line by line",
                met=ratio.median >= TARGET,
                details={"mb": megabytes},
            )
        )
    checkpoint_size = 16 * common.MiB if ctx.quick else 256 * common.MiB
    rows.append(checkpoints_while_reading(ctx, python_log("tracebacks", checkpoint_size).path))
    return rows


def checkpoints_while_reading(ctx: Context, traceback_log: Path) -> Row:
    """Case 5's measure on a backlog of tracebacks read with the python preset: checkpoint
    request -> sealed while the collector reads, p99."""
    backlog = ctx.work("multiline-backlog")
    data = traceback_log.read_bytes()
    for number in range(CHECKPOINT_FILES):
        (backlog / f"app-{number}.log").write_bytes(common.first_line(f"app-{number}") + data)
    loaded: list[float] = []
    idle: list[float] = []
    for _ in range(ctx.sizes.runs):
        under_load, after, _ = checkpoint_latency.measure(
            ctx.work("multiline-checkpoint"),
            [backlog],
            ctx.sizes,
            keys={"format": "raw", "multiline": MULTILINE},
            requests=max(4, ctx.sizes.checkpoint_requests // 5),
        )
        loaded += under_load
        idle += after
    ctx.work("multiline-checkpoint")
    ctx.work("multiline-backlog")
    if not loaded:
        raise RuntimeError("no checkpoint was sealed while the collector was reading")
    p99 = checkpoint_latency.percentile(loaded, 99)
    return Row(
        case="14",
        measure=f"checkpoint request -> sealed, reading tracebacks, p99 ({len(loaded)} requests)",
        sluice=Stat([p99], "ms"),
        baseline=Stat(idle, "ms"),
        baseline_name="idle collector",
        target=f"p99 <= {CHECKPOINT_TARGET_MS:.0f} ms",
        met=p99 <= CHECKPOINT_TARGET_MS,
        note=f"p50 {statistics.median(loaded):.0f} ms",
        details={"latencies_ms": loaded, "idle_ms": idle},
    )
