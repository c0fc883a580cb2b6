"""A landing's data files: written by Spark into a table's data folder, listed and counted.

Spark writes the rows of one table for every checkpoint of the landing into a folder of its
own under the table's location::

    <table location>/data/landing-<uuid>/checkpoint=N/<day>=YYYY-MM-DD/part-*.parquet

One folder per checkpoint, so that the driver can commit (or leave out) each checkpoint's files
on their own; one per UTC day of the table's partition column, so that every file belongs to one
``day(...)`` partition of the Iceberg table. ``checkpoint`` and the day are folder names only:
the rows keep ``checkpoint_id`` and their timestamp, and the table's hidden partition is
computed from the timestamp. Nothing of the folder is visible to readers until the driver
commits its files (``pipeline_core.lake.commit_files``); files of a landing that crashed or was
committed already are orphans that maintenance removes.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from urllib.parse import urlparse

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.lake import location_filesystem
from spark_jobs.checkpoint import FILE_KEY_COLUMNS, FileKey
from spark_jobs.formats import utc_date

CHECKPOINT_FOLDER = "checkpoint"
DATA_FILE_SUFFIX = ".parquet"


def landing_folder(table_location: str, landing_uuid: str | None = None) -> str:
    """A new folder for a landing's files of the table at ``table_location`` (a URI)."""
    return f"{table_location.rstrip('/')}/data/landing-{landing_uuid or uuid.uuid4().hex}"


def write_files(frame: DataFrame, folder: str, time_column: str) -> dict[int, list[str]]:
    """Write ``frame`` into ``folder`` (by checkpoint and UTC day of ``time_column``) and
    return the data files written per checkpoint (URIs, sorted)."""
    day = f"{time_column}_date"
    (
        frame.withColumn(CHECKPOINT_FOLDER, F.col("checkpoint_id"))
        .withColumn(day, utc_date(F.col(time_column)))
        .drop("event_date")
        .write.mode("error")  # errorifexists; Spark Connect knows only this name
        .partitionBy(CHECKPOINT_FOLDER, day)
        .parquet(folder)
    )
    return data_files(folder)


def data_files(folder: str) -> dict[int, list[str]]:
    """The Parquet files under ``folder`` per checkpoint folder (URIs, sorted)."""
    scheme = urlparse(folder).scheme or "file"
    filesystem, root = location_filesystem(folder)
    selector = pafs.FileSelector(root, allow_not_found=True, recursive=True)
    files: dict[int, list[str]] = {}
    for info in filesystem.get_file_info(selector):
        name = info.path.rsplit("/", 1)[-1]
        if info.type != pafs.FileType.File or not name.endswith(DATA_FILE_SUFFIX):
            continue
        if name.startswith((".", "_")):
            continue
        checkpoint_id = _checkpoint_of(info.path)
        files.setdefault(checkpoint_id, []).append(f"{scheme}://{info.path}")
    return {key: sorted(paths) for key, paths in sorted(files.items())}


def _checkpoint_of(path: str) -> int:
    for part in path.split("/"):
        if part.startswith(f"{CHECKPOINT_FOLDER}="):
            return int(part.split("=", 1)[1])
    raise ValueError(f"a data file outside any checkpoint folder: {path}")


def landed_lines(spark: SparkSession, files: Sequence[str], source: str) -> Counter[FileKey]:
    """Rows of ``files`` (a source table's) per ``(checkpoint_id, source, host,
    file_fingerprint)``."""
    landed: Counter[FileKey] = Counter()
    if not files:
        return landed
    frame = spark.read.parquet(*files).select(
        "checkpoint_id", F.lit(source).alias("source"), "host", "file_fingerprint"
    )
    for row in frame.groupBy(*FILE_KEY_COLUMNS).count().collect():
        key = (
            int(row["checkpoint_id"]),
            str(row["source"]),
            str(row["host"]),
            str(row["file_fingerprint"]),
        )
        landed[key] = int(row["count"])
    return landed


def count_rejects(spark: SparkSession, files: Sequence[str]) -> dict[int, Counter[str]]:
    """Rejects of ``files`` per checkpoint and reason."""
    counts: dict[int, Counter[str]] = {}
    if files:
        frame = spark.read.parquet(*files)
        for row in frame.groupBy("checkpoint_id", "reason").count().collect():
            counts.setdefault(int(row["checkpoint_id"]), Counter())[str(row["reason"])] = int(
                row["count"]
            )
    return counts
