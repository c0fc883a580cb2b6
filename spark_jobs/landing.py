"""Land one sealed checkpoint of staging batches into the Parquet lake (idempotently).

Steps, for checkpoint N (docs/architecture.md is the contract):

1. Read every ``<host>/_manifest.json`` of the checkpoint directory (``spark_jobs.checkpoint``).
2. Check every part file against its manifest on the driver, before the lake changes: its
   size, CRC-32 and the lines of each segment (``spark_jobs.verification``). The staged lines
   per source file (``file_fingerprint``) are the manifests' segment counts.
3. Remove what an earlier landing of N left in the lake (``spark_jobs.lake``): the summary,
   every ``<lake>/<source>/event_date=*/checkpoint_id=N`` directory of the checkpoint's sources
   and ``<lake>/_rejects/checkpoint_id=N``.
4. Read the parts' segments once per source across hosts (``spark_jobs.staging``: the
   executors read each segment's bytes and split them into lines, checking each segment's line
   count again), parse them with the source's format (``spark_jobs.formats``) and write the
   parsed rows to ``<lake>/<source>/``, partitioned by ``event_date`` and ``checkpoint_id``.
   No shuffle and no sort: each input split (a run of consecutive segments) is written by one
   task, keeping the staging order of its rows.
5. Reconcile: count the landed rows per (source, host, source file) and compare them with the
   staged counts of step 2. More landed than staged fails the run; the source files with fewer
   are the only ones holding rejects, so only their segments are read and parsed a second
   time and their rejects written to ``<lake>/_rejects/``, partitioned by ``checkpoint_id``.
   A checkpoint without rejects is read once.
6. Check that rows + rejects in the lake equal the input lines and write
   ``<lake>/_landings/checkpoint_id=N.json`` (atomically, by rename).

Idempotency: the writes use dynamic partition overwrite, so they replace only the partitions
they produce. On its own that would let stale output survive a re-run whose output differs (a
parser change that moves a row to another ``event_date``, or rows that now all reject), so step
3 deletes every partition of N first; the lake then holds exactly the new landing of N. Until
the re-run finishes N is absent from the lake (never duplicated), and so is its summary, so
nothing commits a half-landed checkpoint.

The staging and lake paths are filesystem paths seen alike by the driver and the executors
(local disks, or a shared mount on a cluster). The only Python that runs on the executors is
``spark_jobs.staging.read_segments``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline_core.errors import LandingError
from pipeline_core.staging_contract import LAKE_SQL_CONF
from spark_jobs.checkpoint import Checkpoint, FileKey, PartFile, read_checkpoint, staged_lines
from spark_jobs.formats import parse
from spark_jobs.lake import (
    clear_checkpoint,
    count_rejects,
    landed_lines,
    write_rejects,
    write_rows,
    write_summary,
)
from spark_jobs.staging import SegmentRow, read_lines
from spark_jobs.verification import verify_parts

SPLITS_PER_CORE = 4
"""Read tasks per core of the session: a source's segments are split into this many runs per
core (at most one per segment), so that cores do not idle behind a few slow tasks."""


class LandingCountError(LandingError):
    """The lake holds a different number of lines for the checkpoint than were staged."""


def land(
    spark: SparkSession,
    checkpoint_dir: str | os.PathLike[str],
    lake: str | os.PathLike[str],
    hosts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Land one sealed checkpoint into ``lake`` and return its summary.

    ``hosts``: only the batches of these hosts (those the metastore recorded; see
    ``read_checkpoint``). ``LAKE_SQL_CONF`` is set on ``spark``.

    Returns:
        ``{"checkpoint_id", "rows": {source: n}, "rejects": {reason: n}, "input_lines",
        "batches", "landed_at"}``, also written to ``<lake>/_landings/checkpoint_id=N.json``.

    Raises:
        ManifestError: a batch is unsealed or its manifest is inconsistent.
        PartRowCountError: a part file differs from its manifest (its size, CRC-32 or the
            lines of a segment: the subclasses ``PartSizeError``, ``PartChecksumError``).
        LandingCountError: the lake holds a different number of lines than were staged.
    """
    checkpoint = read_checkpoint(checkpoint_dir, hosts)
    checkpoint_id = checkpoint.checkpoint_id
    lake_root = Path(os.path.abspath(lake))
    for key, value in LAKE_SQL_CONF.items():
        spark.conf.set(key, value)
    parts = verify_parts(checkpoint.parts)
    clear_checkpoint(lake_root, checkpoint.sources, checkpoint_id)

    for source in sorted({part.entry.source for part in parts}):
        spec = checkpoint.sources[source]
        rows = read_source(spark, parts, source, checkpoint_id)
        write_rows(parse(rows, spec.format, time_field=spec.time_field)[0], lake_root, source)

    landed = landed_lines(spark, lake_root, checkpoint.sources, checkpoint_id)
    short = files_with_rejects(staged_lines(parts), landed)
    write_rejects(rejects_of(spark, checkpoint, parts, short), lake_root)

    summary = summarize(checkpoint, landed, count_rejects(spark, lake_root, checkpoint_id))
    write_summary(lake_root, summary)
    return summary


