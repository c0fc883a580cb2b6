"""Land sealed checkpoints of staging batches into the lake's Iceberg tables, in one job.

Steps, for the checkpoints of one landing (docs/architecture.md is the contract):

1. Read every ``<host>/_manifest.json`` of each checkpoint directory (``spark_jobs.checkpoint``).
2. Check every part file against its manifest on the driver, before anything is written: its
   size, CRC-32 and the lines of each segment (``spark_jobs.verification``). The staged events
   per source file are the manifests' segment counts: a segment's lines, less the lines that
   continue one of its multiline ``events`` (``spark_jobs.checkpoint.staged_events``). A row is
   an event: where a segment lists none, a line.
3. Create the tables that are missing, and add the columns a declared schema gained
   (``pipeline_core.lake.LakeCatalog``).
4. Read the parts' segments once per source across hosts and checkpoints (``spark_jobs.staging``:
   the executors read each segment's bytes and split them into events, in their JVM for local
   parts, in Python workers for an object store's), parse them with the source's format
   (``spark_jobs.formats``) and write the parsed rows as Parquet data files into a new folder
   of the source's table (``spark_jobs.lake``): nothing a reader sees yet.
5. Reconcile (``spark_jobs.reconciliation``), with the counts taken in the job that wrote the
   rows (nothing is read back): the rows written per checkpoint (with a lake in an object
   store, per source file), and the source files with rejects, which the parse observed
   (``spark_jobs.formats``). More rows written than staged for a (checkpoint, source) (or a
   source file) fails the job; only the source files with rejects (or that wrote fewer rows
   than staged) are read and parsed a second time and their rejects written for ``_rejects``,
   counted in that job likewise. A landing without rejects reads its input once.
6. Check, per checkpoint, that rows + rejects equal its input events (its input lines when no
   segment lists multiline events); and that they are of the source files staged, as many of
   each: with Spark's writer, a checksum of their files (``spark_jobs.lake.file_hash``) summed
   in the jobs that wrote them against the same sum over the staged events (``check_files``).
7. Commit each table's files in one Iceberg commit (``pipeline_core.lake.commit_files``): the
   source tables, then ``_rejects``. In ``append`` mode a checkpoint a table holds already is
   left out (a retried landing never duplicates); in ``replace`` mode (reprocess, backfill) the
   checkpoints' rows are replaced in the same commit.

The staging folders are filesystem paths seen alike by the driver and the executors (local
disks, or a shared mount on a cluster), or an object store's URLs read through Arrow
filesystems (``spark_jobs.part_files``). The lake is a folder written by Spark's Parquet writer,
or an object store's URL written by the executors through Arrow filesystems
(``spark_jobs.lake_writer``), whose tasks return the rows each file holds, per source file:
step 5 then checks per source file. The only Python that runs on the executors is
``spark_jobs.staging.read_segments`` for an object store's parts (and
``spark_jobs.lake_writer.write_batches``); the driver needs pyiceberg.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipeline_core.formats import RESCUED_COLUMN
from pipeline_core.lake import (
    REJECTS_TABLE,
    LakeLocation,
    LandingMode,
    TableCommit,
    commit_files,
    open_lake,
)
from pipeline_core.staging_contract import LAKE_SQL_CONF, ManifestError, SourceSpec
from spark_jobs.checkpoint import Checkpoint, FileKey, PartFile, read_checkpoint, staged_events
from spark_jobs.formats import (
    STAGING_COLUMNS,
    NginxScanner,
    ParseResult,
    PatternMatcher,
    RejectReason,
    nginx_scanner,
    parse,
    pattern_matcher,
    rejected_files,
)
from spark_jobs.lake import landing_folder, staged_checksum, write_files
from spark_jobs.reconciliation import (
    LandedKey,
    LandingCountError,
    files_with_rejects,
    landed_lines,
    rescued_values,
    summarize,
)
from spark_jobs.staging import SegmentReader, SegmentRow, read_lines, segment_reader
from spark_jobs.verification import verify_parts

SPLITS_PER_CORE = 4
"""Read tasks per core of the session: a source's segments are split into this many runs per
core (at most one per segment), so that cores do not idle behind a few slow tasks."""
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointInput:
    """A sealed checkpoint to land: its staging folder (a path, or its URL in an object store)
    and the hosts whose batches the metastore recorded (``None``: every batch folder)."""

    folder: str
    hosts: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Landing:
    """One landing: which checkpoints, into which lake, as which landing and how."""

    checkpoints: tuple[CheckpointInput, ...]
    lake: LakeLocation
    landing_id: str
    """Names the landing in the snapshot summaries (the DAG run); a retry passes the same."""
    mode: LandingMode = LandingMode.APPEND


def land(spark: SparkSession, landing: Landing) -> dict[str, Any]:
    """Land ``landing``'s checkpoints into the lake (see the module doc); returns the summary
    ``{"landing_id", "mode", "segment_reader", "nginx_scanner", "pattern_matcher", "checkpoints":
    [{"checkpoint_id", "rows", "rejects", "rescued", "input_lines", "input_events", "batches"}],
    "tables": {table: {"snapshot_id", "committed", "already_committed"}}, "landed_at"}`` (a
    checkpoint's ``input_lines`` are the lines it staged, its ``input_events`` the events they
    hold, which its rows + rejects are; its ``rescued``, per source with declared columns, the
    values kept in the ``rescued`` column). ``LAKE_SQL_CONF`` is set on ``spark``.

    Raises:
        ManifestError: a batch is unsealed or its manifest is inconsistent, or a source is
            declared differently by two checkpoints.
        PartRowCountError: a part file differs from its manifest.
        LandingCountError: the written rows + rejects differ from the staged events.
    """
    for key, value in LAKE_SQL_CONF.items():
        spark.conf.set(key, value)
    checkpoints = [read_checkpoint(c.folder, c.hosts) for c in landing.checkpoints]
    ids = tuple(c.checkpoint_id for c in checkpoints)
    sources = _sources(checkpoints)
    parts = verify_parts([part for c in checkpoints for part in c.parts])
    reader = segment_reader(spark, (part.path for part in parts))
    scanner = nginx_scanner(spark)
    matcher = pattern_matcher(spark)
    with open_lake(landing.lake) as lake:
        tables = lake.ensure_tables(
            {name: spec.format for name, spec in sources.items()},
            {name: spec.declared_columns() for name, spec in sources.items()},
        )
        written: dict[str, dict[int, list[str]]] = {}
        landed: Counter[LandedKey] = Counter()
        rejected: set[FileKey] = set()
        checksums: list[int | None] = []
        rescues: dict[str, Observation] = {}
        for source, spec in sources.items():
            observation = Observation()
            rows = _parse_source(
                read_source(spark, parts, source, reader=reader),
                spec,
                scanner,
                matcher,
                observation,
            )[0]
            if RESCUED_COLUMN in rows.columns:
                rescues[source] = Observation()
                rows = rows.observe(rescues[source], *rescued_values(ids))
            out = write_files(
                rows,
                landing_folder(tables[source].location()),
                "event_time",
                ("host", "file_fingerprint"),
                checkpoints=ids,
                checksum=True,
            )
            written[source] = out.files
            checksums.append(out.file_checksum)
            landed.update(landed_lines(out, source))
            rejected |= {(c, source, h, f) for c, h, f in rejected_files(observation)}
        staged = staged_events(parts)
        short = files_with_rejects(staged, landed, rejected)
        rejects = rejects_of(spark, sources, parts, short, reader, scanner, matcher)
        reasons: dict[int, Counter[str]] = {}
        written[REJECTS_TABLE] = {}
        if rejects:
            out = write_files(
                reduce(DataFrame.unionByName, rejects),
                landing_folder(tables[REJECTS_TABLE].location()),
                "sealed_at",
                ("reason",),
                checkpoints=ids,
                values={"reason": [reason.value for reason in RejectReason]},
                checksum=True,
            )
            written[REJECTS_TABLE] = out.files
            checksums.append(out.file_checksum)
            for (checkpoint_id, reason), count in out.rows.items():
                reasons.setdefault(int(checkpoint_id or 0), Counter())[str(reason)] += count
        rescued = {source: observed.get for source, observed in rescues.items()}
        summaries = [
            summarize(
                c,
                landed,
                reasons.get(c.checkpoint_id, Counter()),
                {
                    source: int(counts[str(c.checkpoint_id)] or 0)
                    for source, counts in rescued.items()
                },
            )
            for c in checkpoints
        ]
        check_files(spark, staged, checksums)
        committed = {}
        for table_name, files in written.items():
            result = commit_files(
                tables[table_name], TableCommit(files, ids, landing.landing_id, landing.mode)
            )
            committed[table_name] = {
                "snapshot_id": result.snapshot_id,
                **{
                    outcome.value: sorted(i for i, o in result.outcomes.items() if o is outcome)
                    for outcome in set(result.outcomes.values())
                },
            }
    return {
        "landing_id": landing.landing_id,
        "mode": landing.mode.value,
        "segment_reader": reader.value,
        "nginx_scanner": scanner.value,
        "pattern_matcher": matcher.value,
        "checkpoints": summaries,
        "tables": committed,
        "landed_at": datetime.now(timezone.utc).isoformat(),
    }


def _sources(checkpoints: Sequence[Checkpoint]) -> dict[str, SourceSpec]:
    """The sources of every checkpoint, which must declare each source alike."""
    sources: dict[str, SourceSpec] = {}
    for checkpoint in checkpoints:
        for name, spec in checkpoint.sources.items():
            if sources.setdefault(name, spec) != spec:
                raise ManifestError(
                    f"source {name!r} is declared as {sources[name]} and, in checkpoint "
                    f"{checkpoint.checkpoint_id}, as {spec}: land those checkpoints apart"
                )
    return dict(sorted(sources.items()))


def read_source(
    spark: SparkSession,
    parts: Sequence[PartFile],
    source: str,
    files: Collection[tuple[int, str, str]] | None = None,
    reader: SegmentReader | None = None,
) -> DataFrame:
    """The staged events of ``source`` (one read across hosts and checkpoints; segments read and
    split into events on the executors: a line, or a multiline event's lines), with their
    ``event_lines`` and ``cut``, the ``checkpoint_id``, ``host``, ``source`` and ``sealed_at``
    of each part's batch, and ``line_bytes`` (an over-long line's whole length; null for the
    other rows).

    ``files``: only the segments of these ``(checkpoint_id, host, file_fingerprint)`` source
    files (``None``: every segment). ``reader``: where the executors read them (``None``:
    ``spark_jobs.staging.segment_reader``'s choice).
    """
    segments = [
        SegmentRow(part.path, part.checkpoint_id, part.host, part.sealed_at, segment)
        for part in parts
        if part.entry.source == source
        for segment in part.entry.segments
        if files is None or (part.checkpoint_id, part.host, segment.file_fingerprint) in files
    ]
    return read_lines(spark, segments, SPLITS_PER_CORE, reader).select(
        *(F.lit(source).alias(name) if name == "source" else name for name in STAGING_COLUMNS)
    )


def rejects_of(
    spark: SparkSession,
    sources: Mapping[str, SourceSpec],
    parts: Sequence[PartFile],
    short: set[FileKey],
    reader: SegmentReader | None = None,
    scanner: NginxScanner = NginxScanner.REGEX,
    matcher: PatternMatcher | None = None,
) -> list[DataFrame]:
    """The rejects of every source file in ``short``, reading only the segments of those
    files (with ``reader``, and parsing nginx lines with ``scanner``, patterns with
    ``matcher``)."""
    frames = []
    for source, spec in sources.items():
        files = {(c, host, fingerprint) for c, s, host, fingerprint in short if s == source}
        if files:
            rows = read_source(spark, parts, source, files, reader)
            frames.append(_parse_source(rows, spec, scanner, matcher)[1])
    return frames


def _parse_source(
    rows: DataFrame,
    spec: SourceSpec,
    scanner: NginxScanner,
    matcher: PatternMatcher | None = None,
    rejected: Observation | None = None,
) -> ParseResult:
    """:func:`parse` of one source's staging rows, as its manifest entry says."""
    return parse(
        rows,
        spec.format,
        time_field=spec.time_field,
        log_format=spec.log_format,
        timezone=spec.timezone,
        pattern=spec.pattern,
        columns=spec.columns,
        time_column=spec.time_column,
        time_layout=spec.time_layout,
        rejected=rejected,
        scanner=scanner,
        matcher=matcher,
    )


def check_files(
    spark: SparkSession, staged: Counter[FileKey], checksums: Sequence[int | None]
) -> None:
    """Check that the rows and rejects written are of the source files whose events were
    staged, as many of each: the written ``checksums`` (``WrittenFiles.file_checksum`` of
    every write; ``None`` from a writer counting per source file, whose counts
    ``files_with_rejects`` checked) add up to the staged events' (``staged_checksum``).

    Raises:
        LandingCountError: they do not: some file's rows landed twice, or under another file.
    """
    if not checksums or any(checksum is None for checksum in checksums):
        return
    written = sum(checksum or 0 for checksum in checksums)
    expected = staged_checksum(spark, staged)
    if written != expected:
        raise LandingCountError(
            f"the rows and rejects written are not of the source files staged, as many of each "
            f"(checksum of their files {written}, of the staged lines {expected})"
        )
