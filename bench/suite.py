"""The benchmark suite of issue 8: Sluice against the machine's limit and against the tools
users would pick instead, in one run, one table.

    .venv/bin/python -m bench.suite [--quick] [--only CASE ...] [--runs N]
        [--tail-seconds S] [--huge] [--no-profile] [--no-spark-submit]
        [--fleet-sizes N ...] [--fleet-minutes M] [--fleet-pooler]

Cases (``--only`` takes the numbers or the names):

====  ===========  ===================================================================
 1    throughput   collector files -> sealed batches vs ``cp`` + sync
 2    pygtail      collector vs pygtail reading the same file into Parquet
 3    lake         files -> lake tables: collector + landing job vs Structured Streaming
 4    tailing      CPU of ``sluice collect`` tailing a file appended at 10 MB/s
 5    checkpoint   checkpoint request -> sealed, while the collector reads at full speed
 6    memory       collector peak RSS for 1 GiB, 10 GiB (``--huge``), 1,000 files
 7    acker        acker tree operations/s; metastore transactions per checkpoint
 8    latency      write -> sink latency of a tailed line, file events vs polling
 9    tables       13 checkpoints in one landing job; compaction of a day
 10   freshness    write -> queryable under a real Airflow schedule, every minute
 11   upload       collector sealing into S3 (loopback moto) vs sealing on local disk
 12   warm         a 20k-line checkpoint, request -> committed: Spark Connect vs spark-submit
 13   landstore    landing a checkpoint from S3 (loopback moto) vs from local disk
 14   multiline    collector with the python multiline preset vs line by line
 15   idle         CPU and RSS of a collector serving 100 pipelines x 10 files, nothing written
 16   manyfiles    10,000 files in 1,000 folders, 1 % written, containers coming and going
 17   metadata     a table's metadata over 2,000 landings' commits with maintenance
 18   formats      landing python_logging, spark_log4j, syslog_rfc5424 vs Spark's own parse
 19   soak         an hour of tailing, rotation, landings and maintenance: nothing grows
 20   fleet        1-64 collectors of one pipeline on one PostgreSQL, a checkpoint every 30 s
====  ===========  ===================================================================

Cases 19 (an hour) and 20 (about 20 minutes) run only when ``--only`` names them.

Every case runs ``--runs`` times (3; 2 with ``--quick``); the table shows medians with
min-max and the ratios against the baselines measured in the same run, and the same figures
go to ``bench/results/suite-<time>.json`` (and ``suite-latest.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import shutil
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from bench import common
from bench.cases import (
    acker_metastore,
    checkpoint_latency,
    fleet,
    formats,
    freshness,
    idle_pipelines,
    lake,
    lake_metadata,
    lake_tables,
    landing_store,
    many_files,
    memory,
    multiline,
    pygtail_peer,
    soak,
    tail_latency,
    tailing,
    throughput,
    upload,
    warm_spark,
)
from bench.common import Context, Row

CASES: dict[str, tuple[str, Callable[[Context], list[Row]]]] = {
    "1": ("throughput", throughput.run),
    "2": ("pygtail", pygtail_peer.run),
    "3": ("lake", lake.run),
    "4": ("tailing", tailing.run),
    "5": ("checkpoint", checkpoint_latency.run),
    "6": ("memory", memory.run),
    "7": ("acker", acker_metastore.run),
    "8": ("latency", tail_latency.run),
    "9": ("tables", lake_tables.run),
    "10": ("freshness", freshness.run),
    "11": ("upload", upload.run),
    "12": ("warm", warm_spark.run),
    "13": ("landstore", landing_store.run),
    "14": ("multiline", multiline.run),
    "15": ("idle", idle_pipelines.run),
    "16": ("manyfiles", many_files.run),
    "17": ("metadata", lake_metadata.run),
    "18": ("formats", formats.run),
    "19": ("soak", soak.run),
    "20": ("fleet", fleet.run),
}
NAMED_ONLY = {"19", "20"}
"""Cases a run without ``--only`` leaves out: they take from 20 minutes to an hour or more."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.suite", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", nargs="+", metavar="CASE", help="cases to run, by number or name")
    parser.add_argument("--runs", type=int, help="runs per case (default 3, quick 2)")
    parser.add_argument(
        "--tail-seconds", type=float, help="case 4: how long the writer appends (default 60)"
    )
    parser.add_argument(
        "--huge", action="store_true", help="case 6: also the 10 GiB input (made on first use)"
    )
    parser.add_argument(
        "--soak-minutes", type=float, help="case 19: how long the soak runs (default 60)"
    )
    parser.add_argument("--no-profile", action="store_true", help="case 1: skip py-spy")
    parser.add_argument(
        "--no-spark-submit",
        action="store_true",
        help="cases 3, 9, 10: skip timing the landing job through spark-submit",
    )
    parser.add_argument(
        "--fleet-sizes",
        type=int,
        nargs="+",
        metavar="N",
        help="case 20: the numbers of collectors (default 1 8 32 64, quick 1 4)",
    )
    parser.add_argument(
        "--fleet-minutes",
        type=float,
        metavar="M",
        help="case 20: the measured window per number of collectors (default 3, quick 1)",
    )
    parser.add_argument(
        "--fleet-pooler",
        action="store_true",
        help="case 20: the collectors reach PostgreSQL through PgBouncer (transaction mode)",
    )
    return parser.parse_args(argv)


