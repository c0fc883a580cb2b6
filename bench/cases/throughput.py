"""Case 1: collector throughput against ``cp``, the physical limit of reading and writing the
bytes once.

Sluice: a fresh process collects the input to its end and seals one checkpoint (time-sliced
reader, stage queues, ring, handoff sink writing raw part files, XOR acker, SQLite metastore,
fsync of every part and of the manifest): ``Collector.run_once``, timed inside the process.
Baseline: ``cp --reflink=never`` of the same files onto the same disk, then ``sync`` of the
copies (an fsync of each). Both start from the page cache, with the other's output deleted
(``clear_outputs``). Figures are input MB per second;
the ratio is Sluice / ``cp``, run by run. Target (issue 8): at least 0.8.

With py-spy on the PATH or in the virtualenv, one more collection of the large file runs under
``py-spy record -f raw``; :mod:`bench.cases.profile` sums up where its time went.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

from bench import common
from bench.cases import profile
from bench.common import Context, Row, Stat, paired_ratio

TARGET = 0.8


def run(ctx: Context) -> list[Row]:
    sizes = ctx.sizes
    inputs = [
        (f"1 x {sizes.big_file // common.MiB} MiB", common.big_log(sizes.big_file)),
        (
            f"{sizes.small_files} x {sizes.small_file // common.MiB} MiB",
            common.small_logs(sizes.small_files, sizes.small_file),
        ),
    ]
    rows = []
    for label, path in inputs:
        megabytes = common.size_of(path) / 1e6
        cp_seconds: list[float] = []
        sluice_seconds: list[float] = []
        sluice_cpu: list[float] = []
        for _ in range(sizes.runs):
            clear_outputs(ctx)
            common.warm(path)
            cp_seconds.append(time_cp(path, ctx.work("cp")))
            clear_outputs(ctx)
            common.warm(path)
            collected = collect_in_child(ctx.work("collect"), path)
            sluice_seconds.append(collected.seconds)
            sluice_cpu.append(collected.cpu_seconds)
        clear_outputs(ctx)
        sluice = Stat([megabytes / s for s in sluice_seconds], "MB/s")
        cp = Stat([megabytes / s for s in cp_seconds], "MB/s")
        ratio = paired_ratio(sluice.values, cp.values)
        rows.append(
            Row(
                case="1",
                measure=f"collector {label} -> sealed",
                sluice=sluice,
                baseline=cp,
                baseline_name="cp+sync",
                ratio=ratio,
                target=f">= {TARGET} x cp",
                met=ratio.median >= TARGET,
                note=f"CPU {Stat([c / megabytes * 1000 for c in sluice_cpu], 's').median:.2f} s"
                " per GB (user + system, all threads)",
                details={
                    "mb": megabytes,
                    "sluice_s": sluice_seconds,
                    "sluice_cpu_s": sluice_cpu,
                    "cp_s": cp_seconds,
                },
            )
        )
        ctx.shared[f"collector:{path}"] = sluice
    if ctx.profile:
        rows[0].details["profile"] = profile_collection(ctx, inputs[0][1])
        summary = rows[0].details["profile"]
        if "error" not in summary:
            rows[0].note = f"{rows[0].note}; {profile.headline(summary)}"
    return rows


def clear_outputs(ctx: Context) -> None:
    """Delete both contestants' output before either runs, so that each writes into memory the
    other just gave back. (On this kind of virtual machine, memory not touched for a while is
    handed back to the host, and writing into it again costs several times more system time:
    a ``cp`` of 1 GiB measured 0.4 s after deleting an earlier copy and 3.0 s while it was
    still there. Without this, whoever runs second pays for the first's output.)"""
    ctx.work("cp")
    ctx.work("collect")


def time_cp(source: Path, target: Path) -> float:
    """``cp`` the input's files into ``target`` and fsync the copies."""
    files = common.log_files(source)
    copies = [str(target / f.name) for f in files]

    def copy() -> None:
        subprocess.run(
            ["cp", "--reflink=never", *map(str, files), str(target)], check=True, timeout=3600
        )
        subprocess.run(["sync", *copies], check=True, timeout=3600)

    return common.timed(copy)


def collect_in_child(
    work: Path, source: Path, keys: dict[str, object] | None = None
) -> common.Collected:
    """Collect ``source`` in a fresh process (so nothing of this one, Spark included, shares
    its interpreter) and return what it reports; ``keys``: more keys of the source."""
    config = common.pipeline_config(work, source, source=keys)
    return common.Collected(**common.run_child("bench.cases.throughput", str(config)))


def profile_collection(ctx: Context, source: Path) -> dict[str, object]:
    """One more collection of ``source`` under py-spy; the summary of its samples."""
    spy = profile.find_py_spy()
    if spy is None:
        return {"error": "py-spy not found (pip install py-spy to profile)"}
    work = ctx.work("profile")
    config = common.pipeline_config(work, source)
    raw = common.RESULTS / "profile-collector.raw"
    common.RESULTS.mkdir(parents=True, exist_ok=True)
    common.warm(source)
    command = [common.PYTHON, "-m", "bench.cases.throughput", str(config)]
    try:
        output = profile.record(spy, command, raw, rate=profile.RATE)
    except RuntimeError as exc:
        return {"error": str(exc)}
    reported = [line for line in output.splitlines() if line.startswith("{")]
    seconds = float(json.loads(reported[-1])["seconds"])
    summary = profile.summarize(raw, seconds, rate=profile.RATE)
    text = profile.report(summary)
    (common.RESULTS / "profile-collector.txt").write_text(text + "\n")
    ctx.work("profile")
    return summary


def main() -> None:
    """Child: collect once with the config given, print the result as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    args = parser.parse_args()
    print(json.dumps(asdict(common.collect_once(args.config))))


if __name__ == "__main__":
    main()
