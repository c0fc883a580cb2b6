"""Collector throughput: files -> sealed handoff batches, against `cp` of the same bytes.

Run: ``.venv/bin/python bench/bench_collector.py [--mib 256] [--runs 3]``. Generates nginx
"combined" logs deterministically under bench/data, then for each run copies them with ``cp``
(the physical limit of reading and writing the bytes once) and collects them with
``sluice collect --once`` semantics (acker-free spine path: reader, ring, Parquet handoff, SQLite
metastore, fsync at the seal). Prints medians, min-max and the ratio; writes
bench/results/collector.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline_core.collector import Collector  # noqa: E402
from pipeline_core.config import load_pipeline_config  # noqa: E402
from pipeline_core.metastore import Metastore  # noqa: E402
from pipeline_core.testing import access_lines  # noqa: E402


def generate(folder: Path, mib: int, files: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    target = mib * 1024 * 1024 // files
    total = 0
    for index in range(files):
        path = folder / f"access-{index}.log"
        if path.exists() and path.stat().st_size >= target:
            total += path.stat().st_size
            continue
        with open(path, "wb") as handle:
            written = 0
            seed = index
            while written < target:
                block = b"\n".join(access_lines(20_000, seed=seed)) + b"\n"
                handle.write(block)
                written += len(block)
                seed += 1000
        total += path.stat().st_size
    return total


def time_cp(source: Path, scratch: Path) -> float:
    target = scratch / "cp"
    shutil.rmtree(target, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)
    subprocess.run(["sync"], check=True)
    return time.perf_counter() - started


def time_collect(source: Path, scratch: Path) -> float:
    work = scratch / "sluice"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    config_path = work / "bench.yaml"
    config_path.write_text(
        f'name: bench\nsources:\n  - name: access\n    paths: ["{source}/*.log"]\n'
        "    format: nginx_combined\ndata_dir: data\n"
    )
    config = load_pipeline_config(config_path)
    metastore = Metastore.open(config.metastore_url)
    try:
        started = time.perf_counter()
        result = Collector(config, metastore).run_once()
        elapsed = time.perf_counter() - started
    finally:
        metastore.close()
    assert result.sealed and result.sealed[0].bytes > 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = ROOT / "bench" / "data" / f"nginx-{args.mib}m"
    size = generate(data, args.mib, args.files)
    results: dict[str, list[float]] = {"cp": [], "sluice": []}
    with tempfile.TemporaryDirectory(dir=ROOT / "bench" / "data") as scratch:
        for _ in range(args.runs):
            results["cp"].append(time_cp(data, Path(scratch)))
            results["sluice"].append(time_collect(data, Path(scratch)))
    mb = size / 1e6
    print(f"{'case':<10}{'median MB/s':>14}{'min-max MB/s':>22}")
    rates = {}
    for case, times in results.items():
        rates[case] = mb / statistics.median(times)
        print(f"{case:<10}{rates[case]:>14.0f}{mb / max(times):>12.0f}-{mb / min(times):<9.0f}")
    ratio = rates["sluice"] / rates["cp"]
    print(f"sluice / cp = {ratio:.2f} ({mb:.0f} MB, {args.files} files, {args.runs} runs)")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "collector.json").write_text(
        json.dumps({"mb": mb, "seconds": results, "mb_per_s": rates, "ratio": ratio}, indent=1)
    )


if __name__ == "__main__":
    main()
