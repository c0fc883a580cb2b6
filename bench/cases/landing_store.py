"""Case 13: landing a checkpoint staged in object storage against landing it from local disk.

One nginx log (256 MiB; ``--quick`` 64 MiB) is collected once into a checkpoint on local disk,
and the checkpoint's folder is copied to moto's S3 server on loopback (the test suite's server)
as a collector uploads it. Each run then lands the same checkpoint twice, in turns, into a fresh
lake each time (its own SQLite catalog and folder), with
``spark_jobs.landing.land(spark, Landing(...))`` on this process's ``local[2]`` SparkSession
(made once, its start-up and one untimed landing left out):

* Sluice: the checkpoint's URL, ``s3://<bucket>/staging/<pipeline>/<N:08d>``: the driver lists
  the batches and reads the manifests through the Arrow S3 filesystem, checks every part
  (sizes from a listing, CRC-32 and line counts by ranged reads of 8 MiB), and the executors'
  Python workers read each segment by one ranged read;
* baseline: the checkpoint's local folder (``os.pread``), as before object storage;
* and a second row: the checkpoint's URL landed into a lake in the same store
  (``s3://<bucket>/lake-<run>``: the executors write the Parquet files through the Arrow S3
  filesystem, the commit goes through the tables' FileIO), against the same URL landed into a
  lake in a local folder (Spark's Parquet writer).

Figures are input MB per second of the landing (checks, parse, Parquet, commit); the ratio is
store / local, run by run. moto keeps objects in the memory of one Python process that shares
the machine's two cores with Spark: the figure is a floor for a real store.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import common
from bench.cases.upload import S3_ENV, create_bucket, moto_server
from bench.common import Context, Row, Stat, paired_ratio

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MiB = common.MiB
FULL_BYTES = 256 * MiB
QUICK_BYTES = 64 * MiB


def run(ctx: Context) -> list[Row]:
    size = QUICK_BYTES if ctx.quick else FULL_BYTES
    source = common.big_log(size)
    megabytes = common.size_of(source) / 1e6
    spark = ctx.spark()
    spark.range(1).count()  # the session and its first job are warm before any timing
    collected = common.collect_once(common.pipeline_config(ctx.work("landing-store"), source))
    local_s: list[float] = []
    store_s: list[float] = []
    lake_s: list[float] = []
    with moto_server(ctx.work("landing-store-moto")) as endpoint:
        saved = {name: os.environ.get(name) for name in [*S3_ENV, "AWS_ENDPOINT_URL"]}
        os.environ.update({**S3_ENV, "AWS_ENDPOINT_URL": endpoint})
        try:
            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            create_bucket(endpoint, bucket)
            url = upload(Path(collected.checkpoint_dir), endpoint, bucket)
            land_once(spark, ctx, collected, url)  # untimed: Python workers and caches warm
            for run_number in range(ctx.sizes.runs):
                local_s.append(land_once(spark, ctx, collected, collected.checkpoint_dir))
                store_s.append(land_once(spark, ctx, collected, url))
                lake_s.append(land_once(spark, ctx, collected, url, bucket))
                print(
                    f"  run {run_number + 1}: local {local_s[-1]:.1f} s, S3 {store_s[-1]:.1f} s, "
                    f"S3 into an S3 lake {lake_s[-1]:.1f} s"
                )
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    ctx.work("landing-store")
    ctx.work("landing-store-lake")
    sluice = Stat([megabytes / s for s in store_s], "MB/s")
    baseline = Stat([megabytes / s for s in local_s], "MB/s")
    into_store = Stat([megabytes / s for s in lake_s], "MB/s")
    return [
        Row(
            case="13",
            measure=f"landing 1 x {size // MiB} MiB checkpoint from S3 (loopback moto), in-process",
            sluice=sluice,
            baseline=baseline,
            baseline_name="the same checkpoint from local disk",
            ratio=paired_ratio(sluice.values, baseline.values),
            target="",
            met=None,
            note=f"{collected.lines} lines; land() {Stat(store_s, 's').text()} from S3, "
            f"{Stat(local_s, 's').text()} local; local[2], Arrow S3 ranged reads, no Hadoop S3",
            details={"mb": megabytes, "store_s": store_s, "local_s": local_s},
        ),
        Row(
            case="13",
            measure=f"landing 1 x {size // MiB} MiB checkpoint from S3 into a lake in S3 "
            "(loopback moto), in-process",
            sluice=into_store,
            baseline=sluice,
            baseline_name="the same checkpoint from S3 into a lake in a local folder",
            ratio=paired_ratio(into_store.values, sluice.values),
            target="",
            met=None,
            note=f"{collected.lines} lines; land() {Stat(lake_s, 's').text()} into S3; "
            "local[2], Parquet written by the executors through Arrow's S3 filesystem, "
            "commit through pyiceberg's FileIO, no Hadoop S3",
            details={"mb": megabytes, "lake_store_s": lake_s, "store_s": store_s},
        ),
    ]


def upload(folder: Path, endpoint: str, bucket: str) -> str:
    """Copy a checkpoint's folder to ``s3://<bucket>/staging/<pipeline>/<N:08d>`` (what its
    collectors' uploads leave there); returns that URL."""
    import pyarrow.fs as pafs

    from pipeline_core.storage import location_filesystem

    url = f"s3://{bucket}/staging/{common.PIPELINE}/{folder.name}"
    filesystem, path = location_filesystem(url)
    pafs.copy_files(
        str(folder),
        path,
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=filesystem,
    )
    return url


def land_once(
    spark: SparkSession,
    ctx: Context,
    collected: common.Collected,
    folder: str,
    bucket: str | None = None,
) -> float:
    """Seconds of one landing of the checkpoint at ``folder`` into a fresh lake (a local
    folder, or with ``bucket`` a new prefix of that bucket); checks that every line landed."""
    from pipeline_core.lake import LakeLocation
    from pipeline_core.metastore import Metastore
    from spark_jobs.landing import CheckpointInput, Landing, land

    work = ctx.work("landing-store-lake")
    url = f"sqlite:///{work / 'catalog.db'}"
    Metastore.open(url).close()
    warehouse: Path | str = work / "lake"
    if bucket is not None:
        warehouse = f"s3://{bucket}/lake-{uuid.uuid4().hex[:8]}"
    lake = LakeLocation(url, warehouse, common.PIPELINE)
    landing = Landing((CheckpointInput(folder),), lake, f"bench-{uuid.uuid4().hex}")
    common.warm(Path(collected.checkpoint_dir))
    summaries: list[dict[str, Any]] = []
    seconds = common.timed(lambda: summaries.append(land(spark, landing)))
    landed: dict[str, dict[str, int]] = summaries[0]["checkpoints"][0]
    lines = sum(landed["rows"].values()) + sum(landed["rejects"].values())
    if lines != collected.lines:
        raise AssertionError(f"landed {lines} lines of {collected.lines} from {folder}")
    return seconds
