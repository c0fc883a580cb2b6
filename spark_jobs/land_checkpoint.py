"""Land one sealed checkpoint of staging batches into the Parquet lake (idempotently).

Usage (from the repository root; on a cluster ship the package with ``--py-files``)::

    spark-submit --master local[2] spark_jobs/land_checkpoint.py \\
        --checkpoint-dir <staging>/<pipeline>/<checkpoint:08d> --lake <lake root> \\
        [--shuffle-partitions N]

Steps, for checkpoint N (docs/architecture.md is the contract):

1. Read every ``<host>/_manifest.json`` of the checkpoint directory. A host folder without a
   manifest is an unsealed batch and fails the run; a checkpoint without any manifest, or whose
   manifests list no parts, is empty and lands zero rows.
2. Count the rows of every part file (Parquet footers, one small Spark job) and compare them
   with the manifest; any difference fails the run, naming the file.
3. Remove what an earlier landing of N left in the lake: the summary, every
   ``<lake>/<source>/event_date=*/checkpoint_id=N`` directory of the checkpoint's sources and
   ``<lake>/_rejects/checkpoint_id=N``.
4. Read the parts once per source across hosts, parse them with the source's format
   (``spark_jobs.formats``) and write ``<lake>/<source>/`` partitioned by ``event_date`` and
   ``checkpoint_id``, then all rejects to ``<lake>/_rejects/`` partitioned by
   ``checkpoint_id``; rows are ordered by file and offset inside each partition.
5. Count what the lake now holds for N, check that rows + rejects equal the input lines, and
   write ``<lake>/_landings/checkpoint_id=N.json`` (atomically, by rename). ``main`` prints the
   summary as its last line of standard output.

Idempotency: the writes use dynamic partition overwrite, so they replace only the partitions
they produce. On its own that would let stale output survive a re-run whose output differs (a
parser change that moves a row to another ``event_date``, or rows that now all reject), so step
3 deletes every partition of N first; the lake then holds exactly the new landing of N. Until
the re-run finishes N is absent from the lake (never duplicated), and its summary is absent, so
nothing commits a half-landed checkpoint. The staging and lake paths are filesystem paths seen
alike by the driver and the executors (local disks, or a shared mount on a cluster).

The module imports only pyspark, the standard library and ``spark_jobs``; no Python runs on the
executors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

if __package__ in (None, ""):  # run as a file: make the repository root importable
    try:
        import spark_jobs  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from spark_jobs.formats import RejectReason, SourceFormat, parse

MANIFEST_NAME = "_manifest.json"
MANIFEST_FORMAT_VERSION = 1
REJECTS_TABLE = "_rejects"
LANDINGS_DIR = "_landings"
PART_SCHEMA = StructType(
    [
        StructField("file_fingerprint", StringType()),
        StructField("byte_offset", LongType()),
        StructField("line", BinaryType()),
    ]
)
ROW_ORDER = ("file_fingerprint", "byte_offset")
SPLITS_PER_CORE = 4
LAKE_SQL_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
"""Settings the lake's content depends on; ``land`` applies them to the session it is given."""
_SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class LandingError(RuntimeError):
    """A checkpoint could not be landed; nothing of it is committed."""


class ManifestError(LandingError):
    """A batch directory or its manifest breaks the staging contract."""


class PartRowCountError(LandingError):
    """A part file holds a different number of rows than its manifest says."""


class LandingCountError(LandingError):
    """Rows plus rejects in the lake differ from the checkpoint's input lines."""


@dataclass(frozen=True)
class SourceSpec:
    """How a source's lines are parsed (a manifest ``sources`` entry)."""

    format: str
    time_field: str | None


@dataclass(frozen=True)
class PartFile:
    path: str  # absolute
    source: str
    rows: int


@dataclass(frozen=True)
class Batch:
    """One host's sealed share of the checkpoint."""

    host: str
    sealed_at: datetime
    sources: Mapping[str, SourceSpec]
    parts: tuple[PartFile, ...]


@dataclass(frozen=True)
class Checkpoint:
    checkpoint_id: int
    batches: tuple[Batch, ...]

    @property
    def input_lines(self) -> int:
        return sum(part.rows for batch in self.batches for part in batch.parts)

    @property
    def parts(self) -> tuple[PartFile, ...]:
        return tuple(part for batch in self.batches for part in batch.parts)

    def sources(self) -> dict[str, SourceSpec]:
        """Every source of every batch; the batches must agree on how to parse each."""
        merged: dict[str, SourceSpec] = {}
        for batch in self.batches:
            for name, spec in batch.sources.items():
                if merged.setdefault(name, spec) != spec:
                    raise ManifestError(
                        f"source {name!r} is declared as {merged[name]} and as {spec} "
                        f"(host {batch.host!r})"
                    )
        return dict(sorted(merged.items()))


