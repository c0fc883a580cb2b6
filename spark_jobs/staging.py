"""Reading handoff part files: segments (as the manifest indexes them) -> one row per event.

A part file holds raw line bytes, one segment after the other; a segment is a run of whole
lines of one source file, from ``start_offset`` in it (docs/architecture.md, "Part files").
The driver turns the manifests' segment index into a small DataFrame of ``SEGMENT_SCHEMA``
rows (``segment_frame``). Segments of local part files are read and split in the executors'
JVM (``spark_jobs.jvm_lines``) when the session has its function (``segment_reader``).
Otherwise (part files in an object store, or a session without the function) the executors'
Python workers do it: ``read_segments`` (for ``mapInArrow``) reads each segment's bytes by a
ranged read (``os.pread`` of a local part; a ranged request of a part in an object store,
through its Arrow filesystem: ``spark_jobs.part_files``) and splits them into events with NumPy
(``spark_jobs.segment_split.split_events``: no Python work per line or per event), one segment
at a time, in parallel with the parsing. Both give the same rows, checks and error messages.

A row is an *event* (``spark_jobs.segment_split``): a line of its own, or, where the segment
lists multiline ``events`` (manifest format 5: a traceback, a stack trace), the run of lines a
span covers. A row's ``byte_offset`` is its first byte's offset in the source file,
``event_lines`` its lines (1 for a line of its own) and ``cut`` the span's cut (null unless a
bound or a missing head cut the event). Any other byte is kept: ``\\r`` of CRLF line ends,
NULs, invalid UTF-8. A segment of an over-long line (``line_bytes`` set) holds one line, its
first bytes only; its row carries ``line_bytes``, the whole line's length, which makes it a
``line_too_long`` reject.

The module imports only pyarrow, pyspark, the standard library and
``spark_jobs.part_files``, ``spark_jobs.segment_split``, ``spark_jobs.jvm_lines`` and
``spark_jobs.session`` (the executors import it; ``--py-files`` ships it); the manifest's
``Segment`` is named in its types only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jobs.jvm_functions import enable_jvm_functions
from spark_jobs.jvm_lines import lines_in_jvm
from spark_jobs.part_files import PartReader, is_local, local_path, open_part, reader_environment
from spark_jobs.segment_split import SegmentError, SpanColumns, SpanRow, split_events
from spark_jobs.session import session_cores, share_environment

if TYPE_CHECKING:  # the executors import this module, and nothing of pipeline_core
    from pipeline_core.staging_contract import Segment

EVENT_SPAN = StructType(
    [
        StructField("first_line", LongType(), nullable=False),
        StructField("lines", LongType(), nullable=False),
        StructField("cut", StringType(), nullable=True),
        StructField("head", LongType(), nullable=True),
    ]
)
"""A manifest's event span (``pipeline_core.staging_contract.EventSpan``): ``lines`` lines from
the segment's line ``first_line`` (counted from 0) are one event; ``cut`` is the value of its
``EventCut``, or null; ``head`` (null or -1: none) the index of the earlier span whose event
this span's lines continue (a container's stream, the other stream's lines between)."""

SEGMENT_SCHEMA = StructType(
    [
        StructField("path", StringType(), nullable=False),
        StructField("checkpoint_id", LongType(), nullable=False),
        StructField("host", StringType(), nullable=False),
        StructField("sealed_at", TimestampType(), nullable=False),
        StructField("file_fingerprint", StringType(), nullable=False),
        StructField("start_offset", LongType(), nullable=False),
        StructField("part_offset", LongType(), nullable=False),
        StructField("length", LongType(), nullable=False),
        StructField("lines", LongType(), nullable=False),
        StructField("line_bytes", LongType(), nullable=True),
        StructField("events", ArrayType(EVENT_SPAN, containsNull=False), nullable=True),
    ]
)
"""One row per segment to read: the part file (an absolute path, seen alike by the driver and
the executors), its batch's checkpoint, ``host`` and ``sealed_at``, and the segment's manifest
fields (``line_bytes``: null unless the segment is an over-long line's prefix; ``events``: its
multiline events, ``EVENT_SPAN`` structs in order, null when it lists none)."""

