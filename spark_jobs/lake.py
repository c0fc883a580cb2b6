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

A lake in a local (or mounted) folder is written by Spark's own Parquet writer: the rows are
counted in the same job, by aggregates observed on the rows going into the writer
(``DataFrame.observe``: per checkpoint, and per value of the columns whose values are given),
and the files are listed afterwards (:func:`data_files`). A lake in an object store is written
by the executors through Arrow filesystems (``spark_jobs.lake_writer``: no Hadoop connector
needed), whose tasks return the files they wrote and the rows of each. Either way nothing is
read back.

Observed metrics count each row once, task retries and speculative copies included: Spark
merges an observation's per-task aggregates into the driver's from successful task results
only (a failed or killed attempt's are dropped), and only the first successful attempt of each
partition of the job's final (result) stage, where the observation runs, since the write job
shuffles nothing. The same holds for the Arrow writer's counts, which are the collected results
of that stage's tasks.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial, reduce
from urllib.parse import urlparse

import pyarrow.fs as pafs
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipeline_core.lake import location_filesystem
from pipeline_core.storage import StorageLocation, store_environment
from spark_jobs.checkpoint import FileKey
from spark_jobs.formats import utc_date
from spark_jobs.lake_writer import CHECKPOINT_FOLDER, WRITTEN_SCHEMA, write_batches
from spark_jobs.session import share_environment

DATA_FILE_SUFFIX = ".parquet"
CountKey = tuple[str | int | None, ...]
"""``(checkpoint_id, *values)``: what a count of written rows is of."""


@dataclass(frozen=True)
class WrittenFiles:
    """The data files a landing wrote into one table."""

    files: dict[int, list[str]]
    """Per checkpoint, its files (URIs, sorted)."""
    rows: Counter[CountKey]
    """Rows written (none of the counts zero), counted in the writing job: by the Arrow
    writer's tasks, per ``(checkpoint_id, *count_by values)`` (the values as strings); by
    Spark's writer, per ``(checkpoint_id, *values)`` of the ``count_by`` columns whose values
    are given (the others are not counted by), for the checkpoints given, with the rows of
    any other checkpoint or value counted under ``(None, ...)``."""
    file_checksum: int | None = None
    """Spark's writer only: the sum of :func:`file_hash` over the rows written, which says
    which source files the rows are of (:func:`staged_checksum` is the same sum over the events
    staged); ``None`` from the Arrow writer, whose counts are per source file already."""


FILE_HASH_MODULUS = 1 << 20
""":func:`file_hash` is below this: a sum of it over rows fits a long up to 2**43 rows."""


def file_hash(checkpoint_id: Column, host: Column, fingerprint: Column) -> Column:
    """A source file of a checkpoint as a number in ``[0, FILE_HASH_MODULUS)``: ``xxhash64``
    of the three. Summed over rows, it checks which files they are of: rows of one file landed
    twice and as many of another lost change the sum, but for a one-in-a-million collision."""
    return F.pmod(F.xxhash64(checkpoint_id, host, fingerprint), F.lit(FILE_HASH_MODULUS))


def staged_checksum(spark: SparkSession, staged: Mapping[FileKey, int]) -> int:
    """The sum of :func:`file_hash` over ``staged``'s events (per ``(checkpoint_id, source,
    host, file_fingerprint)``: ``spark_jobs.checkpoint.staged_events``): the
    :attr:`WrittenFiles.file_checksum` of the rows and rejects of those events together (a
    row or reject per event). Computed by Spark (a job over one row per file), so that the hash
    is Spark's own."""
    if not staged:
        return 0
    rows = [
        (checkpoint, host, fingerprint, events)
        for (checkpoint, _, host, fingerprint), events in staged.items()
    ]
    frame = spark.createDataFrame(
        rows, "checkpoint_id long, host string, file_fingerprint string, events long"
    )
    weighted = F.col("events") * file_hash(
        F.col("checkpoint_id"), F.col("host"), F.col("file_fingerprint")
    )
    row = frame.agg(F.sum(weighted).alias("checksum")).first()
    return 0 if row is None or row["checksum"] is None else int(row["checksum"])


def landing_folder(table_location: str, landing_uuid: str | None = None) -> str:
    """A new folder for a landing's files of the table at ``table_location`` (a URI)."""
    return f"{table_location.rstrip('/')}/data/landing-{landing_uuid or uuid.uuid4().hex}"


def write_files(
    frame: DataFrame,
    folder: str,
    time_column: str,
    count_by: Sequence[str] = (),
    *,
    checkpoints: Collection[int] = (),
    values: Mapping[str, Collection[str]] | None = None,
    checksum: bool = False,
) -> WrittenFiles:
    """Write ``frame`` into ``folder`` (by checkpoint and UTC day of ``time_column``) and
    return the data files written per checkpoint and the rows written (``WrittenFiles.rows``).

    ``checkpoints`` and ``values`` (the values of some ``count_by`` columns) are what Spark's
    writer counts by, one observed aggregate each (every combination of a checkpoint and a
    value of each such column): give only columns of few values, not ``file_fingerprint``.
    ``checksum``: Spark's writer also sums :func:`file_hash` of the rows (their ``checkpoint_id``,
    ``host`` and ``file_fingerprint``) in the same job.
    """
    if not StorageLocation.parse(folder).is_local:
        return _write_through_arrow(frame, folder, time_column, count_by)
    known = values or {}
    groups = _count_groups(checkpoints, [(c, sorted(known[c])) for c in count_by if c in known])
    observation = Observation()
    day = f"{time_column}_date"
    prepared = (
        frame.withColumn(CHECKPOINT_FOLDER, F.col("checkpoint_id"))
        .withColumn(day, utc_date(F.col(time_column)))
        .drop("event_date")
    )
    # Observed last, so that the projections above still collapse into one.
    (
        _observe_counts(prepared, observation, groups, checksum)
        .write.mode("error")  # errorifexists; Spark Connect knows only this name
        .partitionBy(CHECKPOINT_FOLDER, day)
        .parquet(folder)
    )
    counts = observed_counts(observation, groups)
    total = observation.get.get("file_checksum") if checksum else None
    return WrittenFiles(data_files(folder), counts, None if total is None else int(total))


def _count_groups(
    checkpoints: Collection[int], columns: Sequence[tuple[str, Sequence[str]]]
) -> list[tuple[tuple[str, ...], CountKey]]:
    """Every ``(columns, (checkpoint_id, *values))`` that Spark's writer counts rows of."""
    names = ("checkpoint_id", *(name for name, _ in columns))
    keys: list[CountKey] = [(checkpoint,) for checkpoint in sorted(checkpoints)]
    for _, values in columns:
        keys = [(*key, value) for key in keys for value in values]
    return [(names, key) for key in keys]


def _observe_counts(
    frame: DataFrame,
    observation: Observation,
    groups: Sequence[tuple[tuple[str, ...], CountKey]],
    checksum: bool = False,
) -> DataFrame:
    """``frame`` observing, in the job that writes it, its rows (``rows``), the rows of each
    group (``rows_<index>``: the rows holding the group's column values) and with ``checksum``
    the sum of their :func:`file_hash` (``file_checksum``; 0 without rows)."""
    metrics: list[Column] = [F.count(F.lit(1)).alias("rows")]
    if checksum:
        hashed = file_hash(F.col("checkpoint_id"), F.col("host"), F.col("file_fingerprint"))
        metrics.append(F.coalesce(F.sum(hashed), F.lit(0)).alias("file_checksum"))
    for index, (names, key) in enumerate(groups):
        matches = [F.col(name) == F.lit(value) for name, value in zip(names, key, strict=True)]
        # count(when(...)), not count_if: its rewrite adds a column, and a projection to drop it.
        counted = F.when(reduce(Column.__and__, matches), F.lit(1))
        metrics.append(F.count(counted).alias(f"rows_{index}"))
    return frame.observe(observation, *metrics)


def observed_counts(
    observation: Observation, groups: Sequence[tuple[tuple[str, ...], CountKey]]
) -> Counter[CountKey]:
    """The rows per group that ``observation`` (:func:`_observe_counts`) counted, and the rows
    of no group under ``(None, ...)``; blocks until the job observed has finished."""
    metrics = observation.get
    counts: Counter[CountKey] = Counter()
    for index, (_, key) in enumerate(groups):
        counts[key] = int(metrics[f"rows_{index}"])
    width = len(groups[0][1]) if groups else 1
    counts[(None,) * width] = int(metrics["rows"]) - sum(counts.values())
    return +counts  # without the zero counts


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
