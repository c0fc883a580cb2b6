"""The landing job's entry point: spark-submit runs this file for one sealed checkpoint.

Usage (from the repository root; on a cluster ship the archive ``pipeline_core.landing`` builds
with ``--py-files``)::

    spark-submit --master local[2] spark_jobs/land_checkpoint.py \\
        --checkpoint-dir <staging>/<pipeline>/<checkpoint:08d> --lake <lake root> \\
        [--hosts web-1,web-2] [--shuffle-partitions N]

It builds the session (``build_session``), lands the checkpoint (``spark_jobs.landing.land``)
and prints the summary as the last line of standard output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository root importable
    try:
        import pipeline_core.staging_contract  # noqa: F401
        import spark_jobs  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession

from pipeline_core.staging_contract import LAKE_SQL_CONF
from spark_jobs.landing import land


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Land a sealed checkpoint into the lake.")
    parser.add_argument(
        "--checkpoint-dir", required=True, help="<staging>/<pipeline>/<checkpoint:08d>"
    )
    parser.add_argument("--lake", required=True, help="the lake root")
    parser.add_argument(
        "--hosts",
        default=None,
        help="comma-separated hosts whose batches the metastore recorded (default: every "
        "batch folder)",
    )
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: the number of cores on a local master)",
    )
    return parser.parse_args(argv)


def build_session(app_name: str, shuffle_partitions: int | None = None) -> SparkSession:
    """A session set up for the landing job.

    Besides ``LAKE_SQL_CONF``: no console progress bar (standard output ends with the summary)
    and, on a local master, as many shuffle partitions as cores (the job's only shuffles are
    small counts). The staged lines are split into read tasks per core by
    ``spark_jobs.landing.read_source`` itself. Settings given with ``--conf`` are kept, except
    ``LAKE_SQL_CONF``.
    """
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    for key, value in LAKE_SQL_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    context = spark.sparkContext
    given = context.getConf()
    defaults: dict[str, int] = {}
    if (context.master or "").startswith("local"):
        defaults["spark.sql.shuffle.partitions"] = context.defaultParallelism
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        defaults.pop("spark.sql.shuffle.partitions", None)
    for key, number in defaults.items():
        if not given.contains(key):
            spark.conf.set(key, str(number))
    return spark


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    name = Path(os.path.abspath(args.checkpoint_dir))
    spark = build_session(f"sluice-land-{name.parent.name}-{name.name}", args.shuffle_partitions)
    try:
        hosts = [h for h in args.hosts.split(",") if h] if args.hosts is not None else None
        summary = land(spark, args.checkpoint_dir, args.lake, hosts)
    finally:
        spark.stop()
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
