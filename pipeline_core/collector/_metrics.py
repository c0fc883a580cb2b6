"""Per-pipeline collector metrics: one frozen snapshot of a pipeline, taken from any thread."""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline_core._file_names import shown_path
from pipeline_core.queues import QueueStats
from pipeline_core.source import TrackedFile

if TYPE_CHECKING:
    from pipeline_core.collector._pipeline import PipelineRuntime


@dataclass(frozen=True)
class FileMetrics:
    path: str
    fingerprint: str
    state: str
    size: int
    read_offset: int
    sealed_offset: int
    committed_offset: int | None
    source: str = ""
    """The pipeline's source whose globs matched the file."""
    held_event_s: float | None = None
    """A multiline source's file: for how long the event at its read offset has been held
    back, unfinished (it may still grow); None when none is."""

    @property
    def unread_bytes(self) -> int:
        """Bytes of the file not read yet (the lag users ask about first)."""
        return max(0, self.size - self.read_offset)


@dataclass(frozen=True)
class QueueMetrics:
    size: int
    high: int
    low: int
    writable: bool
    refusals: int


@dataclass(frozen=True)
class SinkGroupMetrics:
    name: str
    deliveries: int
    backoffs: int
    delivery_errors: int
    errors: int


@dataclass(frozen=True)
class UploadMetrics:
    """The local spool and the uploads of a pipeline whose staging is in an object store.

    ``spool_full`` is why reading waits when it does: the spool holds ``spool_bytes`` of its
    ``spool_limit_bytes`` (``handoff.max_spool_bytes``) and ``waiting`` batches wait for their
    upload; ``failures`` counts failed attempts (each retried), ``last_error`` is the last
    failure's message until an upload succeeds again.
    """

    spool_bytes: int
    spool_limit_bytes: int
    spool_full: bool
    spool_full_times: int
    waiting: int
    uploaded: int
    uploaded_bytes: int
    failures: int
    last_error: str | None
    upload_seconds: float


