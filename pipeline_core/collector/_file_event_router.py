"""File events for a collector's pipelines: which to read again, which to scan, how long to wait.

::

    FileEvents thread --on_changes--> collector mails itself "file events" (at most one pending)
    mailbox thread: take() -> the pipelines written to (reading resumes; a written file whose
        descriptor was closed, idle, is opened again at once), scans wanted (files came, moved
        or went; or a file being read was truncated) -> the next default action scans them,
        at most every EVENT_SCAN_SPACING_SECONDS per pipeline, and so that event scans take at
        most EVENT_SCAN_SHARE of the time
    after every scan: follow() watches the folders the pipeline's files can change in
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Callable, Iterable

from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.mailbox import TaskMailbox
from pipeline_core.source import (
    FileChange,
    FileEvents,
    FileState,
    TrackedFile,
    WatchTarget,
    excluded,
    merge_targets,
    open_file_events,
    signature_matches,
    watch_targets,
)

EVENT_SCAN_SPACING_SECONDS = 0.05
"""Scans that file events ask for are at least this far apart, per pipeline (a burst of new
files costs one scan, not one each)."""

EVENT_SCAN_SHARE = 0.1
"""...and at least ``1 / EVENT_SCAN_SHARE`` times as far apart as the pipeline's last scan
took: with ten thousand files a scan takes tens of milliseconds, and containers coming and
going would otherwise have one run all the time."""

REAL_PATHS_KEPT = 65536
"""How many files' event paths (resolved through symlinks) are kept between scans."""


