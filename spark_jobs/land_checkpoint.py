"""Land one sealed checkpoint of staging batches into the Parquet lake (idempotently).

Usage (from the repository root; on a cluster ship the package with ``--py-files``)::

    spark-submit --master local[2] spark_jobs/land_checkpoint.py \\
        --checkpoint-dir <staging>/<pipeline>/<checkpoint:08d> --lake <lake root> \\
        [--shuffle-partitions N]

Steps, for checkpoint N (docs/architecture.md is the contract):

1. Read every ``<host>/_manifest.json`` of the checkpoint directory. A host folder without a
   manifest is an unsealed batch and fails the run; a checkpoint without any manifest, or whose
   manifests list no parts, is empty and lands zero rows.
2. Check every part file against its manifest on the driver, before the lake changes: its
   size, then (one sequential read, no Spark job) its CRC-32 and the lines of each of its
   segments (an over-long line's segment: one line, its prefix, without a newline). A part
   that differs fails the run, naming the file. The staged lines per source file
   (``file_fingerprint``) are the manifests' segment counts.
3. Remove what an earlier landing of N left in the lake: the summary, every
   ``<lake>/<source>/event_date=*/checkpoint_id=N`` directory of the checkpoint's sources and
   ``<lake>/_rejects/checkpoint_id=N``.
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
   ``<lake>/_landings/checkpoint_id=N.json`` (atomically, by rename). ``main`` prints the
   summary as its last line of standard output.

Idempotency: the writes use dynamic partition overwrite, so they replace only the partitions
they produce. On its own that would let stale output survive a re-run whose output differs (a
parser change that moves a row to another ``event_date``, or rows that now all reject), so step
3 deletes every partition of N first; the lake then holds exactly the new landing of N. Until
the re-run finishes N is absent from the lake (never duplicated), and so is its summary, so
nothing commits a half-landed checkpoint.

The staging and lake paths are filesystem paths seen alike by the driver and the executors
(local disks, or a shared mount on a cluster). The module imports only pyspark, the standard
library, ``spark_jobs`` and (if installed) zlib-ng; the only Python that runs on the executors is
``spark_jobs.staging.read_segments``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import reduce
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository root importable
    try:
        import spark_jobs  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

try:  # zlib-ng's CRC-32 is SIMD (about 20 GB/s) and the same checksum as zlib's
    from zlib_ng.zlib_ng import crc32
except ImportError:  # a driver environment without it: the standard library's
    from zlib import crc32

from spark_jobs.formats import RejectReason, SourceFormat, parse
from spark_jobs.staging import SegmentRow, count_newlines, read_lines

MANIFEST_NAME = "_manifest.json"
MANIFEST_FORMAT_VERSION = 4
"""The manifest format the collector writes: 4 gave segments a ``kind`` (see ``SegmentKind``)."""
READABLE_FORMAT_VERSIONS = frozenset({3, MANIFEST_FORMAT_VERSION})
"""The formats this job lands. A format 3 manifest (batches sealed before 4) has ``lines``
segments only, without ``kind``; any other format is refused."""
REJECTS_TABLE = "_rejects"
LANDINGS_DIR = "_landings"
LAKE_SQL_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A writer held open per partition (up to 16 per task) instead of sorting every row by
    # its partition before writing: no sort, rows keep their staging order.
    "spark.sql.maxConcurrentOutputFileWriters": "16",
}
"""Settings the lake's content and the writes depend on; ``land`` applies them to the session
it is given."""
SPLITS_PER_CORE = 4
"""Read tasks per core of the session: a source's segments are split into this many runs per
core (at most one per segment), so that cores do not idle behind a few slow tasks."""
VERIFY_READ_BYTES = 8 * 1024 * 1024
"""The driver checks part files reading this many bytes at a time (its memory for them)."""
_SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_CRC32 = re.compile(r"[0-9a-fA-F]{8}")
_NEWLINE = 10

FileKey = tuple[str, str, str]
"""``(source, host, file_fingerprint)``: one source file's lines in one batch."""
FILE_KEY_COLUMNS = ("source", "host", "file_fingerprint")


class LandingError(RuntimeError):
    """A checkpoint could not be landed; nothing of it may be committed."""


class ManifestError(LandingError):
    """A batch directory or its manifest breaks the staging contract."""


