"""Case 2: the collector against a Python peer, pygtail, on the same file.

pygtail ("tail with offsets") is what a Python user would reach for to read a log once and
remember where they stopped. The closest equivalent of Sluice's handoff (raw lines in part
files) is a script that iterates ``Pygtail(path)`` and writes every line it reads to a file
(buffered, 16 MiB at a time), then fsyncs it; pygtail saves the file's offset when it reaches
the end (``save_on_end``), as a checkpoint records offsets. It runs in a fresh process, timed
inside it, from the page cache.

Sluice: the same collection as case 1 (reused when case 1 ran on the same file in this run).
Figures are input MB per second; the ratio is Sluice / pygtail. Target: at least 10.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench import common
from bench.cases.throughput import collect_in_child
from bench.common import Context, Row, Stat, paired_ratio

TARGET = 10.0
WRITE_BUFFER_BYTES = 16 * common.MiB


def run(ctx: Context) -> list[Row]:
    path = common.big_log(ctx.sizes.big_file)
    megabytes = common.size_of(path) / 1e6
    pygtail_seconds = []
    for _ in range(ctx.sizes.runs):
        work = ctx.work("pygtail")
        common.warm(path)
        result = common.run_child("bench.cases.pygtail_peer", str(path), str(work))
        pygtail_seconds.append(float(result["seconds"]))
    ctx.work("pygtail")
    sluice = ctx.shared.get(f"collector:{path}")
    reused = sluice is not None
    if sluice is None:
        seconds = []
        for _ in range(ctx.sizes.runs):
            common.warm(path)
            seconds.append(collect_in_child(ctx.work("collect"), path).seconds)
        ctx.work("collect")
        sluice = Stat([megabytes / s for s in seconds], "MB/s")
    peer = Stat([megabytes / s for s in pygtail_seconds], "MB/s")
    ratio = paired_ratio(sluice.values, peer.values)
    return [
        Row(
            case="2",
            measure=f"collector vs pygtail, 1 x {ctx.sizes.big_file // common.MiB} MiB",
            sluice=sluice,
            baseline=peer,
            baseline_name="pygtail->file",
            ratio=ratio,
            target=f">= {TARGET:.0f} x pygtail",
            met=ratio.median >= TARGET,
            note="pygtail iterates lines (text mode) into a file, fsync, offset file at the end"
            + ("; Sluice figures are case 1's" if reused else ""),
            details={"mb": megabytes, "pygtail_s": pygtail_seconds},
        )
    ]


def tail_into_file(log: Path, work: Path) -> float:
    """What a pygtail user writes: read the unread lines, store them, remember the offset."""
    from pygtail import Pygtail

    output = work / "lines.log"
    started = time.perf_counter()
    tail = Pygtail(str(log), offset_file=str(work / "access.log.offset"))
    with open(output, "w", encoding="utf-8", buffering=WRITE_BUFFER_BYTES) as handle:
        for line in tail:
            handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    return time.perf_counter() - started


def main() -> None:
    """Child: pygtail ``log`` into ``work``; print the seconds as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("log", type=Path)
    parser.add_argument("work", type=Path)
    args = parser.parse_args()
    print(json.dumps({"seconds": tail_into_file(args.log, args.work)}))


if __name__ == "__main__":
    main()
