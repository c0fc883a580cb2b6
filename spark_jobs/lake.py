"""The lake the landing job writes (docs/architecture.md, "Lake layout")::

    <lake>/<source>/event_date=YYYY-MM-DD/checkpoint_id=N/part-*.parquet   parsed rows
    <lake>/_rejects/checkpoint_id=N/part-*.parquet       lines that did not parse
    <lake>/_landings/checkpoint_id=N.json                counts of the last landing

Writes use dynamic partition overwrite (``LAKE_SQL_CONF`` of the staging contract), so they
replace only the partitions they produce; ``clear_checkpoint`` removes every partition of a
checkpoint first, so that a re-run's output replaces all of the earlier one's.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.staging_contract import REJECTS_TABLE, landing_summary_path
from spark_jobs.checkpoint import FILE_KEY_COLUMNS, FileKey
from spark_jobs.formats import RejectReason


def clear_checkpoint(lake: Path, sources: Iterable[str], checkpoint_id: int) -> None:
    """Delete the summary and every lake directory of ``checkpoint_id``: its
    ``event_date=*/checkpoint_id=N`` directories in the tables of ``sources`` (and an
    ``event_date`` directory left empty) and its partition of the rejects."""
    landing_summary_path(lake, checkpoint_id).unlink(missing_ok=True)
    partition = f"checkpoint_id={checkpoint_id}"
    for source in sources:
        for date_dir in sorted((lake / source).glob("event_date=*")):
            if (date_dir / partition).exists():
                shutil.rmtree(date_dir / partition)
                if not any(date_dir.iterdir()):
                    date_dir.rmdir()
    shutil.rmtree(lake / REJECTS_TABLE / partition, ignore_errors=True)


def write_rows(frame: DataFrame, lake: Path, source: str) -> None:
    """Write parsed rows of ``source`` into its table, by ``event_date`` and
    ``checkpoint_id``."""
    _write_table(frame, lake / source, ("event_date", "checkpoint_id"))


def write_rejects(frames: Sequence[DataFrame], lake: Path) -> None:
    """Write the rejects of every source (if there are any) into ``_rejects``, by
    ``checkpoint_id``."""
    if frames:
        _write_table(
            reduce(DataFrame.unionByName, frames), lake / REJECTS_TABLE, ("checkpoint_id",)
        )


def _write_table(frame: DataFrame, table: Path, partitions: Sequence[str]) -> None:
    """Write ``frame`` into ``table``, replacing only the partitions it produces."""
    (
        frame.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partitions)
        .parquet(str(table))
    )


def landed_lines(
    spark: SparkSession, lake: Path, sources: Iterable[str], checkpoint_id: int
) -> Counter[FileKey]:
    """Parsed rows of ``checkpoint_id`` in the lake per ``(source, host, file_fingerprint)``."""
    frames = []
    for source in sources:
        table = lake / source
        dirs = sorted(str(d) for d in table.glob(f"event_date=*/checkpoint_id={checkpoint_id}"))
        if dirs:
            frame = spark.read.option("basePath", str(table)).parquet(*dirs)
            frames.append(frame.select(F.lit(source).alias("source"), "host", "file_fingerprint"))
    landed: Counter[FileKey] = Counter()
    if frames:
        counts = reduce(DataFrame.unionByName, frames).groupBy(*FILE_KEY_COLUMNS).count()
        for row in counts.collect():
            key = (str(row["source"]), str(row["host"]), str(row["file_fingerprint"]))
            landed[key] = int(row["count"])
    return landed


def count_rejects(spark: SparkSession, lake: Path, checkpoint_id: int) -> dict[str, int]:
    """Rejects of ``checkpoint_id`` by reason, every known reason present."""
    counts = {reason.value: 0 for reason in RejectReason}
    partition = lake / REJECTS_TABLE / f"checkpoint_id={checkpoint_id}"
    if partition.is_dir():
        for row in spark.read.parquet(str(partition)).groupBy("reason").count().collect():
            counts[str(row["reason"])] = int(row["count"])
    return counts


def write_summary(lake: Path, summary: Mapping[str, Any]) -> Path:
    """Write the landing summary atomically (temporary file, then rename)."""
    path = landing_summary_path(lake, int(summary["checkpoint_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path