class PartRowCountError(LandingError):
    """A part file does not hold what its manifest says: here, a segment holds another number
    of lines. The subclasses name the other ways a part differs."""


class PartSizeError(PartRowCountError):
    """A part file's size differs from its manifest's ``bytes``."""


class PartChecksumError(PartRowCountError):
    """A part file's CRC-32 differs from its manifest's ``crc32``."""


class LandingCountError(LandingError):
    """The lake holds a different number of lines for the checkpoint than were staged."""


@dataclass(frozen=True)
class SourceSpec:
    """How a source's lines are parsed (a manifest ``sources`` entry)."""

    format: str
    time_field: str | None


class SegmentKind(StrEnum):
    """What a segment's bytes are (a manifest segment's ``kind``)."""

    LINES = "lines"
    """Bytes of a source file from ``start_offset``: whole lines (the last may lack its
    ``\\n``)."""
    LONG_LINE = "long_line"
    """The first bytes (no ``\\n``) of one line of ``line_bytes`` bytes at ``start_offset``,
    longer than the collector's ``max_line_bytes``: it lands as a ``line_too_long`` reject."""


@dataclass(frozen=True)
class Segment:
    """A manifest's segment of a part file: ``length`` bytes from ``part_offset``, holding
    ``lines`` whole lines of one source file from ``start_offset`` in it, or (``LONG_LINE``)
    the prefix of one line of ``line_bytes`` bytes there."""

    file_fingerprint: str
    start_offset: int
    part_offset: int
    length: int
    lines: int
    kind: SegmentKind = SegmentKind.LINES
    line_bytes: int | None = None


@dataclass(frozen=True)
class PartFile:
    """A part file named by a manifest, with its segments (consecutive, from offset 0)."""

    path: str  # absolute
    source: str
    rows: int
    host: str
    sealed_at: datetime
    bytes: int
    crc32: str
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class StagedPart:
    """A verified, non-empty part file and its lines per source file (``file_fingerprint``)."""

    part: PartFile
    rows_by_fingerprint: Mapping[str, int]


@dataclass(frozen=True)
class Checkpoint:
    """The sealed batches of one checkpoint, one per host."""

    checkpoint_id: int
    batches: int
    sources: Mapping[str, SourceSpec]
    parts: tuple[PartFile, ...]

    @property
    def input_lines(self) -> int:
        return sum(part.rows for part in self.parts)


# ---------------------------------------------------------------------------- manifests


def read_checkpoint(
    checkpoint_dir: str | os.PathLike[str], hosts: Sequence[str] | None = None
) -> Checkpoint:
    """Read and validate the manifests of ``<staging>/<pipeline>/<checkpoint:08d>``.

    ``hosts``: the hosts whose batches the metastore recorded for the checkpoint; only their
    folders are read (a folder another host left by crashing between its rename and its
    metastore transaction is not part of the checkpoint: that host reads those lines again).
    ``None`` reads every batch folder.

    Raises:
        ManifestError: the directory is missing or misnamed, a batch has no manifest, a
            manifest is malformed or names a missing part, batches disagree on a source, or a
            recorded host's batch folder is missing.
    """
    root = Path(os.path.abspath(checkpoint_dir))
    if not root.is_dir():
        raise ManifestError(f"checkpoint directory does not exist: {root}")
    if not root.name.isdigit():
        raise ManifestError(f"checkpoint directory is not named <checkpoint:08d>: {root}")
    checkpoint_id = int(root.name)
    sources: dict[str, SourceSpec] = {}
    parts: list[PartFile] = []
    batch_dirs = sorted(entry for entry in root.iterdir() if entry.is_dir())
    if hosts is not None:
        missing = sorted(set(hosts) - {entry.name for entry in batch_dirs})
        if missing:
            raise ManifestError(f"recorded batches missing under {root}: {', '.join(missing)}")
        unrecorded = [entry.name for entry in batch_dirs if entry.name not in set(hosts)]
        if unrecorded:
            print(
                f"skipping batch folders the metastore did not record: {', '.join(unrecorded)}",
                file=sys.stderr,
            )
        batch_dirs = [entry for entry in batch_dirs if entry.name in set(hosts)]
    for batch_dir in batch_dirs:
        batch_sources, batch_parts = _read_batch(batch_dir, checkpoint_id)
        for name, spec in batch_sources.items():
            if sources.setdefault(name, spec) != spec:
                raise ManifestError(
                    f"source {name!r} is declared as {sources[name]} and as {spec} in {batch_dir}"
                )
        parts.extend(batch_parts)
    return Checkpoint(checkpoint_id, len(batch_dirs), dict(sorted(sources.items())), tuple(parts))


