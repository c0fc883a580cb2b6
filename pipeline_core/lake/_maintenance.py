"""Keeping the lake tables fast and small: compaction, snapshot expiry, orphan file removal.

* :func:`compact_table` rewrites the data files of a day partition into files of about
  ``TARGET_FILE_BYTES`` in one atomic commit (an Iceberg ``overwrite`` snapshot that deletes
  exactly the files it read and adds the files it wrote). Rows are copied, never changed, so no
  query result changes; a concurrent reader sees the old files or the new ones. A commit that
  another writer beat is abandoned (its new files deleted) and the day planned again, so a
  landing or reprocess committed meanwhile is never undone.
* :func:`expire_snapshots` drops snapshots older than a retention, or beyond a number kept (the
  current one is always kept); their files stay until :func:`remove_orphan_files`.
* :func:`remove_orphan_files` deletes the files of a table that nothing references and that
  are older than a grace period: under ``data/``, files of landings that crashed before their
  commit, of checkpoints a retried landing found committed already, of expired snapshots; under
  ``metadata/``, the manifest lists and manifests of expired snapshots and merged manifests
  (old ``metadata.json`` files are deleted at each commit: ``MANAGED_PROPERTIES`` in
  ``pipeline_core.lake._schemas``). With these, a table's metadata stays bounded however many
  landings it has had: what grows is its data.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, parquet_file_to_data_file
from pyiceberg.manifest import DataFile
from pyiceberg.table import FileScanTask, Table

from pipeline_core.lake._schemas import TARGET_FILE_BYTES
from pipeline_core.storage import location_filesystem

OPERATION_PROPERTY = "sluice.operation"
COMPACT_ATTEMPTS = 5
ORPHAN_GRACE = timedelta(hours=1)
"""A file younger than this may belong to a landing still under way: never an orphan."""
SNAPSHOT_RETENTION = timedelta(days=7)
SNAPSHOTS_KEPT_MAX = 500
"""Snapshots kept whatever their age: every commit rewrites a ``metadata.json`` listing every
snapshot kept (about 600 bytes each), so a week of one-minute landings (10,080 snapshots) would
make each commit write and read some 6 MB. Time travel reaches back ``SNAPSHOT_RETENTION`` or
this many commits, whichever is shorter (at a one-minute schedule, about eight hours)."""
EPOCH = date(1970, 1, 1)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Compaction:
    """What compacting one day partition of a table did."""

    table: str
    day: date
    files_before: int
    files_after: int
    rows: int
    committed: bool
    """False: nothing to do (one file or none), or every attempt lost to another writer."""


@dataclass
class MaintenanceReport:
    compactions: list[Compaction] = field(default_factory=list)
    expired_snapshots: int = 0
    orphan_files: int = 0
    forgotten_checkpoints: int = 0
    """Checkpoints whose metastore rows were deleted (``metastore.retain_days``)."""


def day_of(task: FileScanTask) -> date | None:
    """The day partition of a data file (None for an unpartitioned table)."""
    partition = task.file.partition
    if partition is None or len(partition) == 0 or partition[0] is None:
        return None
    return EPOCH + timedelta(days=int(partition[0]))


def files_per_day(table: Table) -> dict[date | None, int]:
    """Data files of the table's current snapshot per day partition."""
    counts: dict[date | None, int] = defaultdict(int)
    if table.current_snapshot() is not None:
        for task in table.scan().plan_files():
            counts[day_of(task)] += 1
    return dict(sorted(counts.items(), key=lambda item: (item[0] is None, item[0] or EPOCH)))


def compact_table(table: Table, day: date, target_bytes: int = TARGET_FILE_BYTES) -> Compaction:
    """Rewrite the data files of ``day`` into files of about ``target_bytes``, in one commit."""
    name = ".".join(table.name())
    for attempt in range(1, COMPACT_ATTEMPTS + 1):
        table.refresh()
        tasks = (
            [t for t in table.scan().plan_files() if day_of(t) == day]
            if table.current_snapshot()
            else []
        )
        if len(tasks) < 2 or any(t.delete_files for t in tasks):
            return Compaction(name, day, len(tasks), len(tasks), 0, committed=False)
        written = _rewrite(table, tasks, day, target_bytes)
        try:
            with table.transaction() as transaction:
                update = transaction.update_snapshot(
                    snapshot_properties={OPERATION_PROPERTY: "compact"}
                )
                with update.overwrite() as overwrite:
                    for task in tasks:
                        overwrite.delete_data_file(task.file)
                    for data_file in written:
                        overwrite.append_data_file(data_file)
        except CommitFailedException:
            log.info("Compaction of %s %s lost to another commit (attempt %d)", name, day, attempt)
            for data_file in written:
                table.io.delete(data_file.file_path)
            continue
        rows = sum(t.file.record_count for t in tasks)
        log.info(
            "Compacted %s %s: %d files -> %d (%d rows)", name, day, len(tasks), len(written), rows
        )
        return Compaction(name, day, len(tasks), len(written), rows, committed=True)
    return Compaction(name, day, len(tasks), len(tasks), 0, committed=False)


