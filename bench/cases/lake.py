"""Case 3: files to lake, end to end, against Spark Structured Streaming's file source.

Input: the many-files data set (50 x 20 MiB nginx "combined" logs). Both sides run on the same
``local[2]`` SparkSession of this process (made once, its start-up left out of both), from the
page cache, each writing into a fresh folder.

Sluice: ``Collector.run_once`` (files -> one sealed checkpoint) then
``spark_jobs.landing.land(spark, Landing(...))`` in this process (the checkpoint's rows written
and committed into the pipeline's Iceberg tables, whose catalog is in the run's SQLite
metastore), then the metastore commit (the landed counts read back from the tables, as
``sluice land`` does): the wall time of the three.

Baseline: what an Airflow+Spark user would write instead: ``readStream.text(folder)``, one
``regexp_extract`` per field of the nginx combined format (the landing job's own pattern,
``spark_jobs.formats.NGINX_PATTERN``), the same parsed columns (``remote_addr``,
``remote_user``, ``event_time``, ``request``, ``method``, ``path``, ``protocol``, ``status``,
``body_bytes_sent``, ``http_referer``, ``http_user_agent``, ``event_date``) plus the input file,
a Parquet sink partitioned by ``event_date`` with a checkpoint location,
``trigger(availableNow=True)``: the wall time from ``start()`` to the end of the query. It
has no byte offsets (no ``event_id``) and no rejects table, so it does less than the landing job.

The ratio is Sluice / baseline wall time. Target: at most 1.0.

Once per run of the suite (unless ``--no-spark-submit``), the landing of the last checkpoint
is timed again through ``spark-submit`` (a fresh JVM, as ``sluice land`` and the DAG run it), in
``replace`` mode so that it writes and commits as much as the first landing, to show what a
submission adds to the in-process landing.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from bench import common
from bench.common import Context, Row, Stat, paired_ratio

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipeline_core.lake import LakeLocation

TARGET = 1.0


def run(ctx: Context) -> list[Row]:
    folder = common.small_logs(ctx.sizes.small_files, ctx.sizes.small_file)
    megabytes = common.size_of(folder) / 1e6
    spark_started = time.perf_counter()
    spark = ctx.spark()
    spark.range(1).count()  # the session and its first job are warm before any timing
    spark_seconds = time.perf_counter() - spark_started
    collect_s: list[float] = []
    land_s: list[float] = []
    baseline_s: list[float] = []
    last: tuple[str, LakeLocation, float] | None = None
    for _ in range(ctx.sizes.runs):
        work = ctx.work("lake-streaming")
        common.warm(folder)
        baseline_s.append(structured_streaming(spark, folder, work))
        work = ctx.work("lake-sluice")
        common.warm(folder)
        collected = common.collect_once(common.pipeline_config(work, folder))
        lake = lake_location(work)
        landing = common.timed(functools.partial(land_and_commit, spark, lake, collected))
        collect_s.append(collected.seconds)
        land_s.append(landing)
        last = (collected.checkpoint_dir, lake, landing)
    sluice = Stat([c + lnd for c, lnd in zip(collect_s, land_s, strict=True)], "s")
    baseline = Stat(baseline_s, "s")
    ratio = paired_ratio(sluice.values, baseline.values)
    rows = [
        Row(
            case="3",
            measure=f"files -> lake, {ctx.sizes.small_files} files, {megabytes:.0f} MB",
            sluice=sluice,
            baseline=baseline,
            baseline_name="Spark SS availableNow",
            ratio=ratio,
            target=f"<= {TARGET:.1f} x SS",
            met=ratio.median <= TARGET,
            note=(
                f"collect {Stat(collect_s, 's').text()} + land in-process "
                f"{Stat(land_s, 's').text()}; local[2], SparkSession start "
                f"({spark_seconds:.0f} s incl. a first job) left out of both"
            ),
            details={"mb": megabytes, "collect_s": collect_s, "land_s": land_s},
        )
    ]
    if ctx.spark_submit and last is not None:
        checkpoint_dir, lake, in_process = last
        submitted = spark_submit_landing(checkpoint_dir, lake)
        rows.append(
            Row(
                case="3",
                measure="landing via spark-submit (1 run)",
                sluice=Stat([submitted], "s"),
                note=f"the same landing in-process took {in_process:.1f} s: spark-submit adds "
                f"{submitted - in_process:.1f} s (JVM and session start, Python workers)",
            )
        )
    ctx.work("lake-streaming")
    ctx.work("lake-sluice")
    return rows


def lake_location(work: Path) -> LakeLocation:
    """The lake of the pipeline collecting into ``work/data``: its tables in the catalog of the
    run's SQLite metastore (migrated here if the collector has not yet)."""
    from pipeline_core.lake import LakeLocation
    from pipeline_core.metastore import Metastore

    url = f"sqlite:///{work / 'data' / 'sluice.db'}"
    Metastore.open(url).close()
    return LakeLocation(url, work / "data" / "lake", common.PIPELINE)