def _read_batch(
    batch_dir: Path, checkpoint_id: int
) -> tuple[dict[str, SourceSpec], list[PartFile]]:
    manifest_path = batch_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ManifestError(f"batch is not sealed (no {MANIFEST_NAME}): {batch_dir}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        return _parse_manifest(manifest, batch_dir, checkpoint_id)
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"{manifest_path}: {exc}") from exc


def _parse_manifest(
    manifest: dict[str, Any], batch_dir: Path, checkpoint_id: int
) -> tuple[dict[str, SourceSpec], list[PartFile]]:
    version = manifest["format_version"]
    if type(version) is not int or version not in READABLE_FORMAT_VERSIONS:
        raise ValueError(f"unsupported format_version {version!r}")
    if int(manifest["checkpoint_id"]) != checkpoint_id:
        raise ValueError(f"checkpoint_id {manifest['checkpoint_id']} != directory {checkpoint_id}")
    sources: dict[str, SourceSpec] = {}
    for name, entry in manifest["sources"].items():
        if not _SOURCE_NAME.fullmatch(name):
            raise ValueError(f"source name {name!r} cannot name a lake table")
        sources[name] = SourceSpec(SourceFormat(entry["format"]).value, entry.get("time_field"))
    sealed_at = datetime.fromisoformat(manifest["sealed_at"])
    if sealed_at.tzinfo is None:
        raise ValueError(f"sealed_at has no UTC offset: {manifest['sealed_at']!r}")
    host = str(manifest["host"])
    parts = [
        _parse_part(entry, batch_dir, sources, host, sealed_at.astimezone(UTC), version)
        for entry in manifest["parts"]
    ]
    if sum(part.rows for part in parts) != int(manifest["line_count"]):
        raise ValueError(f"line_count {manifest['line_count']} != the sum of the parts' rows")
    return sources, parts


def _parse_part(
    entry: dict[str, Any],
    batch_dir: Path,
    sources: Mapping[str, SourceSpec],
    host: str,
    sealed_at: datetime,
    version: int = MANIFEST_FORMAT_VERSION,
) -> PartFile:
    """A manifest's ``parts`` entry (of format ``version``), its segments checked against its
    ``rows`` and ``bytes``.

    Raises:
        ValueError, KeyError, TypeError: the entry breaks the contract (the message names the
            part).
    """
    name, source = str(entry["name"]), str(entry["source"])
    if Path(name).name != name or name in (".", ".."):
        raise ValueError(f"part name {name!r} is not a file name")
    if source not in sources:
        raise ValueError(f"part {name} belongs to undeclared source {source!r}")
    if not (batch_dir / name).is_file():
        raise ValueError(f"part listed in the manifest is missing: {batch_dir / name}")
    where = f"part {name}"
    rows = _count(entry, "rows", where)
    size = _count(entry, "bytes", where)
    crc32 = _field(entry, "crc32", where)
    if not isinstance(crc32, str) or not _CRC32.fullmatch(crc32):
        raise ValueError(f"{where}: crc32 {crc32!r} is not 8 hex digits")
    segments = _parse_segments(_field(entry, "segments", where), name, version)
    if sum(segment.length for segment in segments) != size:
        raise ValueError(f"part {name}: its segments hold other than its {size} bytes")
    if sum(segment.lines for segment in segments) != rows:
        raise ValueError(f"part {name}: its segments hold other than its {rows} rows")
    return PartFile(
        str(batch_dir / name), source, rows, host, sealed_at, size, crc32.lower(), segments
    )