# ---------------------------------------------------------------------------- manifests


def read_checkpoint(checkpoint_dir: str | os.PathLike[str]) -> Checkpoint:
    """Read and validate the manifests of ``<staging>/<pipeline>/<checkpoint:08d>``."""
    root = Path(os.path.abspath(checkpoint_dir))
    if not root.is_dir():
        raise ManifestError(f"checkpoint directory does not exist: {root}")
    if not root.name.isdigit():
        raise ManifestError(f"checkpoint directory is not named <checkpoint:08d>: {root}")
    checkpoint_id = int(root.name)
    batch_dirs = sorted(entry for entry in root.iterdir() if entry.is_dir())
    batches = tuple(_read_batch(batch_dir, checkpoint_id) for batch_dir in batch_dirs)
    return Checkpoint(checkpoint_id, batches)


def _read_batch(batch_dir: Path, checkpoint_id: int) -> Batch:
    manifest_path = batch_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ManifestError(f"batch is not sealed (no {MANIFEST_NAME}): {batch_dir}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        return _batch_from_manifest(manifest, batch_dir, checkpoint_id)
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"{manifest_path}: {exc}") from exc


def _batch_from_manifest(manifest: dict[str, Any], batch_dir: Path, checkpoint_id: int) -> Batch:
    if manifest["format_version"] != MANIFEST_FORMAT_VERSION:
        raise ValueError(f"unsupported format_version {manifest['format_version']!r}")
    if int(manifest["checkpoint_id"]) != checkpoint_id:
        raise ValueError(f"checkpoint_id {manifest['checkpoint_id']} != directory {checkpoint_id}")
    sources = {
        name: SourceSpec(str(SourceFormat(entry["format"])), entry.get("time_field"))
        for name, entry in manifest["sources"].items()
    }
    for name in sources:
        if not _SOURCE_NAME.fullmatch(name):
            raise ValueError(f"source name {name!r} cannot name a lake table")
    parts = tuple(_part(entry, batch_dir, sources) for entry in manifest["parts"])
    if sum(part.rows for part in parts) != int(manifest["line_count"]):
        raise ValueError(f"line_count {manifest['line_count']} != the sum of the parts' rows")
    sealed_at = datetime.fromisoformat(manifest["sealed_at"])
    if sealed_at.tzinfo is None:
        raise ValueError(f"sealed_at has no UTC offset: {manifest['sealed_at']!r}")
    return Batch(str(manifest["host"]), sealed_at.astimezone(UTC), sources, parts)


def _part(entry: dict[str, Any], batch_dir: Path, sources: Mapping[str, SourceSpec]) -> PartFile:
    name = str(entry["name"])
    if Path(name).name != name or name in (".", ".."):
        raise ValueError(f"part name {name!r} is not a file name")
    if entry["source"] not in sources:
        raise ValueError(f"part {name} belongs to undeclared source {entry['source']!r}")
    path = batch_dir / name
    if not path.is_file():
        raise ValueError(f"part listed in the manifest is missing: {path}")
    return PartFile(str(path), str(entry["source"]), int(entry["rows"]))


# ---------------------------------------------------------------------------- verification


def verify_part_rows(spark: SparkSession, parts: Sequence[PartFile]) -> dict[str, str]:
    """Check every part's row count against its manifest.

    Returns:
        Spark's name (URI) of each non-empty part, keyed by the part's path.

    Raises:
        PartRowCountError: naming every file whose count differs.
    """
    if not parts:
        return {}
    counted = (
        spark.read.schema(PART_SCHEMA)
        .parquet(*(part.path for part in parts))
        .select(F.col("_metadata.file_path").alias("uri"))
        .groupBy("uri")
        .count()
        .collect()
    )
    uri_by_path = {_local_path(row["uri"]): str(row["uri"]) for row in counted}
    rows_by_path = {_local_path(row["uri"]): int(row["count"]) for row in counted}
    wrong = [
        f"{part.path}: manifest says {part.rows} rows, file has {rows_by_path.get(part.path, 0)}"
        for part in parts
        if rows_by_path.get(part.path, 0) != part.rows
    ]
    if wrong:
        raise PartRowCountError("part files do not match their manifests:\n  " + "\n  ".join(wrong))
    return uri_by_path


