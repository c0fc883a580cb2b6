"""Case 6: the collector's peak memory, against the size of its input and its number of files.

Each measurement is a fresh process that runs ``sluice collect --once`` (``pipeline_core.cli``)
on one input and then reads its own ``VmHWM`` from ``/proc/self/status``: the peak resident
memory of that process alone (``ru_maxrss`` would not do: a child inherits its parent's through
fork and exec). Inputs: the large file (1 GiB), ten times that (``--huge``; 10 GiB made on first
use, by copying within the kernel), and 1,000 small files. The baseline column is the same
process's peak right after importing everything, before collecting: the interpreter and its
libraries, which no input size changes. Target: at most 150 MB, flat in the input size (the
10 GiB peak within 10% of the 1 GiB peak).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench import common
from bench.common import Context, Row, Stat

TARGET_MB = 150.0
FLAT_WITHIN = 1.10


def run(ctx: Context) -> list[Row]:
    sizes = ctx.sizes
    big = common.big_log(sizes.big_file)
    inputs = [(f"1 x {sizes.big_file // common.MiB} MiB", big, sizes.runs)]
    if ctx.huge:
        huge = common.huge_log(sizes.huge_factor, big)
        inputs.append((f"1 x {common.size_of(huge) / common.GiB:.0f} GiB", huge, 1))
    many = common.many_logs(sizes.many_files, sizes.many_file)
    inputs.append((f"{sizes.many_files} files x {sizes.many_file // 1024} KiB", many, sizes.runs))
    rows = []
    first_peak: float | None = None
    for label, path, runs in inputs:
        megabytes = common.size_of(path) / 1e6
        peaks, floors, rates = [], [], []
        for _ in range(runs):
            work = ctx.work("memory")
            if megabytes <= 2000:  # a larger input does not stay in the page cache anyway
                common.warm(path)
            measured = common.run_child(
                "bench.cases.memory", str(common.pipeline_config(work, path))
            )
            peaks.append(measured["peak_mb"])
            floors.append(measured["imported_mb"])
            rates.append(megabytes / measured["seconds"])
        ctx.work("memory")
        peak = Stat(peaks, "MB")
        flat = first_peak is None or path.is_dir() or peak.median <= first_peak * FLAT_WITHIN
        if first_peak is None:
            first_peak = peak.median
        rows.append(
            Row(
                case="6",
                measure=f"collector peak RSS (VmHWM), {label}",
                sluice=peak,
                baseline=Stat(floors, "MB"),
                baseline_name="after imports",
                target=f"<= {TARGET_MB:.0f} MB, flat",
                met=peak.median <= TARGET_MB and flat,
                note=f"collected at {Stat(rates, 'MB/s').text()}",
            )
        )
    return rows


def main() -> None:
    """Child: ``sluice collect --once CONFIG``, then print this process's peak memory."""
    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    args = parser.parse_args()
    from pipeline_core import cli
    from pipeline_core.collector import Collector  # noqa: F401  (what collect imports)
    from pipeline_core.operations import PipelineOperations  # noqa: F401

    imported = common.status_kib("self", "VmHWM") / 1024
    started = time.perf_counter()
    code = cli.main(["collect", "--once", str(args.config)])
    seconds = time.perf_counter() - started
    if code != 0:
        sys.exit(code)
    peak = common.status_kib("self", "VmHWM") / 1024
    print(json.dumps({"peak_mb": peak, "imported_mb": imported, "seconds": seconds}))


if __name__ == "__main__":
    main()