LINE_SCHEMA = StructType(
    [
        StructField("file_fingerprint", StringType()),
        StructField("byte_offset", LongType()),
        StructField("line", BinaryType()),
        StructField("event_lines", LongType()),
        StructField("cut", StringType()),
        StructField("checkpoint_id", LongType()),
        StructField("host", StringType()),
        StructField("sealed_at", TimestampType()),
        StructField("line_bytes", LongType()),
    ]
)
"""What ``read_segments`` yields: a row per event, with its segment's batch. ``line`` is the
event's bytes (its lines, joined by their ``\\n``), ``byte_offset`` its first byte's offset in
the source file, ``event_lines`` its lines (1 for a line of its own), ``cut`` the value of its
span's ``EventCut`` (null unless it has one); ``line_bytes`` is the whole length of an over-long
line (``line`` holds its prefix), null for other rows."""

_INDEX = "segment_index"


@dataclass(frozen=True)
class SegmentRow:
    """A ``SEGMENT_SCHEMA`` row: a manifest's segment of the part file at ``path``, with its
    batch's checkpoint, ``host`` and ``sealed_at``."""

    path: str
    checkpoint_id: int
    host: str
    sealed_at: datetime
    segment: Segment


# ---------------------------------------------------------------------------- the driver


def segment_frame(
    spark: SparkSession, segments: Sequence[SegmentRow], splits_per_core: int
) -> DataFrame:
    """The ``SEGMENT_SCHEMA`` DataFrame of ``segments``, in their order.

    It is split into ``splits_per_core`` partitions per core of the session (at most one per
    segment, at least one), each holding consecutive segments: a task reads and parses a run of
    segments in their staging order, and enough tasks balance the cores. The split is a
    ``spark.range`` of the segments' indexes joined with the (small, broadcast) segment rows,
    the same on a classic session and on Spark Connect (which has no ``parallelize``).

    With parts in an object store, the store's variables of the driver's environment
    (endpoint, region, credentials: ``part_files.reader_environment``) go to the Python
    workers that read them (``session.share_environment``: never in Spark's settings, UI or
    event logs); a Spark Connect server's workers use the server's own environment.
    """
    share_environment(spark, reader_environment(sorted({row.path for row in segments})))
    splits = max(1, min(len(segments), splits_per_core * session_cores(spark)))
    rows = [
        (
            index,
            row.path,
            row.checkpoint_id,
            row.host,
            row.sealed_at,
            row.segment.file_fingerprint,
            row.segment.start_offset,
            row.segment.part_offset,
            row.segment.length,
            row.segment.lines,
            row.segment.line_bytes,
            _span_rows(row.segment),
        )
        for index, row in enumerate(segments)
    ]
    indexed = StructType([StructField(_INDEX, LongType(), nullable=False), *SEGMENT_SCHEMA])
    table = spark.createDataFrame(rows, indexed)
    runs = spark.range(0, len(rows), 1, splits).withColumnRenamed("id", _INDEX)
    return runs.join(F.broadcast(table), _INDEX).select(*SEGMENT_SCHEMA.names)


def _span_rows(segment: Segment) -> list[SpanRow] | None:
    """A segment's multiline events as ``SEGMENT_SCHEMA``'s ``events`` hold them (from the
    manifest's columns); ``None`` when it lists none."""
    events = segment.events
    if not events:
        return None
    cuts = [None if cut is None else cut.value for cut in events.cuts]
    return list(
        zip(
            events.first_lines.tolist(),
            events.lines.tolist(),
            cuts,
            events.head_of().tolist(),
            strict=True,
        )
    )


class SegmentReader(Enum):
    """Where the executors read segments and split them into events (lines)."""

    JVM = "jvm"
    """In the executor's JVM (``spark_jobs.jvm_lines``): the events stay in the JVM."""
    PYTHON = "python"
    """In Python workers (``read_segments``), handing the events to the JVM as Arrow batches."""


def segment_reader(spark: SparkSession, paths: Iterable[str]) -> SegmentReader:
    """``JVM`` when every part file of ``paths`` is local (a path, or a ``file://`` URL) and
    ``spark`` has the landing's Java functions; ``PYTHON`` otherwise (an object store's parts)."""
    if all(is_local(path) for path in paths) and enable_jvm_functions(spark):
        return SegmentReader.JVM
    return SegmentReader.PYTHON


