"""Where the landing's time goes, against Spark's floor: phase timings and variants.

Usage::

    .venv/bin/python -m bench.profile_landing [--parts N] [--runs R]

It collects the many-files data set of case 3 (50 x 20 MiB) into one checkpoint, lands it
in-process once with each phase of ``spark_jobs.landing.land`` timed (part checks on the
driver, the write jobs, which also count the rows reconciled, the commits), then runs variants
of the write job on the first ``--parts`` part files (the same bytes for each), ``--runs`` times
interleaved, each from the page cache:

* ``floor``: ``spark.read.text`` of the parts, the nginx parse and casts, Parquet (case 3's
  floor, on the staged bytes);
* ``landing``: the landing's read (segments split in Python workers, ``mapInArrow``), parse
  (observing the source files with rejects) and write (``write_files``, observing the rows
  per checkpoint);
* ``landing_no_event_id``: the same without the ``event_id`` column;
* ``text_read``: the landing's parse and write fed by ``spark.read.text`` of the parts instead
  (constant fingerprint and host, ``monotonically_increasing_id`` for offsets): what the
  Python read costs;
* ``landing_noop`` / ``floor_noop``: read and parse into Spark's ``noop`` sink (no Parquet);
* ``read_noop`` / ``text_noop``: reading the lines only.

For each: wall seconds, and CPU seconds of this process's children split into the JVM and the
Python workers (``/proc``: steadier than wall time on a shared machine). Medians are printed
at the end, with the load average.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import common
from bench.cases import lake as case

PHASES = ("verify_parts", "write_files", "commit_files")


def process_cpu() -> dict[str, float]:
    """CPU seconds (user + system, with reaped children) of this process's descendants, by
    kind: ``jvm`` or ``python`` (the workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                comm, fields = handle.read().split(" (", 1)[1].rsplit(") ", 1)
        except (OSError, IndexError, ValueError):
            continue
        values = [comm, *fields.split()]
        children.setdefault(int(values[2]), []).append((int(name), values))
    totals = {"jvm": 0.0, "python": 0.0}
    stack = [os.getpid()]
    while stack:
        for pid, values in children.get(stack.pop(), []):
            kind = "jvm" if values[0].startswith("java") else "python"
            totals[kind] += sum(int(v) for v in values[12:16]) / tick
            stack.append(pid)
    return totals


def timed_phases(module: Any, timings: dict[str, float]) -> None:
    for name in PHASES:
        original = getattr(module, name)

        def wrapped(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return _original(*args, **kw)
            finally:
                timings[_name] = timings.get(_name, 0.0) + time.perf_counter() - started

        setattr(module, name, functools.wraps(original)(wrapped))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=int, default=2, help="part files for the variants")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import DataFrame, Observation
    from pyspark.sql import functions as F

    import spark_jobs.landing as landing_module
    from spark_jobs.checkpoint import read_checkpoint
    from spark_jobs.formats import nginx_scanner, parse
    from spark_jobs.lake import write_files

    scratch = common.DATA / "scratch" / "profile-landing"
    shutil.rmtree(scratch, ignore_errors=True)
    folder = common.small_logs(50, 20 * common.MiB)
    spark = common.make_spark(scratch / "spark")
    spark.range(1).count()
    load = [os.getloadavg()[0]]

    work = scratch / "work"
    work.mkdir(parents=True)
    common.warm(folder)
    collected = common.collect_once(common.pipeline_config(work, folder))
    lake = case.lake_location(work)
    timings: dict[str, float] = {}
    timed_phases(landing_module, timings)
    common.warm(Path(collected.checkpoint_dir))
    timings["landing (land_and_commit)"] = common.timed(
        functools.partial(case.land_and_commit, spark, lake, collected)
    )
    print("phases of one landing of 1 GiB (s):", json.dumps(timings, indent=1), flush=True)

    scanner = nginx_scanner(spark)
    parts = [p for p in read_checkpoint(collected.checkpoint_dir).parts if p.entry.rows]
    parts = parts[: args.parts]
    paths = [part.path for part in parts]
    out = str(scratch / "out")

    def landing_rows() -> DataFrame:
        return landing_module.read_source(spark, parts, "access")

    def text_rows() -> DataFrame:
        return (
            spark.read.option("lineSep", "\n")
            .text(paths)
            .select(
                F.lit(parts[0].entry.segments[0].file_fingerprint).alias("file_fingerprint"),
                F.monotonically_increasing_id().alias("byte_offset"),
                F.col("value").cast("binary").alias("line"),
                F.lit(parts[0].host).alias("host"),
                F.lit(parts[0].checkpoint_id).cast("long").alias("checkpoint_id"),
                F.lit("access").alias("source"),
                F.lit(parts[0].sealed_at).alias("sealed_at"),
                F.lit(None).cast("long").alias("line_bytes"),
            )
        )

    def noop(frame: DataFrame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def write(frame: DataFrame) -> None:
        shutil.rmtree(out, ignore_errors=True)
        checkpoints = [parts[0].checkpoint_id]
        write_files(frame, out, "event_time", ("host", "file_fingerprint"), checkpoints=checkpoints)

    def parsed(frame: DataFrame) -> DataFrame:
        # as the landing parses
        return parse(frame, "nginx_combined", rejected=Observation(), scanner=scanner)[0]

    staged = scratch / "staged"
    staged.mkdir()
    for path in paths:  # the floor reads the same bytes as plain files
        os.symlink(path, staged / (Path(path).parent.name + "-" + Path(path).name))

    def floor() -> None:
        shutil.rmtree(out, ignore_errors=True)
        case.spark_floor(spark, staged, Path(out))

    variants: dict[str, Callable[[], None]] = {
        "floor": floor,
        "landing": lambda: write(parsed(landing_rows())),
        "landing_no_event_id": lambda: write(parsed(landing_rows()).drop("event_id")),
        "text_read": lambda: write(parsed(text_rows())),
        "landing_noop": lambda: noop(parsed(landing_rows())),
        "read_noop": lambda: noop(landing_rows()),
        "text_noop": lambda: noop(text_rows()),
    }
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, variant in variants.items():
            for path in paths:
                common.warm(Path(path))
            before = process_cpu()
            wall[name].append(common.timed(variant))
            after = process_cpu()
            cpu[name].append({kind: after[kind] - before[kind] for kind in after})
        load.append(os.getloadavg()[0])
    megabytes = sum(part.entry.bytes for part in parts) / 1e6
    print(f"variants on {len(parts)} parts ({megabytes:.0f} MB), medians of {args.runs}:")
    for name in variants:
        jvm = statistics.median(c["jvm"] for c in cpu[name])
        python = statistics.median(c["python"] for c in cpu[name])
        print(
            f"  {name:22s} wall {statistics.median(wall[name]):6.2f} s   "
            f"CPU jvm {jvm:6.2f} s  python workers {python:5.2f} s"
        )
    print(f"load average (1 min) at the start and after each round: {load}")
    spark.stop()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