def _local_path(uri: str) -> str:
    parsed = urlparse(uri)
    return os.path.abspath(unquote(parsed.path)) if parsed.scheme in ("", "file") else uri


# ---------------------------------------------------------------------------- reading


def read_source(
    spark: SparkSession, checkpoint: Checkpoint, source: str, uri_by_path: Mapping[str, str]
) -> DataFrame:
    """All parts of ``source`` across hosts, with ``host``, ``checkpoint_id``, ``source`` and
    ``sealed_at`` added from each part's batch."""
    located = [
        (uri_by_path[part.path], batch)
        for batch in checkpoint.batches
        for part in batch.parts
        if part.source == source and part.path in uri_by_path
    ]
    paths = [part.path for part in checkpoint.parts if part.source == source]
    uri = F.col("_metadata.file_path")
    host = _lookup(uri, {name: F.lit(batch.host) for name, batch in located})
    sealed_at = _lookup(uri, {name: F.lit(batch.sealed_at) for name, batch in located})
    return (
        spark.read.schema(PART_SCHEMA)
        .parquet(*paths)
        .select(
            "file_fingerprint",
            "byte_offset",
            "line",
            host.cast("string").alias("host"),
            F.lit(checkpoint.checkpoint_id).cast("long").alias("checkpoint_id"),
            F.lit(source).alias("source"),
            sealed_at.cast("timestamp").alias("sealed_at"),
        )
    )


def _lookup(key: Column, values: Mapping[str, Column]) -> Column:
    """``values[key]`` for a small literal mapping, evaluated per row."""
    if not values:
        return F.lit(None)
    pairs = [item for name, value in values.items() for item in (F.lit(name), value)]
    return F.create_map(*pairs)[key]


# ---------------------------------------------------------------------------- writing


def clear_checkpoint(lake: Path, sources: Sequence[str], checkpoint_id: int) -> None:
    """Delete every lake directory and the summary of ``checkpoint_id`` (see the module doc)."""
    summary_path(lake, checkpoint_id).unlink(missing_ok=True)
    partition = f"checkpoint_id={checkpoint_id}"
    for source in sources:
        for date_dir in sorted((lake / source).glob("event_date=*")):
            if (date_dir / partition).exists():
                shutil.rmtree(date_dir / partition)
                if not any(date_dir.iterdir()):
                    date_dir.rmdir()
    shutil.rmtree(lake / REJECTS_TABLE / partition, ignore_errors=True)


def write_rows(rows: DataFrame, table: Path) -> None:
    """Parsed rows into ``table`` partitioned by event date and checkpoint."""
    partitions = ("event_date", "checkpoint_id")
    _write(rows.sortWithinPartitions(*partitions, *ROW_ORDER), table, partitions)


def write_rejects(rejects: DataFrame, table: Path) -> None:
    _write(rejects.sortWithinPartitions("checkpoint_id", *ROW_ORDER), table, ("checkpoint_id",))


def _write(frame: DataFrame, table: Path, partitions: Sequence[str]) -> None:
    (
        frame.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partitions)
        .parquet(str(table))
    )


# ---------------------------------------------------------------------------- counting


def count_rows(spark: SparkSession, table: Path, checkpoint_id: int) -> int:
    """Rows of ``checkpoint_id`` in a source table (footer counts)."""
    dirs = sorted(str(d) for d in table.glob(f"event_date=*/checkpoint_id={checkpoint_id}"))
    if not dirs:
        return 0
    return spark.read.option("basePath", str(table)).parquet(*dirs).count()


def count_rejects(spark: SparkSession, table: Path, checkpoint_id: int) -> dict[str, int]:
    """Rejects of ``checkpoint_id`` by reason, every known reason present."""
    counts = {reason.value: 0 for reason in RejectReason}
    partition = table / f"checkpoint_id={checkpoint_id}"
    if partition.is_dir():
        for row in spark.read.parquet(str(partition)).groupBy("reason").count().collect():
            counts[str(row["reason"])] = int(row["count"])
    return counts


def summary_path(lake: Path, checkpoint_id: int) -> Path:
    return lake / LANDINGS_DIR / f"checkpoint_id={checkpoint_id}.json"