def read_lines(
    spark: SparkSession,
    segments: Sequence[SegmentRow],
    splits_per_core: int,
    reader: SegmentReader | None = None,
) -> DataFrame:
    """The events of ``segments`` as ``LINE_SCHEMA`` rows (a row per line where a segment lists
    no multiline events), read and split on the executors by ``reader`` (``None``:
    ``segment_reader``'s choice)."""
    chosen = reader or segment_reader(spark, (row.path for row in segments))
    if chosen is SegmentReader.JVM:
        local = [replace(row, path=local_path(row.path)) for row in segments]
        return lines_in_jvm(segment_frame(spark, local, splits_per_core))
    return segment_frame(spark, segments, splits_per_core).mapInArrow(read_segments, LINE_SCHEMA)


# ---------------------------------------------------------------------------- the executors


def read_segments(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``DataFrame.mapInArrow``: batches of ``SEGMENT_SCHEMA`` rows in, one batch of
    ``LINE_SCHEMA`` events out per non-empty segment (a worker holds one segment at a time).

    Raises:
        SegmentError: a segment cannot be read whole, its line count differs from its
            ``lines``, or its ``events`` are not in order, apart and among its lines.
    """
    reader: _OpenPart | None = None  # consecutive segments are mostly of one part
    try:
        for batch in batches:
            columns = {name: batch.column(name) for name in batch.schema.names}
            for row in range(batch.num_rows):
                path = columns["path"][row].as_py()
                part_offset = columns["part_offset"][row].as_py()
                length = columns["length"][row].as_py()
                if reader is None or reader.path != path:
                    if reader is not None:
                        reader.close()
                    reader = None
                    reader = _OpenPart.of(path, part_offset)
                data = reader.read_segment(part_offset, length)
                try:
                    events = split_events(
                        data,
                        columns["start_offset"][row].as_py(),
                        SpanColumns.from_arrow(columns["events"][row].values),
                        columns["lines"][row].as_py(),
                    )
                except SegmentError as exc:
                    raise SegmentError(
                        f"{path}: the segment at part_offset {part_offset} ({length} bytes) {exc}"
                    ) from None
                count = len(events.line)
                if not count:
                    continue
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.repeat(columns["file_fingerprint"][row], count),
                        events.byte_offset,
                        events.line,
                        events.event_lines,
                        events.cut,
                        pa.repeat(columns["checkpoint_id"][row], count),
                        pa.repeat(columns["host"][row], count),
                        pa.repeat(columns["sealed_at"][row], count),
                        pa.repeat(columns["line_bytes"][row], count),
                    ],
                    names=LINE_SCHEMA.names,
                )
    finally:
        if reader is not None:
            reader.close()


def read_segment(path: str, part_offset: int, length: int) -> bytes:
    """Bytes ``[part_offset, part_offset + length)`` of the part file at ``path`` (a path or
    a store's URL).

    Raises:
        SegmentError: the file cannot be opened, or ends before the segment does.
    """
    part = _OpenPart.of(path, part_offset)
    try:
        return part.read_segment(part_offset, length)
    finally:
        part.close()


@dataclass
class _OpenPart:
    """A part file opened for its segments' ranged reads."""

    path: str
    reader: PartReader

    @classmethod
    def of(cls, path: str, part_offset: int) -> _OpenPart:
        """Open ``path`` (to read the segment at ``part_offset`` first).

        Raises:
            SegmentError: it cannot be opened.
        """
        try:
            return cls(path, open_part(path))
        except Exception as exc:  # OSError, or the store's filesystem cannot be built
            raise SegmentError(
                f"{path}: cannot read the segment at part_offset {part_offset}: {exc}"
            ) from exc

    def read_segment(self, part_offset: int, length: int) -> bytes:
        """Bytes ``[part_offset, part_offset + length)``.

        Raises:
            SegmentError: they cannot be read, or the file ends before them.
        """
        try:
            data = self.reader.read_at(part_offset, length)
        except OSError as exc:
            raise SegmentError(
                f"{self.path}: cannot read the segment at part_offset {part_offset}: {exc}"
            ) from exc
        if len(data) < length:
            raise SegmentError(
                f"{self.path}: short read: the segment at part_offset {part_offset} needs bytes "
                f"up to {part_offset + length}, the file has {part_offset + len(data)}"
            )
        return data

    def close(self) -> None:
        self.reader.close()