def _parse_segments(
    entries: object, name: str, version: int = MANIFEST_FORMAT_VERSION
) -> tuple[Segment, ...]:
    """A part's ``segments`` (of manifest format ``version``): each starts where the last ended
    (the first at 0) and holds at most one line per byte, at least one if it has bytes; a
    ``long_line`` segment holds one line, the prefix of a longer one of ``line_bytes``.

    Raises:
        ValueError, KeyError: a segment breaks the contract (the message names the part and
            the segment).
    """
    if not isinstance(entries, list):
        raise ValueError(f"part {name}: segments is not a list")
    segments: list[Segment] = []
    position = 0
    for number, entry in enumerate(entries):
        where = f"part {name}, segment {number}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: not an object")
        fingerprint = _field(entry, "file_fingerprint", where)
        if not isinstance(fingerprint, str) or not fingerprint:
            raise ValueError(f"{where}: file_fingerprint {fingerprint!r} is not a string")
        if version == 3:
            if "kind" in entry:
                raise ValueError(f"{where}: kind is not part of format_version 3")
            kind: object = SegmentKind.LINES.value
        else:
            kind = _field(entry, "kind", where)
        if not isinstance(kind, str) or kind not in {k.value for k in SegmentKind}:
            known = ", ".join(SegmentKind)
            raise ValueError(f"{where}: kind {kind!r} is not one of {known}")
        segment = Segment(
            fingerprint,
            _count(entry, "start_offset", where),
            _count(entry, "part_offset", where),
            _count(entry, "length", where),
            _count(entry, "lines", where),
            SegmentKind(kind),
            _count(entry, "line_bytes", where) if kind == SegmentKind.LONG_LINE else None,
        )
        if segment.part_offset != position:
            raise ValueError(
                f"{where}: part_offset {segment.part_offset} is not where the last segment "
                f"ended ({position})"
            )
        if segment.lines > segment.length or (segment.length > 0) != (segment.lines > 0):
            raise ValueError(f"{where}: {segment.length} bytes cannot hold {segment.lines} lines")
        _check_long_line(segment, entry, where)
        segments.append(segment)
        position += segment.length
    return tuple(segments)


def _check_long_line(segment: Segment, entry: Mapping[str, object], where: str) -> None:
    """A ``long_line`` segment is one line, shorter than the line it stands for; only it has
    ``line_bytes``.

    Raises:
        ValueError: either is not so (the message says ``where``).
    """
    if segment.kind is not SegmentKind.LONG_LINE:
        if "line_bytes" in entry:
            raise ValueError(f"{where}: line_bytes belongs to long_line segments only")
        return
    if segment.lines != 1:
        raise ValueError(f"{where}: a long_line segment holds 1 line, not {segment.lines}")
    assert segment.line_bytes is not None
    if segment.line_bytes <= segment.length:
        raise ValueError(
            f"{where}: an over-long line of {segment.line_bytes} bytes cannot have a prefix of "
            f"{segment.length}"
        )


def _field(entry: Mapping[str, object], key: str, where: str) -> object:
    """``entry[key]``.

    Raises:
        ValueError: ``entry`` has no ``key`` (the message says ``where``).
    """
    if key not in entry:
        raise ValueError(f"{where}: no {key!r}")
    return entry[key]


def _count(entry: Mapping[str, object], key: str, where: str) -> int:
    """``entry[key]``, a non-negative JSON integer.

    Raises:
        ValueError: it is missing or is not one (the message says ``where``).
    """
    value = _field(entry, key, where)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: {key} {value!r} is not a non-negative integer")
    return value


# ---------------------------------------------------------------------------- staged rows


def verify_parts(parts: Sequence[PartFile]) -> list[StagedPart]:
    """Check every part file against its manifest, on the driver (no Spark job).

    First the sizes of all parts (``stat``), then the content of each part in one sequential
    read, ``VERIFY_READ_BYTES`` at a time (a thread per core, each on its own parts): its
    CRC-32, and the lines of each segment (its ``\\n`` bytes, plus one if it does not end
    with one). It runs before the lake changes, so a damaged part fails the landing with the
    earlier landing of the checkpoint intact; the executors count each segment's lines again as
    they read it.

    Returns:
        The non-empty parts, with their lines per source file.

    Raises:
        PartSizeError: naming every file whose size differs from its manifest.
        PartChecksumError: naming every file whose CRC-32 differs from its manifest.
        PartRowCountError: naming every segment whose lines differ from its manifest.
    """
    sizes = {part.path: _size(part.path) for part in parts}
    _fail(
        PartSizeError,
        [
            f"{part.path}: manifest says {part.bytes} bytes, file has {sizes[part.path]}"
            for part in parts
            if sizes[part.path] != part.bytes
        ],
    )
    threads = max(1, min(len(parts), os.cpu_count() or 1))
    with ThreadPoolExecutor(threads, thread_name_prefix="verify-parts") as pool:
        scanned = dict(zip((part.path for part in parts), pool.map(_scan, parts), strict=True))
    _fail(
        PartChecksumError,
        [
            f"{part.path}: manifest says CRC-32 {part.crc32}, file has {scanned[part.path][0]}"
            for part in parts
            if scanned[part.path][0] != part.crc32
        ],
    )
    _fail(PartRowCountError, [problem for _, problems in scanned.values() for problem in problems])
    return [StagedPart(part, _rows_by_fingerprint(part)) for part in parts if part.rows]