def _rewrite(
    table: Table, tasks: list[FileScanTask], day: date, target_bytes: int
) -> list[DataFile]:
    """Copy the rows of ``tasks`` into new files of about ``target_bytes`` (streamed: one
    record batch in memory at a time)."""
    folder = f"{table.location().rstrip('/')}/data/compacted-{uuid.uuid4().hex}/{day.isoformat()}"
    scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
    paths = list(_write_rolling(scan.to_record_batches(tasks), folder, target_bytes))
    return [parquet_file_to_data_file(table.io, table.metadata, path) for path in paths]


def _write_rolling(
    batches: Iterator[pa.RecordBatch], folder: str, target_bytes: int
) -> Iterator[str]:
    filesystem, root = location_filesystem(folder)
    scheme = urlparse(folder).scheme or "file"
    filesystem.create_dir(root, recursive=True)
    writer: pq.ParquetWriter | None = None
    sink = None
    path = ""
    number = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if writer is None:
            path = f"{root}/part-{number:05d}.parquet"
            sink = filesystem.open_output_stream(path)
            writer = pq.ParquetWriter(sink, batch.schema, compression="zstd")
            number += 1
        writer.write_batch(batch)
        if sink is not None and sink.tell() >= target_bytes:
            writer.close()
            sink.close()
            writer = None
            yield f"{scheme}://{path}"
    if writer is not None and sink is not None:
        writer.close()
        sink.close()
        yield f"{scheme}://{path}"


def expire_snapshots(
    table: Table, retention: timedelta = SNAPSHOT_RETENTION, keep_at_most: int = SNAPSHOTS_KEPT_MAX
) -> int:
    """Expire the snapshots older than ``retention``, and all but the newest ``keep_at_most``;
    the current one is always kept. Returns how many were expired."""
    cutoff = datetime.now(timezone.utc) - retention
    current = table.current_snapshot()
    newest_first = sorted(table.snapshots(), key=lambda s: s.timestamp_ms, reverse=True)
    old = [
        s.snapshot_id
        for rank, s in enumerate(newest_first)
        if (s.timestamp_ms < cutoff.timestamp() * 1000 or rank >= keep_at_most)
        and (current is None or s.snapshot_id != current.snapshot_id)
    ]
    if old:
        table.maintenance.expire_snapshots().by_ids(old).commit()
    return len(old)


def remove_orphan_files(table: Table, grace: timedelta = ORPHAN_GRACE) -> int:
    """Delete the files of the table that nothing references and that are older than
    ``grace``; returns how many.

    Under ``data/``: any file no snapshot lists. Under ``metadata/``: the ``metadata.json``
    files that are neither the current one nor in its log, and the manifest lists and manifests
    (``.avro``) no snapshot reaches: those of expired snapshots, of commits that lost a race,
    and the manifests a commit merged. Other files there are left alone."""
    table.refresh()
    location = table.location().rstrip("/")
    cutoff = datetime.now(timezone.utc) - grace
    data = {_path_of(p) for p in table.inspect.all_files().column("file_path").to_pylist()}
    removed = _remove_unreferenced(f"{location}/data", data, cutoff, lambda name: True)
    metadata = {_path_of(uri) for uri in _metadata_in_use(table)}
    removed += _remove_unreferenced(f"{location}/metadata", metadata, cutoff, _is_table_metadata)
    return removed


def _metadata_in_use(table: Table) -> Iterator[str]:
    """The metadata files of ``table`` that a reader of it, or of a snapshot it keeps, opens."""
    yield table.metadata_location
    for entry in table.metadata.metadata_log:
        yield entry.metadata_file
    for snapshot in table.snapshots():
        yield snapshot.manifest_list
    if table.snapshots():
        yield from table.inspect.all_manifests().column("path").to_pylist()


def _is_table_metadata(name: str) -> bool:
    return name.endswith(".metadata.json") or name.endswith(".avro")


def _remove_unreferenced(
    folder: str, referenced: set[str], cutoff: datetime, removable: Callable[[str], bool]
) -> int:
    filesystem, root = location_filesystem(folder)
    removed = 0
    for info in filesystem.get_file_info(
        pafs.FileSelector(root, allow_not_found=True, recursive=True)
    ):
        if info.type != pafs.FileType.File or info.path in referenced:
            continue
        if not removable(info.base_name):
            continue
        if info.mtime is not None and info.mtime.replace(tzinfo=timezone.utc) > cutoff:
            continue
        filesystem.delete_file(info.path)
        removed += 1
    return removed


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return parsed.path if parsed.scheme in ("", "file") else f"{parsed.netloc}{parsed.path}"