def selected(only: list[str] | None) -> list[str]:
    if not only:
        return [number for number in CASES if number not in NAMED_ONLY]
    by_name = {name: number for number, (name, _) in CASES.items()}
    chosen = []
    for item in only:
        number = item if item in CASES else by_name.get(item)
        if number is None:
            raise SystemExit(
                f"unknown case {item!r}; cases: {', '.join(by_name)} or {', '.join(CASES)}"
            )
        chosen.append(number)
    return sorted(set(chosen), key=int)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    sizes = common.QUICK if args.quick else common.FULL
    if args.runs:
        sizes = dataclasses.replace(sizes, runs=args.runs)
    if args.tail_seconds:
        sizes = dataclasses.replace(sizes, tail_seconds=args.tail_seconds)
    scratch = common.DATA / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    ctx = Context(
        sizes=sizes,
        quick=args.quick,
        scratch=scratch,
        profile=not args.no_profile,
        huge=args.huge,
        spark_submit=not args.no_spark_submit,
        soak_minutes=args.soak_minutes,
        fleet_sizes=tuple(args.fleet_sizes or ()),
        fleet_minutes=args.fleet_minutes,
        fleet_pooler=args.fleet_pooler,
    )
    meta: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "sizes": dataclasses.asdict(sizes),
        "machine_at_start": common.machine(),
        "code": common.code_version(),
    }
    rows: list[Row] = []
    failed: list[str] = []
    started = time.monotonic()
    try:
        for number in selected(args.only):
            name, case = CASES[number]
            print(f"== case {number} ({name})", file=sys.stderr, flush=True)
            case_started = time.monotonic()
            try:
                rows += case(ctx)
            except Exception:
                failed.append(number)
                traceback.print_exc()
            print(f"   {time.monotonic() - case_started:.0f} s", file=sys.stderr, flush=True)
    finally:
        ctx.close()
        shutil.rmtree(scratch, ignore_errors=True)
    meta["machine_at_end"] = common.machine()
    meta["seconds"] = time.monotonic() - started
    meta["failed_cases"] = failed
    path = common.write_results(rows, meta)
    loads = meta["machine_at_start"]["load_average"][0], meta["machine_at_end"]["load_average"][0]
    print()
    print(
        f"Sluice benchmark suite ({meta['mode']}, {sizes.runs} runs per case, "
        f"{meta['machine_at_start']['cpus']} cores, load average {loads[0]:.1f} at start and "
        f"{loads[1]:.1f} at end; medians [min-max]; ratios are run by run)"
    )
    code = meta["code"]
    if code["commit"]:
        changed = (
            f", with uncommitted {', '.join(code['uncommitted'])}" if code["uncommitted"] else ""
        )
        print(f"code: {code['commit']}{changed}")
    print(common.format_table(rows))
    print(f"\nresults: {path.relative_to(common.ROOT)}  ({meta['seconds'] / 60:.1f} min)")
    if failed:
        print(f"FAILED cases: {', '.join(failed)} (tracebacks above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