def _size(path: str) -> int:
    """The size of a part file.

    Raises:
        PartSizeError: it cannot be read.
    """
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise PartSizeError(f"{path}: {exc}") from exc


def _scan(part: PartFile) -> tuple[str, list[str]]:
    """Read a part file whose size matches its manifest: its CRC-32 (as the manifest writes it)
    and what is wrong with its segments' line counts. The reads, the CRC and the counting
    release the GIL, so parts are scanned in parallel threads."""
    buffer = bytearray(VERIFY_READ_BYTES)
    view = memoryview(buffer)
    crc = 0
    problems: list[str] = []
    with open(part.path, "rb", buffering=0) as handle:
        for segment in part.segments:
            left, newlines, last = segment.length, 0, _NEWLINE
            while left:
                got = handle.readinto(view[: min(left, len(buffer))])
                if not got:
                    raise PartSizeError(f"{part.path}: ended while being read")
                crc = crc32(view[:got], crc)
                newlines += count_newlines(view[:got])
                last = buffer[got - 1]
                left -= got
            lines = newlines + (0 if last == _NEWLINE else 1)
            if lines != segment.lines:
                problems.append(
                    f"{part.path}: the segment at part_offset {segment.part_offset} holds "
                    f"{lines} lines, the manifest says {segment.lines}"
                )
            elif segment.kind is SegmentKind.LONG_LINE and newlines:
                problems.append(
                    f"{part.path}: the segment at part_offset {segment.part_offset} is an "
                    "over-long line's prefix, and holds a newline"
                )
    return f"{crc:08x}", problems


def _fail(error: type[LandingError], problems: Sequence[str]) -> None:
    """Raise ``error`` listing ``problems``, if there are any."""
    if problems:
        raise error("part files do not match their manifests:\n  " + "\n  ".join(problems))


def _rows_by_fingerprint(part: PartFile) -> dict[str, int]:
    """A part's lines per source file, from its segments."""
    rows: Counter[str] = Counter()
    for segment in part.segments:
        rows[segment.file_fingerprint] += segment.lines
    return dict(rows)


def staged_lines(staged: Iterable[StagedPart]) -> Counter[FileKey]:
    """Input lines per ``(source, host, file_fingerprint)``."""
    lines: Counter[FileKey] = Counter()
    for entry in staged:
        for fingerprint, rows in entry.rows_by_fingerprint.items():
            lines[(entry.part.source, entry.part.host, fingerprint)] += rows
    return lines


def read_source(
    spark: SparkSession,
    staged: Sequence[StagedPart],
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
        SegmentRow(
            entry.part.path,
            entry.part.host,
            entry.part.sealed_at,
            segment.file_fingerprint,
            segment.start_offset,
            segment.part_offset,
            segment.length,
            segment.lines,
            segment.line_bytes,
        )
        for entry in staged
        if entry.part.source == source
        for segment in entry.part.segments
        if files is None or (entry.part.host, segment.file_fingerprint) in files
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


# ---------------------------------------------------------------------------- the lake


def clear_checkpoint(lake: Path, sources: Iterable[str], checkpoint_id: int) -> None:
    """Delete the summary and every lake directory of ``checkpoint_id`` (see the module doc)."""
    summary_path(lake, checkpoint_id).unlink(missing_ok=True)
    partition = f"checkpoint_id={checkpoint_id}"
    for source in sources:
        for date_dir in sorted((lake / source).glob("event_date=*")):
            if (date_dir / partition).exists():
                shutil.rmtree(date_dir / partition)
                if not any(date_dir.iterdir()):
                    date_dir.rmdir()
    shutil.rmtree(lake / REJECTS_TABLE / partition, ignore_errors=True)


def write_table(frame: DataFrame, table: Path, partitions: Sequence[str]) -> None:
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
    staged: Sequence[StagedPart],
    short: set[FileKey],
) -> list[DataFrame]:
    """The rejects of every source file in ``short``, reading only the segments of those
    files."""
    frames = []
    for source, spec in checkpoint.sources.items():
        files = {(host, fingerprint) for s, host, fingerprint in short if s == source}
        if not files:
            continue
        rows = read_source(spark, staged, source, checkpoint.checkpoint_id, files)
        frames.append(parse(rows, spec.format, time_field=spec.time_field)[1])
    return frames


