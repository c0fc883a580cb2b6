"""Many pipelines on one host: fairness, isolation and scale (one collector process).

1. Fairness: ``--pipelines`` pipelines (default 100), each tailing a file larger than the
   collector can read in ``--seconds`` (default 30); after that time, the share of bytes read
   per pipeline against an equal share (target: every pipeline within +-10%).
2. Isolation: pipeline B's read-to-sink throughput over ``--window`` seconds alone, then with
   pipeline A beside it whose sink is down (target: B within 10% of alone); A's queued chunks
   against its watermarks.
3. Scale: one pipeline with 1, 100 and 1,000 files (``--scale-mib`` MiB in all), each case in a
   fresh process: read throughput and peak RSS (target: under 200 MB at 1,000 files; memory
   not growing with the bytes read).

    .venv/bin/python bench/bench_pipelines.py [--seconds 30] [--pipelines 100] [--window 10]

Prints the figures and writes bench/results/pipelines.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline_core.collector import Collector  # noqa: E402
from pipeline_core.config import PipelineConfig, load_pipeline_config  # noqa: E402
from pipeline_core.metastore import Metastore  # noqa: E402
from pipeline_core.testing import RecordingSink, SwitchableSink, access_lines  # noqa: E402

BLOCK = b"\n".join(access_lines(20_000, seed=11)) + b"\n"


def fill(path: Path, size: int) -> None:
    """``size`` bytes of access-log lines; the first line names the file, so files never look
    like copies of each other (a copy of a live file is left alone until its truncation)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        written = handle.write(f"# {path} {size}\n".encode())
        while written < size:
            part = BLOCK[: size - written]
            part = part[: part.rfind(b"\n") + 1]
            if not part:  # less than a line to go
                break
            handle.write(part)
            written += len(part)


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started (``VmHWM``: unlike ``ru_maxrss``,
    not inherited from the parent through fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def config_for(work: Path, name: str, pattern: str, sinks: bool = False, **tuning: Any) -> Path:
    document: dict[str, Any] = {
        "name": name,
        "sources": [{"paths": [pattern], "format": "nginx_combined"}],
        "data_dir": str(work / "data"),
        "collector": {"host": "bench", **tuning},
    }
    if sinks:
        document["sinks"] = {"lake": {"type": "handoff"}, "side": {"type": "null"}}
        document["sink_groups"] = [
            {"name": "lake", "sinks": ["lake"]},
            {
                "name": "side",
                "sinks": ["side"],
                "backoff_sleep_increment_s": 0.01,
                "max_backoff_sleep_s": 0.05,
            },
        ]
    path = work / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


def run_for(collector: Collector, seconds: float) -> None:
    thread = threading.Thread(target=collector.run, daemon=True)
    thread.start()
    time.sleep(seconds)
    collector.stop()
    thread.join(timeout=600)


def fairness(work: Path, pipelines: int, seconds: float, mib_each: int) -> dict[str, Any]:
    configs: list[PipelineConfig] = []
    for index in range(pipelines):
        name = f"p{index:03d}"
        fill(work / "logs" / name / "app.log", mib_each * 1024 * 1024)
        configs.append(
            load_pipeline_config(config_for(work, name, str(work / "logs" / name / "*.log")))
        )
    metastore = Metastore.open(configs[0].metastore_url)
    collector = Collector()
    for config in configs:
        collector.add_pipeline(config, metastore)
    sampled: dict[str, int] = {}

    def sample() -> None:
        time.sleep(seconds)
        for m in collector.metrics():
            sampled[m.pipeline] = m.bytes_read
        collector.stop()

    threading.Thread(target=sample, daemon=True).start()
    collector.run()
    metastore.close()
    values = list(sampled.values())
    mean = statistics.fmean(values)
    deviations = [abs(v - mean) / mean for v in values]
    return {
        "pipelines": pipelines,
        "seconds": seconds,
        "bytes_read_total": sum(values),
        "mb_per_s": sum(values) / seconds / 1e6,
        "share_min": min(values) / mean,
        "share_max": max(values) / mean,
        "max_deviation": max(deviations),
        "caught_up": sum(1 for v in values if v >= mib_each * 1024 * 1024),
    }


def isolation(work: Path, window: float, runs: int) -> dict[str, Any]:
    """B alone, then B beside A whose sink is down, alternated ``runs`` times; medians."""
    logs = work / "logs"
    fill(logs / "b" / "app.log", int((window + 3) * 250e6))
    fill(logs / "a" / "app.log", 256 * 1024 * 1024)
    samples: dict[str, list[dict[str, Any]]] = {"alone": [], "beside_a_down_sink": []}
    for run in range(runs):
        for case in samples:
            run_dir = work / f"{case}-{run}"
            b = load_pipeline_config(
                config_for(run_dir, "b", str(logs / "b" / "*.log"), sinks=True)
            )
            metastore = Metastore.open(b.metastore_url)
            collector = Collector()
            collector.add_pipeline(b, metastore, sinks={"side": RecordingSink("side")})
            down = SwitchableSink("side", up=False)
            if case != "alone":
                a = load_pipeline_config(
                    config_for(run_dir, "a", str(logs / "a" / "*.log"), sinks=True)
                )
                collector.add_pipeline(a, metastore, sinks={"side": down})
            sampled: dict[str, Any] = {}

            def sample(
                collector: Collector = collector,
                sampled: dict[str, Any] = sampled,
                down: SwitchableSink = down,
            ) -> None:
                time.sleep(2.0)  # warm up
                start = {m.pipeline: m.bytes_sent for m in collector.metrics()}
                time.sleep(window)
                for m in collector.metrics():
                    sampled[m.pipeline] = {
                        "mb_per_s": (m.bytes_sent - start[m.pipeline]) / window / 1e6,
                        "process_queue": m.queues["process"].size,
                        "send_queue": m.queues["send"].size,
                        "high": m.queues["process"].high,
                        "trees_in_flight": m.trees_in_flight,
                    }
                down.up = True  # so A can seal what it read, and the run can end
                collector.stop()

            threading.Thread(target=sample, daemon=True).start()
            collector.run()
            metastore.close()
            samples[case].append(sampled)
            shutil.rmtree(run_dir, ignore_errors=True)
    alone = statistics.median(s["b"]["mb_per_s"] for s in samples["alone"])
    beside = statistics.median(s["b"]["mb_per_s"] for s in samples["beside_a_down_sink"])
    return {
        "runs": samples,
        "b_alone_mb_per_s": alone,
        "b_beside_mb_per_s": beside,
        "b_ratio": beside / alone,
        "a_last": samples["beside_a_down_sink"][-1]["a"],
    }


def scale_case(work: Path, files: int, total_mib: int) -> dict[str, Any]:
    """Run in a fresh process (``--scale-case``): its peak RSS is this case's alone."""
    size = total_mib * 1024 * 1024 // files
    for index in range(files):
        fill(work / "logs" / f"f{index:04d}.log", size)
    config = load_pipeline_config(config_for(work, "scale", str(work / "logs" / "*.log")))
    metastore = Metastore.open(config.metastore_url)
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    result = Collector(config, metastore).run_once()
    elapsed = time.perf_counter() - started
    metastore.close()
    return {
        "files": files,
        "mb": result.bytes / 1e6,
        "mb_per_s": result.bytes / elapsed / 1e6,
        "peak_rss_mb": peak_rss_mb(),
        "rss_before_mb": rss_before,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--pipelines", type=int, default=100)
    parser.add_argument("--window", type=float, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale-mib", type=int, default=512)
    parser.add_argument("--scale-case", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale_case is not None:
        print(json.dumps(scale_case(args.work, args.scale_case, args.scale_mib)))
        return
    (ROOT / "bench" / "data").mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=ROOT / "bench" / "data") as scratch:
        work = Path(scratch)
        # Each file holds 1.5x what an equal share of ~150 MB/s would read in the window.
        mib_each = max(8, int(150 * args.seconds * 1.5 / args.pipelines))
        report["fairness"] = fairness(work / "fair", args.pipelines, args.seconds, mib_each)
        shutil.rmtree(work / "fair", ignore_errors=True)
        f = report["fairness"]
        print(
            f"fairness: {f['pipelines']} pipelines, {f['seconds']:.0f} s, "
            f"{f['mb_per_s']:.0f} MB/s in all; share of an equal share min {f['share_min']:.3f} "
            f"max {f['share_max']:.3f} (max deviation {f['max_deviation'] * 100:.1f}%, "
            f"{f['caught_up']} caught up)"
        )
        report["isolation"] = isolation(work / "iso", args.window, args.runs)
        shutil.rmtree(work / "iso", ignore_errors=True)
        i = report["isolation"]
        a = i["a_last"]
        print(
            f"isolation: B alone {i['b_alone_mb_per_s']:.0f} MB/s, beside A with its sink down "
            f"{i['b_beside_mb_per_s']:.0f} MB/s (ratio {i['b_ratio']:.2f}, medians of "
            f"{args.runs}); A queued {a['process_queue']} + {a['send_queue']} chunks "
            f"(high {a['high']} each), {a['trees_in_flight']} trees in flight"
        )
        report["scale"] = []
        for files in (1, 100, 1000):
            case_dir = work / f"scale-{files}"
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--scale-case",
                    str(files),
                    "--scale-mib",
                    str(args.scale_mib),
                    "--work",
                    str(case_dir),
                ],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            case = json.loads(out.stdout.strip().splitlines()[-1])
            report["scale"].append(case)
            shutil.rmtree(case_dir, ignore_errors=True)
            print(
                f"scale: {files:>5} files, {case['mb']:.0f} MB: {case['mb_per_s']:.0f} MB/s, "
                f"peak RSS {case['peak_rss_mb']:.0f} MB "
                f"(before the run {case['rss_before_mb']:.0f})"
            )
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "pipelines.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