def write_summary(lake: Path, summary: Mapping[str, Any]) -> Path:
    """Write the landing summary atomically (temporary file, then rename)."""
    path = summary_path(lake, int(summary["checkpoint_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path


# ---------------------------------------------------------------------------- the job


def land(
    spark: SparkSession, checkpoint_dir: str | os.PathLike[str], lake: str | os.PathLike[str]
) -> dict[str, Any]:
    """Land one sealed checkpoint into ``lake`` and return its summary.

    Returns:
        ``{"checkpoint_id", "rows": {source: n}, "rejects": {reason: n}, "input_lines",
        "batches", "landed_at"}``, also written to ``<lake>/_landings/checkpoint_id=N.json``.

    Raises:
        ManifestError: a batch is unsealed or its manifest is inconsistent.
        PartRowCountError: a part's row count differs from its manifest.
        LandingCountError: rows + rejects in the lake differ from the input lines.
    """
    for key, value in LAKE_SQL_CONF.items():
        spark.conf.set(key, value)
    lake_root = Path(os.path.abspath(lake))
    checkpoint = read_checkpoint(checkpoint_dir)
    sources = checkpoint.sources()
    uri_by_path = verify_part_rows(spark, checkpoint.parts)
    clear_checkpoint(lake_root, list(sources), checkpoint.checkpoint_id)

    rejects: list[DataFrame] = []
    for name, spec in sources.items():
        if not any(part.source == name for part in checkpoint.parts):
            continue
        frame = read_source(spark, checkpoint, name, uri_by_path)
        parsed, rejected = parse(frame, spec.format, time_field=spec.time_field)
        write_rows(parsed, lake_root / name)
        rejects.append(rejected)
    if rejects:
        write_rejects(_union(rejects), lake_root / REJECTS_TABLE)

    summary = summarize(spark, lake_root, checkpoint, list(sources))
    write_summary(lake_root, summary)
    return summary


def summarize(
    spark: SparkSession, lake: Path, checkpoint: Checkpoint, sources: Sequence[str]
) -> dict[str, Any]:
    """Count what the lake holds for the checkpoint and check it against the input."""
    checkpoint_id = checkpoint.checkpoint_id
    rows = {source: count_rows(spark, lake / source, checkpoint_id) for source in sources}
    rejects = count_rejects(spark, lake / REJECTS_TABLE, checkpoint_id)
    landed = sum(rows.values()) + sum(rejects.values())
    if landed != checkpoint.input_lines:
        raise LandingCountError(
            f"checkpoint {checkpoint_id}: {sum(rows.values())} rows + {sum(rejects.values())} "
            f"rejects in {lake} != {checkpoint.input_lines} input lines"
        )
    return {
        "checkpoint_id": checkpoint_id,
        "rows": rows,
        "rejects": rejects,
        "input_lines": checkpoint.input_lines,
        "batches": len(checkpoint.batches),
        "landed_at": datetime.now(UTC).isoformat(),
    }


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


# ---------------------------------------------------------------------------- entry point


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Land a sealed checkpoint into the lake.")
    parser.add_argument(
        "--checkpoint-dir", required=True, help="<staging>/<pipeline>/<checkpoint:08d>"
    )
    parser.add_argument("--lake", required=True, help="the lake root")
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: the parallelism on local masters)",
    )
    return parser.parse_args(argv)


def build_session(app_name: str, shuffle_partitions: int | None = None) -> SparkSession:
    """A session set up for the landing job.

    Besides ``LAKE_SQL_CONF``: no console progress bar (standard output ends with the summary);
    input split into at least ``SPLITS_PER_CORE`` tasks per core, since staging parts are
    small and compress well and a few large tasks would leave cores idle; and, on a local
    master, as many shuffle partitions as cores (the job's only shuffles are small counts).
    Settings given with ``--conf`` are kept, except ``LAKE_SQL_CONF``.
    """
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    for key, value in LAKE_SQL_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    context = spark.sparkContext
    given = context.getConf()
    if not given.contains("spark.sql.files.minPartitionNum"):
        splits = SPLITS_PER_CORE * context.defaultParallelism
        spark.conf.set("spark.sql.files.minPartitionNum", str(splits))
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    elif (context.master or "").startswith("local") and not given.contains(
        "spark.sql.shuffle.partitions"
    ):
        spark.conf.set("spark.sql.shuffle.partitions", str(context.defaultParallelism))
    return spark


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    name = Path(os.path.abspath(args.checkpoint_dir))
    spark = build_session(f"sluice-land-{name.parent.name}-{name.name}", args.shuffle_partitions)
    try:
        summary = land(spark, args.checkpoint_dir, args.lake)
    finally:
        spark.stop()
    print(json.dumps(summary, sort_keys=False), flush=True)


if __name__ == "__main__":
    main()