def count_rejects(spark: SparkSession, lake: Path, checkpoint_id: int) -> dict[str, int]:
    """Rejects of ``checkpoint_id`` by reason, every known reason present."""
    counts = {reason.value: 0 for reason in RejectReason}
    partition = lake / REJECTS_TABLE / f"checkpoint_id={checkpoint_id}"
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
    spark: SparkSession,
    checkpoint_dir: str | os.PathLike[str],
    lake: str | os.PathLike[str],
    hosts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Land one sealed checkpoint into ``lake`` and return its summary.

    ``hosts``: only the batches of these hosts (those the metastore recorded; see
    ``read_checkpoint``).

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
    staged = verify_parts(checkpoint.parts)
    clear_checkpoint(lake_root, checkpoint.sources, checkpoint_id)

    for source in sorted({entry.part.source for entry in staged}):
        spec = checkpoint.sources[source]
        rows = read_source(spark, staged, source, checkpoint_id)
        parsed, _ = parse(rows, spec.format, time_field=spec.time_field)
        write_table(parsed, lake_root / source, ("event_date", "checkpoint_id"))

    landed = landed_lines(spark, lake_root, checkpoint.sources, checkpoint_id)
    short = files_with_rejects(staged_lines(staged), landed)
    rejects = rejects_of(spark, checkpoint, staged, short)
    if rejects:
        write_table(
            reduce(DataFrame.unionByName, rejects), lake_root / REJECTS_TABLE, ("checkpoint_id",)
        )

    summary = summarize(checkpoint, landed, count_rejects(spark, lake_root, checkpoint_id))
    write_summary(lake_root, summary)
    return summary


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


# ---------------------------------------------------------------------------- entry point


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Land a sealed checkpoint into the lake.")
    parser.add_argument(
        "--checkpoint-dir", required=True, help="<staging>/<pipeline>/<checkpoint:08d>"
    )
    parser.add_argument("--lake", required=True, help="the lake root")
    parser.add_argument(
        "--hosts",
        default=None,
        help="comma-separated hosts whose batches the metastore recorded (default: every "
        "batch folder)",
    )
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: the number of cores on a local master)",
    )
    return parser.parse_args(argv)


def build_session(app_name: str, shuffle_partitions: int | None = None) -> SparkSession:
    """A session set up for the landing job.

    Besides ``LAKE_SQL_CONF``: no console progress bar (standard output ends with the summary)
    and, on a local master, as many shuffle partitions as cores (the job's only shuffles are
    small counts). The staged lines are split into ``SPLITS_PER_CORE`` read tasks per core by
    ``read_source`` itself. Settings given with ``--conf`` are kept, except ``LAKE_SQL_CONF``.
    """
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    for key, value in LAKE_SQL_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    context = spark.sparkContext
    given = context.getConf()
    defaults: dict[str, int] = {}
    if (context.master or "").startswith("local"):
        defaults["spark.sql.shuffle.partitions"] = context.defaultParallelism
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        defaults.pop("spark.sql.shuffle.partitions", None)
    for key, number in defaults.items():
        if not given.contains(key):
            spark.conf.set(key, str(number))
    return spark


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    name = Path(os.path.abspath(args.checkpoint_dir))
    spark = build_session(f"sluice-land-{name.parent.name}-{name.name}", args.shuffle_partitions)
    try:
        hosts = [h for h in args.hosts.split(",") if h] if args.hosts is not None else None
        summary = land(spark, args.checkpoint_dir, args.lake, hosts)
    finally:
        spark.stop()
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
