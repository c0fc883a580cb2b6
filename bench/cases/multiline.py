"""Case 14: what joining lines into events costs the collector.

Sluice with a multiline source (``multiline: {preset: python}``) against the same collector
reading the same file line by line (no ``multiline``), run by run in turns: a fresh process
collects the file to its end and seals one checkpoint (``Collector.run_once``, as case 1), and
the figure is input MB per second. Two files, both written by Python's ``logging`` (the
project's log-writing program, ``tests/support/python_log_program.py``, run once and its
output repeated up to the size): one of short single-line events, where the preset finds
nothing to join and costs only its scan; one where half the events are ``logger.exception``
tracebacks (chained, exception groups, carets), where it joins most lines. Target (issue 28):
at least 0.8 x the line-by-line rate on both.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from bench import common
from bench.cases.throughput import collect_in_child
from bench.common import Context, Row, Stat, paired_ratio

TARGET = 0.8
PROGRAM = common.ROOT / "tests" / "support" / "python_log_program.py"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SEED_EVENTS = {"lines": 100_000, "tracebacks": 10_000}
"""Events the program writes once per file; the file repeats them up to its size."""
TRACEBACK_SHARE = {"lines": 0.0, "tracebacks": 0.5}
MULTILINE = {"preset": "python"}


def python_log(kind: str, size: int) -> Path:
    """``bench/data/pylog-<kind>-<MiB>m/app.log``: the program's output, repeated to ``size``."""

    def build(folder: Path) -> None:
        seed = folder / "seed.log"
        subprocess.run(
            [
                common.PYTHON,
                str(PROGRAM),
                "--log",
                str(seed),
                "--truth",
                os.devnull,
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
        data = seed.read_bytes()
        with open(folder / "app.log", "wb") as out:
            written = 0
            while written < size:
                out.write(data)
                written += len(data)
        seed.unlink()

    folder = common._dataset(f"pylog-{kind}-{size // common.MiB}m", {"size": size}, build)
    return folder / "app.log"


def run(ctx: Context) -> list[Row]:
    size = 16 * common.MiB if ctx.quick else 256 * common.MiB
    rows = []
    for kind, label in (("lines", "one-line events"), ("tracebacks", "half tracebacks")):
        path = python_log(kind, size)
        megabytes = common.size_of(path) / 1e6
        plain: list[float] = []
        joined: list[float] = []
        for _ in range(ctx.sizes.runs):
            for seconds, source in ((plain, None), (joined, MULTILINE)):
                work = ctx.work("multiline")
                common.warm(path)
                keys: dict[str, object] = {"format": "raw", "multiline": source}
                seconds.append(megabytes / collect_in_child(work, path, keys).seconds)
        ctx.work("multiline")
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
    return rows
