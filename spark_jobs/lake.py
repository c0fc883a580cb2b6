"""A landing's data files: written into a table's data folder, listed and counted.

The rows of one table for every checkpoint of the landing into a folder of its
own under the table's location::

    <table location>/data/landing-<uuid>/checkpoint=N/<day>=YYYY-MM-DD/part-*.parquet

One folder per checkpoint, so that the driver can commit (or leave out) each checkpoint's files
on their own; one per UTC day of the table's partition column, so that every file belongs to one
``day(...)`` partition of the Iceberg table. ``checkpoint`` and the day are folder names only:
the rows keep ``checkpoint_id`` and their timestamp, and the table's hidden partition is
computed from the timestamp. Nothing of the folder is visible to readers until the driver
commits its files (``pipeline_core.lake.commit_files``); files of a landing that crashed or was
committed already are orphans that maintenance removes.

A lake in a local (or mounted) folder is written by Spark's own Parquet writer, and the files
are listed and their rows counted by Spark afterwards (:func:`data_files`,
:func:`landed_lines`, :func:`count_rejects`). A lake in an object store is written by the
executors through Arrow filesystems (``spark_jobs.lake_writer``: no Hadoop connector needed),
whose tasks return the files they wrote and the rows of each, so nothing is read back.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from urllib.parse import urlparse

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.lake import location_filesystem
from pipeline_core.storage import StorageLocation, store_environment
from spark_jobs.checkpoint import FILE_KEY_COLUMNS, FileKey
from spark_jobs.formats import utc_date
from spark_jobs.lake_writer import CHECKPOINT_FOLDER, WRITTEN_SCHEMA, write_batches
from spark_jobs.session import share_environment

DATA_FILE_SUFFIX = ".parquet"


@dataclass(frozen=True)
class WrittenFiles:
    """The data files a landing wrote into one table."""

    files: dict[int, list[str]]
    """Per checkpoint, its files (URIs, sorted)."""
    rows: Counter[tuple[str | int | None, ...]] | None
    """Rows written per ``(checkpoint_id, *count_by values)`` (the values as strings), as the
    writing tasks counted them; None when Spark's writer wrote the files (count them by
    reading them: :func:`landed_lines`, :func:`count_rejects`)."""


def landing_folder(table_location: str, landing_uuid: str | None = None) -> str:
    """A new folder for a landing's files of the table at ``table_location`` (a URI)."""
    return f"{table_location.rstrip('/')}/data/landing-{landing_uuid or uuid.uuid4().hex}"


def write_files(
    frame: DataFrame, folder: str, time_column: str, count_by: Sequence[str] = ()
) -> WrittenFiles:
    """Write ``frame`` into ``folder`` (by checkpoint and UTC day of ``time_column``) and
    return the data files written per checkpoint; with ``folder`` in an object store also
    the rows written per checkpoint and value of the ``count_by`` columns."""
    if not StorageLocation.parse(folder).is_local:
        return _write_through_arrow(frame, folder, time_column, count_by)
    day = f"{time_column}_date"
    (
        frame.withColumn(CHECKPOINT_FOLDER, F.col("checkpoint_id"))
        .withColumn(day, utc_date(F.col(time_column)))
        .drop("event_date")
        .write.mode("error")  # errorifexists; Spark Connect knows only this name
        .partitionBy(CHECKPOINT_FOLDER, day)
        .parquet(folder)
    )
    return WrittenFiles(data_files(folder), None)


def _write_through_arrow(
    frame: DataFrame, folder: str, time_column: str, count_by: Sequence[str]
) -> WrittenFiles:
    """``write_files`` into an object store: the executors write with ``pyarrow`` (the
    store's variables of the driver's environment handed to them, as for reading staging)
    and return what they wrote; the job runs once (its result is collected once)."""
    share_environment(frame.sparkSession, store_environment())
    day = f"{time_column}_date"
    writer = partial(write_batches, folder=folder, day_column=day, count_by=tuple(count_by))
    prepared = frame.drop("event_date").withColumn(day, utc_date(F.col(time_column)))
    files: dict[int, set[str]] = {}
    rows: Counter[tuple[str | int | None, ...]] = Counter()
    for row in prepared.mapInArrow(writer, WRITTEN_SCHEMA).collect():
        checkpoint_id = int(row["checkpoint_id"])
        files.setdefault(checkpoint_id, set()).add(str(row["path"]))
        rows[(checkpoint_id, *row["key"])] += int(row["rows"])
    return WrittenFiles({i: sorted(files[i]) for i in sorted(files)}, rows)


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
