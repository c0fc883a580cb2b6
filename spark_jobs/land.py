"""The landing job's entry point: spark-submit runs this file for sealed checkpoints.

Usage (from the repository root; on a cluster ship the archive ``pipeline_core.landing`` builds
with ``--py-files``)::

    SLUICE_METASTORE_URL=<metastore URL> spark-submit --master local[2] spark_jobs/land.py \
        --checkpoint <staging>/<pipeline>/<checkpoint:08d>[=web-1,web-2][?options] \
        --lake <warehouse> --namespace <namespace> --landing-id <run id> \
        [--mode append|replace] [--shuffle-partitions N]

It builds the session (``build_session``), lands every checkpoint in one job
(``spark_jobs.landing.land``: one commit per table) and prints the summary as the last line of
standard output. The metastore URL (the lake catalog's database) comes from the environment,
never the command line, so a password in it is not shown in process lists. Staging may be an
object store's URL (``s3://bucket/prefix/<pipeline>/<checkpoint:08d>``): its endpoint and
credentials come from the environment too (``pipeline_core.storage.STORE_ENVIRONMENT``), and
the driver hands them to the Python workers that read the segments
(``spark_jobs.staging.segment_frame``).
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

from pipeline_core.lake import LakeLocation, LandingMode
from pipeline_core.staging_contract import LAKE_SQL_CONF
from spark_jobs.landing import CheckpointInput, Landing, land

METASTORE_URL_ENV = "SLUICE_METASTORE_URL"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Land sealed checkpoints into the lake.")
    parser.add_argument(
        "--checkpoint",
        action="append",
        required=True,
        type=checkpoint_input,
        help="<staging>/<pipeline>/<checkpoint:08d> (a folder or an s3://, gs://, abfs:// URL), "
        "then optionally '=' and the comma-separated hosts whose batches the metastore "
        "recorded (default: every batch folder), then a URL's '?options'; repeatable",
    )
    parser.add_argument("--lake", required=True, help="the lake's warehouse folder")
    parser.add_argument("--namespace", required=True, help="the catalog namespace of the tables")
    parser.add_argument(
        "--landing-id", required=True, help="names the landing in snapshot summaries (the run)"
    )
    parser.add_argument(
        "--mode",
        choices=[mode.value for mode in LandingMode],
        default=LandingMode.APPEND.value,
        help="append: leave out checkpoints a table holds; replace: replace their rows",
    )
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: the number of cores on a local master)",
    )
    return parser.parse_args(argv)


def checkpoint_input(value: str) -> CheckpointInput:
    """``FOLDER``, ``FOLDER=host,host``, or either followed by a URL's ``?options`` (a folder
    never holds ``=``: it ends in the checkpoint's number; options go after the hosts)."""
    location, mark, options = value.partition("?")
    folder, equals, hosts = location.rpartition("=")
    if not equals:
        return CheckpointInput(value)
    return CheckpointInput(folder + mark + options, tuple(h for h in hosts.split(",") if h))


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
    url = os.environ.get(METASTORE_URL_ENV)
    if not url:
        raise SystemExit(f"{METASTORE_URL_ENV} must name the metastore (the lake's catalog)")
    inputs = tuple(dict.fromkeys(args.checkpoint))
    landing = Landing(
        checkpoints=inputs,
        lake=LakeLocation(url, Path(args.lake), args.namespace),
        landing_id=args.landing_id,
        mode=LandingMode(args.mode),
    )
    first, last = Path(inputs[0].folder).name, Path(inputs[-1].folder).name
    name = f"sluice-land-{args.namespace}-{first}" + (f"-{last}" if last != first else "")
    spark = build_session(name, args.shuffle_partitions)
    try:
        summary = land(spark, landing)
    finally:
        spark.stop()
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
