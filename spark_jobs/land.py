"""The landing job's entry point: spark-submit runs this file for sealed checkpoints.

Usage (from the repository root; on a cluster ship the archive ``pipeline_core.landing`` builds
with ``--py-files``)::

    SLUICE_METASTORE_URL=<metastore URL> spark-submit --master local[2] spark_jobs/land.py \
        --checkpoint <staging>/<pipeline>/<checkpoint:08d>[=web-1,web-2][?options] \
        --lake <warehouse> --namespace <namespace> --landing-id <run id> \
        [--mode append|replace] [--shuffle-partitions N]

Or, on a warm Spark Connect server instead of a spark-submit (the driver is this Python
process; the archive is added to the session as Python artifacts, for the server's Python
workers)::

    SLUICE_METASTORE_URL=<metastore URL> SLUICE_SPARK_CONNECT_URL=sc://host:15002 \
        python spark_jobs/land.py --spark-connect --py-files <spark_jobs archive> \
        --checkpoint ... --lake ... --namespace ... --landing-id ...

It builds the session (``build_session``), lands every checkpoint in one job
(``spark_jobs.landing.land``: one commit per table) and prints the summary as the last line of
standard output. The metastore URL (the lake catalog's database) and the Spark Connect URL come
from the environment, never the command line, so a password or token in them is not shown in
process lists: ``SLUICE_METASTORE_URL``, or ``SLUICE_METASTORE_URL_FILE`` naming a file that
holds it (which wins when both are set). The submitter uses the file for YARN and Kubernetes
masters, whose spark-submit would put the variable on its command line
(``pipeline_core.landing.SparkSubmitJob``): a path, or in cluster mode the name of a file
shipped with ``--files`` into the driver's working directory. ``SLUICE_METASTORE_POOLING``
(``none``, the default, or ``transaction``) says whether the catalog's database is behind a
transaction-mode pooler (the config's ``metastore.pooling``). Staging may be an object store's URL
(``s3://bucket/prefix/<pipeline>/<checkpoint:08d>``): its endpoint and credentials come from
the environment too (``pipeline_core.storage.STORE_ENVIRONMENT``), and the driver hands them
to the Python workers that read the segments (``spark_jobs.staging.segment_frame``; a Spark
Connect server's workers use the server's own environment).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository root importable
    try:
        import pipeline_core.staging_contract  # noqa: F401
        import spark_jobs  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession

from pipeline_core._metastore_pooling import METASTORE_POOLING_ENV, MetastorePooling
from pipeline_core.lake import LakeLocation, LandingMode
from pipeline_core.staging_contract import LAKE_SQL_CONF
from spark_jobs.connect import close_session, connect_session
from spark_jobs.landing import CheckpointInput, Landing, land
from spark_jobs.session import is_local, session_cores

METASTORE_URL_ENV = "SLUICE_METASTORE_URL"
METASTORE_URL_FILE_ENV = "SLUICE_METASTORE_URL_FILE"
SPARK_CONNECT_URL_ENV = "SLUICE_SPARK_CONNECT_URL"


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
    parser.add_argument(
        "--lake",
        required=True,
        help="the lake's warehouse: a folder or an s3://, gs://, abfs:// URL",
    )
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
    parser.add_argument(
        "--spark-connect",
        action="store_true",
        help=f"land through the Spark Connect server ${SPARK_CONNECT_URL_ENV} names (sc://...) "
        "in a session of its own, instead of the session spark-submit gives",
    )
    parser.add_argument(
        "--py-files",
        default=None,
        help="with --spark-connect: comma-separated .zip/.py files added to the session as "
        "Python artifacts (the archive of spark_jobs that spark-submit gets as --py-files)",
    )
    parser.add_argument(
        "--jars",
        default=None,
        help="with --spark-connect: comma-separated jars added to the session as artifacts "
        "(the landing's Java functions, which spark-submit gets as --jars)",
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


def build_session(
    app_name: str,
    shuffle_partitions: int | None = None,
    *,
    remote: str | None = None,
    py_files: Sequence[str] = (),
    jars: Sequence[str] = (),
) -> SparkSession:
    """A session set up for the landing job: spark-submit's, or with ``remote`` (an
    ``sc://`` URL) the session of that Spark Connect server that the landings shipping
    ``py_files`` and ``jars`` share (``spark_jobs.connect.connect_session``).

    Besides ``LAKE_SQL_CONF``: no console progress bar (standard output ends with the summary;
    a Spark Connect server has its own settings) and, on a local master, as many shuffle
    partitions as cores (the job's only shuffles are small counts). The staged lines are split
    into read tasks per core by ``spark_jobs.landing.read_source`` itself. Settings given with
    ``--conf`` (or the server's) are kept, except ``LAKE_SQL_CONF``.
    """
    if remote is None:
        builder = SparkSession.builder.appName(app_name)
        builder = builder.config("spark.ui.showConsoleProgress", "false")
        for key, value in LAKE_SQL_CONF.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        spark = connect_session(remote, app_name, py_files, jars)
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    elif spark.conf.get("spark.sql.shuffle.partitions", None) is None and is_local(spark):
        spark.conf.set("spark.sql.shuffle.partitions", str(session_cores(spark)))
    return spark


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    url = metastore_url(os.environ)
    inputs = tuple(dict.fromkeys(args.checkpoint))
    landing = Landing(
        checkpoints=inputs,
        lake=LakeLocation(
            url,
            args.lake if "://" in args.lake else Path(args.lake),
            args.namespace,
            metastore_pooling(os.environ),
        ),
        landing_id=args.landing_id,
        mode=LandingMode(args.mode),
    )
    first, last = Path(inputs[0].folder).name, Path(inputs[-1].folder).name
    name = f"sluice-land-{args.namespace}-{first}" + (f"-{last}" if last != first else "")
    remote = None
    if args.spark_connect:
        remote = os.environ.get(SPARK_CONNECT_URL_ENV)
        if not remote:
            raise SystemExit(f"--spark-connect: {SPARK_CONNECT_URL_ENV} must name the server")
    py_files = [path for path in (args.py_files or "").split(",") if path]
    jars = [path for path in (args.jars or "").split(",") if path]
    # pyspark's Spark Connect client warns at every start about the pandas release it was not
    # tested with (the job uses no pandas): kept out of the task's log.
    warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
    spark = build_session(
        name, args.shuffle_partitions, remote=remote, py_files=py_files, jars=jars
    )
    if remote is None:
        try:
            summary = land(spark, landing)
        finally:
            spark.stop()
    else:
        summary = _land_on_server(spark, landing)
    print(json.dumps(summary), flush=True)


def metastore_url(environ: Mapping[str, str]) -> str:
    """The metastore URL: the content of the file ``SLUICE_METASTORE_URL_FILE`` names (a path,
    or a name in the working directory), else ``SLUICE_METASTORE_URL``. Never printed.

    Raises:
        SystemExit: neither is set, or the file cannot be read or is empty.
    """
    named = environ.get(METASTORE_URL_FILE_ENV)
    if named:
        try:
            written = Path(named).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SystemExit(
                f"{METASTORE_URL_FILE_ENV}: cannot read {named}: {exc.strerror or exc}"
            ) from None
        if not written:
            raise SystemExit(f"{METASTORE_URL_FILE_ENV}: {named} is empty")
        return written
    url = environ.get(METASTORE_URL_ENV)
    if not url:
        raise SystemExit(
            f"{METASTORE_URL_ENV} (or {METASTORE_URL_FILE_ENV}, a file holding it) must name "
            "the metastore (the lake's catalog)"
        )
    return url


def metastore_pooling(environ: Mapping[str, str]) -> MetastorePooling:
    """``SLUICE_METASTORE_POOLING``: ``none`` when it is not set.

    Raises:
        SystemExit: it names no pooling.
    """
    value = environ.get(METASTORE_POOLING_ENV) or MetastorePooling.NONE.value
    try:
        return MetastorePooling(value)
    except ValueError:
        choices = ", ".join(pooling.value for pooling in MetastorePooling)
        raise SystemExit(
            f"{METASTORE_POOLING_ENV}: expected one of {choices} (got {value!r})"
        ) from None


def _land_on_server(spark: SparkSession, landing: Landing) -> dict[str, Any]:
    """``land`` in a Spark Connect session that other landings share: its operations are
    tagged with the landing, and interrupted on the server when the landing fails or is killed
    (SIGTERM); the session stays open for the next landing."""
    tag = f"sluice-landing-{uuid.uuid4().hex}"
    spark.addTag(tag)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return land(spark, landing)
    except BaseException:
        spark.interruptTag(tag)
        raise
    finally:
        close_session(spark)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