@dataclass(frozen=True)
class PipelineMetrics:
    """One pipeline in a running collector, at one moment."""

    pipeline: str
    host: str
    state: str
    priority: int
    lines_read: int
    bytes_read: int
    bytes_sent: int
    blocked_seconds: float
    trees_in_flight: int
    trees_replayed: int
    truncated_unread_bytes: int
    """Bytes seen in files that a truncation (copytruncate) destroyed before they were read."""
    queues: Mapping[str, QueueMetrics]
    sink_groups: tuple[SinkGroupMetrics, ...]
    files: tuple[FileMetrics, ...]
    uploads: UploadMetrics | None = None
    """With staging in an object store: the spool and the uploads (None otherwise)."""
    events_read: int = 0
    """Events read: the lines, but for a multiline source's, whose events join lines."""

    @property
    def unread_bytes(self) -> int:
        return sum(f.unread_bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the metrics file: ``dataclasses.asdict`` of it, made field by
        field (``asdict`` deep-copies every value: a collector writing a hundred pipelines'
        files every 5 s spent a third of its metrics thread in it), with ``unread_bytes``."""
        document = dict(vars(self))
        document["queues"] = {name: dict(vars(queue)) for name, queue in self.queues.items()}
        document["sink_groups"] = tuple(dict(vars(group)) for group in self.sink_groups)
        document["files"] = tuple(
            {**vars(file), "unread_bytes": file.unread_bytes} for file in self.files
        )
        document["uploads"] = None if self.uploads is None else dict(vars(self.uploads))
        document["unread_bytes"] = self.unread_bytes
        return document


def pipeline_metrics(runtime: PipelineRuntime, queues: Mapping[str, QueueStats]) -> PipelineMetrics:
    """A snapshot of ``runtime`` (read from any thread: plain attribute reads, no locks)."""
    committed = runtime.tracking.offsets.snapshot()
    return PipelineMetrics(
        pipeline=runtime.name,
        host=runtime.host,
        state=runtime.state.value,
        priority=runtime.priority,
        lines_read=runtime.lines,
        events_read=runtime.events,
        bytes_read=runtime.bytes,
        bytes_sent=runtime.bytes_sent,
        blocked_seconds=runtime.blocked_seconds,
        trees_in_flight=runtime.tracking.acker.pending,
        trees_replayed=runtime.tracking.replayed,
        truncated_unread_bytes=runtime.watcher.truncated_unread_bytes,
        queues={
            name: QueueMetrics(s.size, s.high, s.low, s.writable, s.refusals)
            for name, s in queues.items()
        },
        sink_groups=tuple(
            SinkGroupMetrics(
                group.name,
                group.runner.counters.deliveries,
                group.runner.counters.backoffs,
                group.runner.counters.delivery_errors,
                group.runner.counters.errors,
            )
            for group in runtime.groups
        ),
        files=_files_shown(runtime, committed),
        uploads=_upload_metrics(runtime),
    )


FILES_FULL_LOOK_SECONDS = 60.0
"""At least this often a snapshot looks at every file of a pipeline again, its generation
unchanged or not: the safety net for a change its owner does not announce (a file that grows
in a folder no file event covers while the pipeline cannot read, say)."""


@dataclass(frozen=True)
class _FilesShown:
    """What a snapshot made of a pipeline's files, and what it was made from."""

    generation: int
    committed: dict[str, int]
    made_at: float
    files: tuple[FileMetrics, ...]
    held: bool
    """A file held an event back: its ``held_event_s`` grows with time alone."""


def _files_shown(runtime: PipelineRuntime, committed: dict[str, int]) -> tuple[FileMetrics, ...]:
    """The :class:`FileMetrics` of ``runtime``'s files: those of the last snapshot again when
    nothing they show can have changed since (the watcher's :attr:`~FileWatcher.generation`
    and the committed offsets are the same, no event is held, the last full look is recent);
    else made again (a ``stat`` of each file: 1,000 idle files every 5 s were most of an idle
    collector's metrics thread)."""
    generation = runtime.watcher.generation  # read first: what changes after it bumps it again
    now = time.monotonic()
    shown = _SHOWN_FILES.get(runtime)
    if (
        shown is not None
        and shown.generation == generation
        and not shown.held
        and shown.committed == committed
        and now - shown.made_at < FILES_FULL_LOOK_SECONDS
    ):
        return shown.files
    files = _file_metrics(runtime, committed, now)
    held = any(file.held_event_s is not None for file in files)
    _SHOWN_FILES[runtime] = _FilesShown(generation, committed, now, files, held)
    return files


_SHOWN_FILES: weakref.WeakKeyDictionary[PipelineRuntime, _FilesShown] = weakref.WeakKeyDictionary()
"""By pipeline, what its last snapshot showed of its files (:func:`_files_shown`)."""


def _file_metrics(
    runtime: PipelineRuntime, committed: dict[str, int], now: float
) -> tuple[FileMetrics, ...]:
    """Every file of ``runtime`` looked at now."""
    files = []
    known = _FILE_METRICS.get(runtime, {})
    kept: dict[str, tuple[tuple[Any, ...], FileMetrics]] = {}
    for tracked in list(runtime.watcher.files):
        held_since = tracked.held_since
        fields = (
            _shown(tracked.path),  # any bytes: shown escaped (a label, JSON)
            tracked.fingerprint,
            tracked.state.value,
            _size(tracked),
            tracked.read_offset,
            tracked.sealed_offset,
            committed.get(tracked.fingerprint),
            tracked.source,
            None if held_since is None else max(now - held_since, 0.0),
        )
        previous = known.get(tracked.fingerprint)
        file = (
            previous[1] if previous is not None and previous[0] == fields else FileMetrics(*fields)
        )
        kept[tracked.fingerprint] = (fields, file)
        files.append(file)
    _FILE_METRICS[runtime] = kept
    return tuple(files)


_FILE_METRICS: weakref.WeakKeyDictionary[
    PipelineRuntime, dict[str, tuple[tuple[Any, ...], FileMetrics]]
] = weakref.WeakKeyDictionary()
"""By pipeline, the :class:`FileMetrics` of its last snapshot and the fields they were made
of, by fingerprint: a file whose fields are the same is the same object (a snapshot of 100
pipelines' 1,000 idle files every 5 s made and compared 1,000 frozen objects: a third of an
idle collector's metrics thread)."""

_SHOWN_PATHS: dict[str, str] = {}
SHOWN_PATHS_KEPT = 65536


def _shown(path: str) -> str:
    """:func:`shown_path` of ``path``, remembered (the paths of tracked files seldom change)."""
    shown = _SHOWN_PATHS.get(path)
    if shown is None:
        if len(_SHOWN_PATHS) >= SHOWN_PATHS_KEPT:
            _SHOWN_PATHS.clear()
        shown = _SHOWN_PATHS[path] = shown_path(path)
    return shown


def _upload_metrics(runtime: PipelineRuntime) -> UploadMetrics | None:
    if runtime.spool is None or runtime.uploads is None:
        return None
    stats = runtime.uploads.stats()
    return UploadMetrics(
        spool_bytes=runtime.spool.used,
        spool_limit_bytes=runtime.spool.limit,
        spool_full=runtime.spool.full,
        spool_full_times=runtime.spool.times_full,
        waiting=stats.waiting,
        uploaded=stats.uploaded,
        uploaded_bytes=stats.uploaded_bytes,
        failures=stats.failures,
        last_error=stats.last_error,
        upload_seconds=stats.seconds,
    )


def unread_bytes(files: Iterable[TrackedFile]) -> int:
    """Bytes of ``files`` past their read offsets now (what :class:`FileMetrics` sums)."""
    return sum(max(0, _size(tracked) - tracked.read_offset) for tracked in files)


def _size(tracked: TrackedFile) -> int:
    """The file's size: through its descriptor, or (closed after a run) its path while it is
    still the same file."""
    if tracked.fd is not None:
        return tracked.size()
    try:
        info = os.stat(tracked.path)
    except OSError:
        return tracked.read_offset
    if (info.st_dev, info.st_ino) != (tracked.dev, tracked.ino):
        return tracked.read_offset
    return info.st_size