def read_source(
    spark: SparkSession,
    parts: Sequence[PartFile],
    source: str,
    checkpoint_id: int,
    files: Collection[tuple[str, str]] | None = None,
) -> DataFrame:
    """The staged lines of ``source`` (one read across hosts; segments read and split into
    lines on the executors), with ``host``, ``checkpoint_id``, ``source`` and ``sealed_at``
    added from each part's batch, and ``line_bytes`` (an over-long line's whole length; null
    for the other lines).

    ``files``: only the segments of these ``(host, file_fingerprint)`` source files (``None``:
    every segment).
    """
    segments = [
        SegmentRow(part.path, part.host, part.sealed_at, segment)
        for part in parts
        if part.entry.source == source
        for segment in part.entry.segments
        if files is None or (part.host, segment.file_fingerprint) in files
    ]
    return read_lines(spark, segments, SPLITS_PER_CORE).select(
        "file_fingerprint",
        "byte_offset",
        "line",
        "host",
        F.lit(checkpoint_id).cast("long").alias("checkpoint_id"),
        F.lit(source).alias("source"),
        "sealed_at",
        "line_bytes",
    )


def files_with_rejects(staged: Counter[FileKey], landed: Counter[FileKey]) -> set[FileKey]:
    """The source files that landed fewer rows than were staged.

    Raises:
        LandingCountError: a source file landed more rows than were staged.
    """
    surplus = sorted(key for key, rows in landed.items() if rows > staged[key])
    if surplus:
        raise LandingCountError(f"more rows landed than staged for (source, host, file): {surplus}")
    return {key for key, rows in staged.items() if landed[key] < rows}


def rejects_of(
    spark: SparkSession,
    checkpoint: Checkpoint,
    parts: Sequence[PartFile],
    short: set[FileKey],
) -> list[DataFrame]:
    """The rejects of every source file in ``short``, reading only the segments of those
    files."""
    frames = []
    for source, spec in checkpoint.sources.items():
        files = {(host, fingerprint) for s, host, fingerprint in short if s == source}
        if not files:
            continue
        rows = read_source(spark, parts, source, checkpoint.checkpoint_id, files)
        frames.append(parse(rows, spec.format, time_field=spec.time_field)[1])
    return frames


def summarize(
    checkpoint: Checkpoint, landed: Counter[FileKey], rejects: Mapping[str, int]
) -> dict[str, Any]:
    """The landing summary; rows + rejects must add up to the input lines.

    Raises:
        LandingCountError: they do not.
    """
    rows = dict.fromkeys(checkpoint.sources, 0)
    for (source, _, _), count in landed.items():
        rows[source] += count
    total = sum(rows.values()) + sum(rejects.values())
    if total != checkpoint.input_lines:
        raise LandingCountError(
            f"checkpoint {checkpoint.checkpoint_id}: {sum(rows.values())} rows + "
            f"{sum(rejects.values())} rejects landed != {checkpoint.input_lines} input lines"
        )
    return {
        "checkpoint_id": checkpoint.checkpoint_id,
        "rows": rows,
        "rejects": dict(rejects),
        "input_lines": checkpoint.input_lines,
        "batches": checkpoint.batches,
        "landed_at": datetime.now(UTC).isoformat(),
    }