class FileEventRouter:
    """Turns a collector's file events into reading and scans.

    A pipeline with ``collector.file_events: inotify`` whose folders are all watched is
    *covered*: when caught up it waits for an event, or ``file_events_fallback_s`` at most,
    and its paths are globbed every ``file_events_fallback_s`` (or ``discovery_interval_s``
    if longer) besides the scans events ask for, unless a folder it watches for is not there
    yet, a source follows symlinks (a symlinked folder is not watched), or files wait for a
    descriptor (:attr:`FileWatcher.waiting`): those are globbed every
    ``discovery_interval_s``. Others (``poll``, no inotify, limits reached) are polled as
    before. The file events are opened at the first pipeline that wants them, with its
    ``file_events_coalesce_ms``.

    A written file whose descriptor the watcher closed (idle, or beyond ``max_open_files``)
    is opened again at once (:meth:`FileWatcher.wake`); if it cannot be (gone, moved,
    replaced), its pipeline is scanned.

    A written file that is being read and is now shorter than its read offset, or no longer
    starts with its signature bytes, was truncated (copytruncate) or replaced: its pipeline is
    scanned at once, so the watcher adopts the copy and the truncated file without waiting
    for the next discovery. So is a written file of the pipeline's that is not being read (it
    was empty at the last scan).

    Threading model: owned by the collector's mailbox thread; ``on_changes`` is called on the
    file events' thread and must only send a mail.
    """

    def __init__(
        self,
        on_changes: Callable[[], None],
        open_events: Callable[..., FileEvents] = open_file_events,
        mailbox: TaskMailbox | None = None,
    ) -> None:
        self._on_changes = on_changes
        self._open_events = open_events
        self._mailbox = mailbox
        """With a mailbox, the events have no thread: the mailbox thread waits on them."""
        self._attached = False
        """Whether the events are attached to the mailbox (until :meth:`close`)."""
        self._events: FileEvents | None = None
        self._covered: set[str] = set()
        self._partly: set[str] = set()
        """Covered pipelines whose globs may find what no event announces (a folder not there
        yet, a source that follows symlinks): globbed every ``discovery_interval_s``."""
        self._scan_wanted: dict[str, set[str] | None] = {}
        """By pipeline, the folders whose entries events said changed (None: any folder)."""
        self._event_scans: dict[str, float] = {}
        """By pipeline, when events last had it scanned (``time.monotonic()``)."""
        self._files: dict[str, dict[str, TrackedFile]] = {}
        """By pipeline, its files being read by every path their events name."""
        self._real_paths: dict[tuple[str, int, int], str] = {}

    def follow(self, runtime: PipelineRuntime) -> None:
        """After a scan of ``runtime``'s files: watch the folders its sources can match in and
        those of the files it reads (a symlink's target, a file renamed out of the paths)."""
        name = runtime.name
        self._scan_wanted.pop(name, None)
        if runtime.config.collector.file_events != "inotify":
            return
        if self._events is None:
            coalesce = runtime.config.collector.file_events_coalesce_ms / 1000
            self._events = self._open_events(
                self._on_changes, settle=coalesce, threaded=self._mailbox is None
            )
            source = self._events.descriptor_source()
            if source is not None and self._mailbox is not None:
                self._mailbox.attach_source(source)
                self._attached = True
        targets = watch_targets(path for source in runtime.config.sources for path in source.paths)
        by_folder = {target.folder: target for target in targets}
        files: dict[str, TrackedFile] = {}
        for tracked in [*runtime.watcher.readable(), *runtime.watcher.released_files()]:
            path = self._event_path(tracked)
            for spelling in {path, os.path.normpath(tracked.path)}:
                known = files.get(spelling)
                if known is None or known.state is not FileState.LIVE:
                    files[spelling] = tracked  # a live file before one rotated from its path
            folder, entry = os.path.split(path)
            folder = folder or os.curdir
            covering = by_folder.get(folder)
            if covering is None or not covering.concerns(entry):
                targets.append(WatchTarget(folder, (glob.escape(entry),)))
        self._files[name] = files
        if self._events.watch(name, merge_targets(targets)):
            self._covered.add(name)
        else:
            self._covered.discard(name)
        if self._events.missing(name) or any(s.follow_symlinks for s in runtime.config.sources):
            self._partly.add(name)
        else:
            self._partly.discard(name)
        # Events name every written file: the reader need not look at the others.
        runtime.reader.event_driven = name in self._covered and name not in self._partly
        runtime.reader.full_look_every = runtime.config.collector.file_events_fallback_s

    def forget(self, name: str) -> None:
        """The pipeline is no longer served."""
        if self._events is not None:
            self._events.unwatch(name)
        self._covered.discard(name)
        self._partly.discard(name)
        self._scan_wanted.pop(name, None)
        self._event_scans.pop(name, None)
        self._files.pop(name, None)

    def take(self, pipeline_of: Callable[[str], PipelineRuntime | None]) -> set[str]:
        """The mail ``on_changes`` asked for: the pipelines whose files changed since the
        last take (reading them again may find something); notes the scans wanted.
        ``pipeline_of(name)`` is the pipeline served under ``name``, if any."""
        if self._events is None:
            return set()
        changed = self._events.take()
        for name, changes in changed.items():
            runtime = pipeline_of(name)
            if runtime is None:
                continue
            files = self._files.get(name, {})
            for path in changes.written:
                tracked = files.get(path)
                if tracked is not None:
                    runtime.reader.look_at(tracked)
            if FileChange.SCAN in changes.change and changes.folders is None:
                runtime.reader.look_at(None)  # events were lost: any file may have changed
            runtime.watcher.note_change()  # sizes: bytes written, unread yet, show at once
            written = self._needs_scan(runtime, changes.written)
            folders: set[str] | None = written
            if FileChange.SCAN in changes.change:
                folders = None if changes.folders is None else written | changes.folders
            elif not written:
                continue
            if name in self._scan_wanted:
                wanted = self._scan_wanted[name]
                folders = None if wanted is None or folders is None else wanted | folders
            self._scan_wanted[name] = folders
        return set(changed)

    def scan_due(self, runtime: PipelineRuntime, now: float) -> bool:
        """Whether events asked for a scan of the pipeline and its last one is not too recent."""
        return runtime.name in self._scan_wanted and now - self._last_scan(runtime) >= _spacing(
            runtime
        )

    def scan_within(self, runtime: PipelineRuntime, now: float) -> set[str] | None:
        """For the scan events asked for (:meth:`scan_due`): the folders it may keep to (those
        whose entries changed), or None for a whole scan (a pipeline not covered by events,
        or events that did not say which folders). Noted as done."""
        self._event_scans[runtime.name] = now
        folders = self._scan_wanted.get(runtime.name)
        if runtime.name not in self._covered or runtime.name in self._partly:
            return None
        return folders

    def _last_scan(self, runtime: PipelineRuntime) -> float:
        return max(runtime.last_scan, self._event_scans.get(runtime.name, float("-inf")))

    def discovery_interval(self, runtime: PipelineRuntime) -> float:
        """How often the pipeline's paths are globbed when no event asks for it: every
        ``discovery_interval_s``, or, covered by events with nothing they cannot see, every
        ``file_events_fallback_s`` if that is longer."""
        tuning = runtime.config.collector
        if (
            runtime.name in self._covered
            and runtime.name not in self._partly
            and not runtime.watcher.waiting
        ):
            return max(tuning.discovery_interval_s, tuning.file_events_fallback_s)
        return tuning.discovery_interval_s

    def idle_wait(self, reading: Iterable[PipelineRuntime], now: float, poll: float) -> float:
        """How long caught-up pipelines may wait before they are looked at again: ``poll``
        if one of them is not covered by events, else until the first fallback look, scan
        wanted or discovery due."""
        wait = math.inf
        for runtime in reading:
            if runtime.name not in self._covered:
                return poll
            tuning = runtime.config.collector
            wait = min(
                wait,
                tuning.file_events_fallback_s,
                runtime.last_scan + self.discovery_interval(runtime) - now,
            )
            if runtime.name in self._scan_wanted:
                wait = min(wait, self._last_scan(runtime) + _spacing(runtime) - now)
        return poll if math.isinf(wait) else max(0.0, wait)

    def close(self) -> None:
        if self._events is not None:
            if self._attached and self._mailbox is not None:
                self._mailbox.detach_source()
            self._events.close()

    # -- internals -----------------------------------------------------------------------------

    def _needs_scan(self, runtime: PipelineRuntime, written: Iterable[str]) -> set[str]:
        """The folders to scan for the written files: those of a file not being read (a file
        created empty, or truncated to nothing and written again: the watcher tracks it once
        it has bytes) or being read but truncated or replaced (its copy is looked for beside
        it). A written file whose descriptor was closed is opened again first (its folder is
        scanned if it cannot be)."""
        files = self._files.get(runtime.name, {})
        wanted: set[str] = set()
        for path in written:
            folder = os.path.dirname(path) or os.curdir
            tracked = files.get(path)
            if tracked is None:
                if not _excluded(runtime, path):
                    wanted.add(folder)
                continue
            if tracked.released and not runtime.watcher.wake(tracked):
                wanted.add(folder)
                continue
            if tracked.fd is None or tracked.state is not FileState.LIVE:
                continue
            try:
                if tracked.size() < tracked.read_offset or not signature_matches(
                    tracked.fd, tracked.signature
                ):
                    tracked.checked_size = -1  # the scan looks at it, whatever its size
                    wanted.update({folder, os.path.dirname(os.path.normpath(tracked.path))})
            except OSError:
                wanted.add(folder)
        return wanted

    def _event_path(self, tracked: TrackedFile) -> str:
        """The path a file's events name: its own, or its target's if it is reached through
        a symlink (cached by path and inode)."""
        key = (tracked.path, tracked.dev, tracked.ino)
        path = self._real_paths.get(key)
        if path is None:
            path = os.path.normpath(tracked.path)
            real = os.path.realpath(path)
            if real != os.path.abspath(path):
                path = real
            if len(self._real_paths) > REAL_PATHS_KEPT:
                self._real_paths.clear()
            self._real_paths[key] = path
        return path


def _spacing(runtime: PipelineRuntime) -> float:
    """How long after its last scan events may have the pipeline scanned again."""
    return max(EVENT_SCAN_SPACING_SECONDS, runtime.watcher.last_scan_seconds / EVENT_SCAN_SHARE)


def _excluded(runtime: PipelineRuntime, path: str) -> bool:
    """Whether a source's ``exclude`` names ``path`` (compressed rotations being written)."""
    return any(excluded(source, path) for source in runtime.config.sources)