def land_and_commit(spark: SparkSession, lake: LakeLocation, collected: common.Collected) -> None:
    from pipeline_core.lake import landed_checkpoints, open_lake
    from pipeline_core.metastore import Metastore
    from spark_jobs.landing import CheckpointInput, Landing, land

    landing = Landing(
        (CheckpointInput(collected.checkpoint_dir),), lake, f"bench-{uuid.uuid4().hex}"
    )
    summary = land(spark, landing)
    (landed,) = summary["checkpoints"]
    rows = sum(landed["rows"].values())
    if rows != collected.lines:
        raise AssertionError(f"landed {rows} rows of {collected.lines} lines")
    with open_lake(lake) as catalog:
        found = landed_checkpoints(catalog, list(landed["rows"]), [collected.checkpoint_id])
    counts = found[collected.checkpoint_id]
    if counts.lines != collected.lines:
        raise AssertionError(f"the tables hold {counts.lines} lines of {collected.lines}")
    metastore = Metastore.open(lake.catalog_url)
    try:
        metastore.commit_checkpoint(
            collected.checkpoint_id, {**counts.to_json(), "input_lines": collected.lines}
        )
    finally:
        metastore.close()


def structured_streaming(spark: SparkSession, folder: Path, work: Path) -> float:
    """The baseline query over ``folder``; returns its wall time in seconds."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    from spark_jobs.formats import NGINX_FIELDS, NGINX_PATTERN, NGINX_TIME_FORMAT

    def field(name: str) -> Column:
        return F.regexp_extract("value", NGINX_PATTERN, NGINX_FIELDS.index(name) + 1)

    def unless(value: Column, placeholder: str) -> Column:
        return F.when(value != placeholder, value)

    lines = spark.readStream.text(str(folder))
    parsed = lines.select(
        F.col("_metadata.file_path").alias("input_file"),
        field("remote_addr").alias("remote_addr"),
        unless(field("remote_user"), "-").alias("remote_user"),
        F.try_to_timestamp(field("time_local"), F.lit(NGINX_TIME_FORMAT)).alias("event_time"),
        field("request").alias("request"),
        unless(field("method"), "").alias("method"),
        unless(field("path"), "").alias("path"),
        unless(field("protocol"), "").alias("protocol"),
        field("status").cast("int").alias("status"),
        unless(field("body_bytes_sent"), "-").try_cast("long").alias("body_bytes_sent"),
        field("http_referer").alias("http_referer"),
        field("http_user_agent").alias("http_user_agent"),
    ).withColumn("event_date", F.to_date("event_time"))
    started = time.perf_counter()
    query = (
        parsed.writeStream.format("parquet")
        .option("path", str(work / "lake"))
        .option("checkpointLocation", str(work / "checkpoint"))
        .partitionBy("event_date")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")
    return seconds


def spark_submit_landing(checkpoint_dir: str, lake: LakeLocation) -> float:
    """Land the checkpoint again through ``spark-submit``, as ``sluice land`` submits it (the
    metastore URL in the environment), replacing its rows; returns the wall time."""
    from pipeline_core.lake import LandingMode
    from pipeline_core.landing import LANDING_APPLICATION, METASTORE_URL_ENV

    submit = Path(common.PYTHON).parent / "spark-submit"
    command = [
        str(submit if submit.is_file() else shutil.which("spark-submit") or "spark-submit"),
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        str(LANDING_APPLICATION),
        "--checkpoint",
        checkpoint_dir,
        "--lake",
        str(lake.warehouse),
        "--namespace",
        lake.namespace,
        "--landing-id",
        f"bench-submit-{uuid.uuid4().hex}",
        "--mode",
        LandingMode.REPLACE.value,
    ]
    env = {
        **common.child_env(),
        "PYSPARK_PYTHON": common.PYTHON,
        METASTORE_URL_ENV: lake.catalog_url,
    }
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, timeout=3600)
    return time.perf_counter() - started
