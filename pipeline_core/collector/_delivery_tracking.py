"""The collector's side of the acker: stamping chunks, committed offsets, replays, persistence."""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable

from pipeline_core._file_names import shown_path
from pipeline_core.acker import Acker, OffsetTracker, TreeOutcome, TreeSource, new_id
from pipeline_core.metastore import AckerTreeRecord
from pipeline_core.source import (
    Chunk,
    EventFraming,
    FileWatcher,
    LongLine,
    read_long_line,
)
from pipeline_core.staging_contract import NO_EVENTS, EventRuns

log = logging.getLogger(__name__)


class DeliveryTracker:
    """Tracks every chunk read as an acker tree until every sink group has it.

    * ``stamp`` gives a chunk its tree and root edge ids; ``started`` begins the tree once the
      chunk is in the process queue. The reader holds back while ``can_admit`` is false (at
      most ``max_pending`` trees in flight: Storm's max spout pending).
    * An acked tree advances its file's committed offset (``offsets``).
    * A failed or timed-out tree is read again from its file and queued in ``replays``, marked
      ``replay``: the handoff group skips replays (its lines are already in a batch, or will be
      re-read from the sealed offset after a crash), the other groups deliver them again (at
      least once; the event id lets them de-duplicate). A pipeline with no other group drops
      the replay. A range that is one line longer than ``max_line_bytes`` is read again as
      the reader read it: its prefix alone (``Chunk.long_line``); a multiline source's range
      is framed into its events again (``framing``).
    * ``records``/``restore`` carry the in-flight trees through the metastore, so a restarted
      collector re-delivers to its other sinks what they had not acked.

    Threading model: owned by the collector's mailbox thread; acks arrive there as mail.
    """

    def __init__(
        self,
        watcher: FileWatcher,
        *,
        timeout: float,
        max_pending: int,
        replays_wanted: bool,
        max_line_bytes: int,
        framing: Callable[[str], EventFraming | None] = lambda source: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._watcher = watcher
        self._framing = framing
        self._max_line_bytes = max_line_bytes
        self._max_pending = max_pending
        self._replays_wanted = replays_wanted
        self.acker = Acker(self, timeout=timeout, clock=clock)
        self.offsets = OffsetTracker()
        self.replays: deque[Chunk] = deque()
        self.replayed = 0
        self.lost = 0
        """Replays that could not be read back (the file's bytes are gone)."""

    # -- admission ---------------------------------------------------------------------------

    def can_admit(self) -> bool:
        return self.acker.pending < self._max_pending and not self.replays

    def can_proceed(self) -> bool:
        """Whether the reader has work for this pipeline: replays to queue, or room for new
        trees."""
        return bool(self.replays) or self.can_admit()

    def stamp(self, chunk: Chunk) -> Chunk:
        return chunk.tracked_as(new_id(), new_id())

    def started(self, chunk: Chunk) -> None:
        self.acker.init(
            chunk.tree,
            chunk.edge,
            TreeSource(chunk.source, chunk.fingerprint, chunk.start, chunk.end, chunk.lines),
        )
        if not chunk.replay:
            self.offsets.track(chunk.fingerprint, chunk.start, chunk.end)

    # -- AckerListener -----------------------------------------------------------------------

    def on_tree_acked(self, tree_id: int, source: TreeSource) -> None:
        self.offsets.acked(source.fingerprint, source.start, source.end)

    def on_tree_failed(self, tree_id: int, source: TreeSource, outcome: TreeOutcome) -> None:
        if not self._replays_wanted:
            # Only the handoff group: its lines are sealed or re-read after a restart.
            self.offsets.acked(source.fingerprint, source.start, source.end)
            return
        chunk = self._read_again(source)
        if chunk is None:
            self.lost += 1
            self.offsets.acked(source.fingerprint, source.start, source.end)
            return
        self.replays.append(chunk)
        self.replayed += 1

    # -- persistence -------------------------------------------------------------------------

    def records(self) -> list[AckerTreeRecord]:
        return [
            AckerTreeRecord(
                tree.tree_id,
                tree.value,
                tree.source.source,
                tree.source.fingerprint,
                tree.source.start,
                tree.source.end,
                tree.source.lines,
            )
            for tree in self.acker.in_flight()
        ]

    def restore(self, records: Iterable[AckerTreeRecord]) -> int:
        """Queue replays for the saved trees whose bytes are sealed already (those past the
        sealed offset are read again by the reader anyway). Returns how many were queued."""
        if not self._replays_wanted:
            return 0
        sealed = {tracked.fingerprint: tracked.sealed_offset for tracked in self._watcher.files}
        queued = 0
        for record in records:
            if record.end > sealed.get(record.fingerprint, 0):
                continue
            source = TreeSource(
                record.source, record.fingerprint, record.start, record.end, record.lines
            )
            chunk = self._read_again(source)
            if chunk is None:
                self.lost += 1
                continue
            self.replays.append(chunk)
            queued += 1
        if queued:
            log.info("re-delivering %d ranges the other sinks had not acked", queued)
        return queued

    # -- internals ---------------------------------------------------------------------------

    def _read_again(self, source: TreeSource) -> Chunk | None:
        tracked = next(
            (f for f in self._watcher.files if f.fingerprint == source.fingerprint), None
        )
        size = source.end - source.start
        data = b""
        long_line: LongLine | None = None
        if tracked is not None:
            try:
                fd = tracked.with_descriptor()
                if fd is not None:
                    try:
                        data, long_line = self._read_range(fd, source)
                    finally:
                        if fd != tracked.fd:
                            os.close(fd)
            except OSError as exc:
                log.warning("cannot read %s again: %s", shown_path(tracked.path), exc)
        if (long_line.size if long_line is not None else len(data)) != size:
            log.error(
                "bytes %d-%d of file %s are gone; the other sinks miss %d lines",
                source.start,
                source.end,
                source.fingerprint,
                source.lines,
            )
            return None
        return Chunk(
            source.source,
            source.fingerprint,
            source.start,
            data,
            source.lines,
            replay=True,
            long_line=long_line,
            events=self._events_of(source.source, data) if long_line is None else NO_EVENTS,
        )

    def _events_of(self, source: str, data: bytes) -> EventRuns:
        """A multiline source's range read again: its events, framed again (the range starts
        at an event's first line and ends after one's last: the reader cut it so)."""
        framing = self._framing(source)
        if framing is None or not data:
            return NO_EVENTS
        return framing.frame(data, complete=True, filled=False).spans

    def _read_range(self, fd: int, source: TreeSource) -> tuple[bytes, LongLine | None]:
        """A tree's bytes as the reader handed them out: an over-long line as its prefix."""
        if source.lines == 1:
            found = read_long_line(fd, source.start, source.end, self._max_line_bytes)
            if found is not None:
                return found
        return os.pread(fd, source.end - source.start, source.start), None
