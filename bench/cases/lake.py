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

The landing alone (``land_and_commit``: checks, event ids, reconciliation, commit) is also set
against three baselines measured in the same run, on the same log files from the page cache:

* Spark's floor (``spark_floor``): the same session, ``spark.read.text``, the landing's own
  nginx parse (``NGINX_PATTERN`` rewritten and split once) and casts, Parquet by
  ``event_date``; no event ids, rejects or checks. Target: the landing within 1.15 x of it.
* The same floor splitting lines with the landing's own Java scanner
  (``sluice.spark.NginxFields``), which is faster than the pattern: the landing's checks,
  event ids and commit over the same parse. Shown for orientation; no target.
* DuckDB (``duckdb_parse``, a bench-only dependency): 2 threads, the same pattern and casts,
  Parquet by ``event_date``. Shown for orientation; no target.

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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench import common
from bench.common import Context, Row, Stat, paired_ratio

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from pipeline_core.lake import LakeLocation

TARGET = 1.0
FLOOR_TARGET = 1.15
"""The landing in-process against Spark's floor (``spark_floor``), same run."""
DUCKDB_THREADS = 2


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
    floor_s: list[float] = []
    scanner_floor_s: list[float] = []
    duckdb_s: list[float] = []
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
        common.warm(folder)
        floor_s.append(spark_floor(spark, folder, ctx.work("lake-floor")))
        common.warm(folder)
        scanner_floor_s.append(spark_floor(spark, folder, ctx.work("lake-floor"), scanner=True))
        common.warm(folder)
        duckdb_s.append(duckdb_parse(folder, ctx.work("lake-duckdb")))
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
            details={
                "mb": megabytes,
                "collect_s": collect_s,
                "land_s": land_s,
                "floor_s": floor_s,
                "scanner_floor_s": scanner_floor_s,
                "duckdb_s": duckdb_s,
            },
        )
    ]
    landed = Stat(land_s, "s")
    to_floor = paired_ratio(land_s, floor_s)
    rows += [
        Row(
            case="3",
            measure=f"landing in-process, {megabytes:.0f} MB (checks, event ids, commit)",
            sluice=landed,
            baseline=Stat(floor_s, "s"),
            baseline_name="Spark floor: read.text + parse",
            ratio=to_floor,
            target=f"<= {FLOOR_TARGET:.2f} x floor",
            met=to_floor.median <= FLOOR_TARGET,
            note="floor: the same session, spark.read.text of the log files, the landing's "
            "nginx pattern and casts, Parquet by event_date; no event ids, rejects or checks",
        ),
        Row(
            case="3",
            measure=f"landing in-process, {megabytes:.0f} MB (checks, event ids, commit)",
            sluice=landed,
            baseline=Stat(scanner_floor_s, "s"),
            baseline_name="floor with the Java nginx scanner",
            ratio=paired_ratio(land_s, scanner_floor_s),
            note="the floor splitting lines with the landing's own Java scanner "
            "(sluice.spark.NginxFields) instead of the pattern: what the landing's checks, "
            "event ids and commit cost over the same parse",
        ),
        Row(
            case="3",
            measure=f"landing in-process, {megabytes:.0f} MB",
            sluice=landed,
            baseline=Stat(duckdb_s, "s"),
            baseline_name=f"DuckDB, {DUCKDB_THREADS} threads, same parse",
            ratio=paired_ratio(land_s, duckdb_s),
            note="DuckDB: read_csv of the log files (a line per row), the same pattern "
            "(RE2) and casts, Parquet by event_date",
        ),
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
    for name in ("lake-streaming", "lake-sluice", "lake-floor", "lake-duckdb"):
        ctx.work(name)
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
    """Land the collected checkpoint in-process, then commit it in the metastore with the
    counts read back from the tables, as ``sluice land`` does. Every event must land as a row
    (AssertionError otherwise: a reject, or a row too many or too few)."""
    from pipeline_core.lake import landed_checkpoints, open_lake
    from pipeline_core.metastore import Metastore
    from spark_jobs.landing import CheckpointInput, Landing, land

    landing = Landing(
        (CheckpointInput(collected.checkpoint_dir),), lake, f"bench-{uuid.uuid4().hex}"
    )
    summary = land(spark, landing)
    (landed,) = summary["checkpoints"]
    rows = sum(landed["rows"].values())
    if rows != collected.events:
        raise AssertionError(f"landed {rows} rows of {collected.events} events")
    with open_lake(lake) as catalog:
        found = landed_checkpoints(catalog, list(landed["rows"]), [collected.checkpoint_id])
    counts = found[collected.checkpoint_id]
    if counts.lines != collected.events:
        raise AssertionError(f"the tables hold {counts.lines} rows of {collected.events} events")
    committed = {**counts.to_json(), "input_lines": collected.lines}
    if collected.events != collected.lines:
        committed["input_events"] = collected.events
    metastore = Metastore.open(lake.catalog_url)
    try:
        metastore.commit_checkpoint(collected.checkpoint_id, committed)
    finally:
        metastore.close()


def structured_streaming(spark: SparkSession, folder: Path, work: Path) -> float:
    """The baseline query over ``folder``; returns its wall time in seconds."""
    from pyspark.sql import functions as F

    from spark_jobs.formats import NGINX_FIELDS, NGINX_PATTERN

    def field(name: str) -> Column:
        return F.regexp_extract("value", NGINX_PATTERN, NGINX_FIELDS.index(name) + 1)

    lines = spark.readStream.text(str(folder))
    parsed = lines.select(
        F.col("_metadata.file_path").alias("input_file"), *nginx_columns(field)
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


def nginx_columns(field: Callable[[str], Column]) -> list[Column]:
    """The landing's parsed nginx columns, from ``field(name)``: one extracted field as text
    (the baselines extract them in their own ways)."""
    from pyspark.sql import functions as F

    from spark_jobs.formats import NGINX_TIME_FORMAT

    def unless(value: Column, placeholder: str) -> Column:
        return F.when(value != placeholder, value)

    return [
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
    ]


def spark_floor(spark: SparkSession, folder: Path, work: Path, *, scanner: bool = False) -> float:
    """Spark's floor for the landing: ``spark.read.text`` of ``folder`` (lines split at
    ``\\n`` only, as the landing splits them), the landing job's own nginx parse
    (``NGINX_PATTERN`` rewritten into ``\\x01``-joined fields, split once; with ``scanner``,
    the landing's Java scanner ``sluice.spark.NginxFields`` instead) and casts, the same parsed
    columns as Parquet partitioned by ``event_date``. No event ids, no rejects, no checks: the
    least a Spark job landing these lines does. Returns the wall time in seconds."""
    from pyspark.sql import functions as F

    from spark_jobs.formats import NGINX_FIELDS, NGINX_PATTERN
    from spark_jobs.jvm_functions import NGINX_FIELDS as NGINX_FIELDS_FUNCTION
    from spark_jobs.jvm_functions import enable_jvm_functions

    if scanner:
        if not enable_jvm_functions(spark):
            raise RuntimeError("the bench session lacks the landing's Java functions")
        fields = NGINX_FIELDS_FUNCTION(F.col("value").cast("binary"))
    else:
        groups = "\x01".join(f"${group}" for group in range(1, len(NGINX_FIELDS) + 1))
        fields = F.split(F.regexp_replace("value", NGINX_PATTERN, groups), "\x01", -1)

    def field(name: str) -> Column:
        return F.get(F.col("_fields"), NGINX_FIELDS.index(name)).cast("string")

    def parse(lines: DataFrame) -> DataFrame:
        return lines.select(fields.alias("_fields")).select(*nginx_columns(field))

    return timed_floor(spark, folder, work, parse)


def timed_floor(
    spark: SparkSession, path: Path, work: Path, parse: Callable[[DataFrame], DataFrame]
) -> float:
    """What every Spark floor does around its parse: ``spark.read.text`` of ``path`` (a file,
    or a folder's files; lines split at ``\\n`` only, as the landing splits them), ``parse``
    of those lines (a ``value`` column) into parsed columns with ``event_time``, written as
    Parquet partitioned by ``event_date`` (its date in the session's time zone, UTC) into
    ``work/floor``. Returns the wall time of the job, in seconds."""
    from pyspark.sql import functions as F

    parsed = parse(spark.read.option("lineSep", "\n").text(str(path)))
    started = time.perf_counter()
    (
        parsed.withColumn("event_date", F.to_date("event_time"))
        .write.mode("errorifexists")
        .partitionBy("event_date")
        .parquet(str(work / "floor"))
    )
    return time.perf_counter() - started


def duckdb_parse(folder: Path, work: Path) -> float:
    """DuckDB (``DUCKDB_THREADS`` threads) doing the floor's work: the lines of ``folder``, the
    same nginx pattern (without its possessive quantifiers, which RE2 lacks: the pattern's
    character classes leave nothing to backtrack into), the same casts and parsed columns,
    Parquet partitioned by ``event_date``. Returns the wall time in seconds."""
    import duckdb

    from spark_jobs.formats import NGINX_FIELDS, NGINX_PATTERN

    pattern = NGINX_PATTERN.replace("++", "+").replace("*+", "*")
    names = ", ".join(f"'{name}'" for name in NGINX_FIELDS)
    # A delimiter no line holds: every line is one column.
    files = (
        f"read_csv('{folder}/*.log', columns={{'line': 'VARCHAR'}}, header=false, "
        f"delim='{chr(2)}', quote='', escape='', auto_detect=false)"
    )
    query = f"""
        WITH fields AS (SELECT regexp_extract(line, $pattern, [{names}]) AS f FROM {files}),
        parsed AS (
            SELECT f.remote_addr AS remote_addr,
                   nullif(f.remote_user, '-') AS remote_user,
                   try_strptime(f.time_local, '%d/%b/%Y:%H:%M:%S %z') AS event_time,
                   f.request AS request,
                   nullif(f.method, '') AS method,
                   nullif(f.path, '') AS path,
                   nullif(f.protocol, '') AS protocol,
                   try_cast(f.status AS INTEGER) AS status,
                   try_cast(nullif(f.body_bytes_sent, '-') AS BIGINT) AS body_bytes_sent,
                   f.http_referer AS http_referer,
                   f.http_user_agent AS http_user_agent
            FROM fields)
        SELECT *, CAST(event_time AT TIME ZONE 'UTC' AS DATE) AS event_date FROM parsed
    """
    connection = duckdb.connect()
    try:
        connection.execute(f"SET threads = {DUCKDB_THREADS}")
        connection.execute("SET TimeZone = 'UTC'")
        started = time.perf_counter()
        connection.execute(
            f"COPY ({query}) TO '{work / 'duckdb'}' (FORMAT parquet, PARTITION_BY (event_date))",
            {"pattern": pattern},
        )
        return time.perf_counter() - started
    finally:
        connection.close()


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
