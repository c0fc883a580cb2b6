"""Time-sliced reading (Logtail): one thread serves every file in turn, a slice at a time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pipeline_core.source._chunk import Chunk
from pipeline_core.source._chunk_reading import read_chunk
from pipeline_core.source._file_lifecycle import FileState
from pipeline_core.source._multiline import EventFraming
from pipeline_core.source._tracked_file import TrackedFile
from pipeline_core.source._watcher import FileWatcher

Publish = Callable[[Chunk], bool]
"""Hands a chunk downstream; returns False (without taking it) when downstream is full."""


@dataclass(frozen=True, slots=True)
class SliceResult:
    """What one slice read."""

    chunks: int
    bytes: int
    lines: int
    blocked: bool
    """Downstream was full: reading stopped early and must resume there."""
    caught_up: bool
    """Every file was read to its end (nothing whole is left to read right now)."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn (at most one chunk of one file) read."""

    chunk: Chunk | None
    """The chunk published, or None."""
    blocked: bool
    """Downstream refused the chunk; it will be read again."""
    caught_up: bool
    """A whole round of the files found nothing to read; or, with a chunk, its file was the
    last of the round not read to its end (the next turn would only find that out)."""


class TimeSlicedReader:
    """Reads the watcher's files round robin within a time budget per call.

    Each call of :meth:`read_slice` starts after the file served last, reads at most one chunk
    from each file per round, and returns once the slice's time is used, downstream is full, or
    a whole round found nothing to read. A rotated file found at its end is finished: its
    unterminated last line is shipped and it is marked DONE.

    Threading model: owned by the collector's mailbox thread.
    """

    def __init__(
        self,
        watcher: FileWatcher,
        *,
        chunk_bytes: int,
        max_line_bytes: int,
        slice_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._watcher = watcher
        self._chunk_bytes = chunk_bytes
        self._max_line_bytes = max_line_bytes
        self._slice_seconds = slice_seconds
        self._clock = clock
        self._cursor = 0
        self._idle_turns = 0
        self._scans_seen = 0
        self.event_driven = False
        """Whether file events name every file of the watcher that is written (set by the
        collector's file event router while they cover the pipeline). A LIVE file found with
        nothing whole to read is then quiet (``TrackedFile.quiet``): left out of the next
        rounds until an event names it (:meth:`look_at`) or a scan looks at the files again.
        Otherwise every file is looked at in every round: with 500 files open, a busy one's
        every wake-up read all 500."""
        self.full_look_every: float | None = None
        """Event-driven: every this many seconds a round looks at every file again, quiet or
        not (``file_events_fallback_s``: what raises no event, a write over NFS, is read
        within it)."""
        self._full_look_at = clock()
        self._round: list[TrackedFile] | None = None
        """The files of the current round (event-driven: those not quiet)."""
        self._round_of: list[TrackedFile] | None = None
        """The watcher's readable list it was taken from."""
        self._framings = {
            source.name: framing
            for source in watcher.sources
            if (framing := EventFraming.of_source(source)) is not None
        }
        """Per multiline or container source: how its reads are cut into whole events."""

    def framing(self, source: str) -> EventFraming | None:
        """How a multiline source's reads are cut into events (None: every line is one)."""
        return self._framings.get(source)

    def flush_due(self) -> float | None:
        """When (this reader's clock) the first event held back at a file's end is due to be
        handed on, if its file does not grow before; None when none is held."""
        if not self._framings:
            return None
        due = [t.flush_at for t in self._watcher.files if t.flush_at is not None]
        return min(due, default=None)

    def read_slice(
        self, publish: Publish, *, rotated_grace: float = 0.0, flush: bool = False
    ) -> SliceResult:
        """Read one slice. A ROTATED file is finished at its end once it has been rotated for
        ``rotated_grace`` seconds (a writer may still append to a renamed file until it
        reopens its log). ``flush``: a multiline source's last event at a file's end is handed
        on at once, not after its ``flush_after_s`` (a one-shot run)."""
        deadline = self._clock() + self._slice_seconds
        chunks = nbytes = lines = 0
        idle_in_a_row = 0
        while True:
            files = self._watcher.readable()
            if not files:
                return SliceResult(chunks, nbytes, lines, blocked=False, caught_up=True)
            self._cursor %= len(files)
            tracked = files[self._cursor]
            chunk = self._read(tracked, rotated_grace, flush)
            self._watcher.note_change()  # the file was looked at: it may show otherwise
            if chunk is None:
                idle_in_a_row += 1
            else:
                if not publish(chunk):
                    tracked.unread(chunk)
                    self._watcher.note_change()
                    return SliceResult(chunks, nbytes, lines, blocked=True, caught_up=False)
                idle_in_a_row = 0
                chunks += 1
                nbytes += len(chunk.data)
                lines += chunk.lines
            self._cursor += 1
            if idle_in_a_row >= len(files):
                return SliceResult(chunks, nbytes, lines, blocked=False, caught_up=True)
            if self._clock() >= deadline:
                return SliceResult(chunks, nbytes, lines, blocked=False, caught_up=False)

    def read_turn(
        self, publish: Publish, *, rotated_grace: float = 0.0, flush: bool = False
    ) -> TurnResult:
        """Read at most one chunk from the next file in turn (the unit a collector serving
        many pipelines interleaves, so each pipeline gets one chunk per round); ``flush`` as
        for :meth:`read_slice`."""
        files = self._files_in_round()
        if not files:
            self._round = None  # the next call looks again (an event, a full look due)
            return TurnResult(None, blocked=False, caught_up=True)
        self._cursor %= len(files)
        tracked = files[self._cursor]
        try:
            return self._turn(tracked, len(files), publish, rotated_grace, flush)
        finally:
            self._watcher.note_change()  # the file was looked at: it may show otherwise

    def _turn(
        self,
        tracked: TrackedFile,
        in_round: int,
        publish: Publish,
        rotated_grace: float,
        flush: bool,
    ) -> TurnResult:
        """:meth:`read_turn`'s look at ``tracked``, one of ``in_round`` files."""
        chunk = self._read(tracked, rotated_grace, flush)
        if chunk is None:
            self._idle_turns += 1
            self._cursor += 1
            if self.event_driven and _may_rest(tracked):
                tracked.quiet = True
            caught_up = self._idle_turns >= in_round
            if caught_up:
                # The next call starts a whole round (event-driven, without the files found
                # quiet): a wake-up looks at every file in it, not at one.
                self._round = None
                self._idle_turns = 0
            return TurnResult(None, blocked=False, caught_up=caught_up)
        if not publish(chunk):
            tracked.unread(chunk)
            return TurnResult(None, blocked=True, caught_up=False)
        self._idle_turns = 0
        if self.event_driven and tracked.read_to_end and _may_rest(tracked) and self._round:
            # Read to its end: it rests until an event names it (what is written from now
            # on raises one), instead of a turn that would only find that out (a look at
            # its size, and a wake-up of the sinks' threads while they take this chunk).
            tracked.quiet = True
            # By position (``read_turn`` took it at the cursor), not ``list.remove``: that
            # would compare the dataclass field by field with every file before it.
            del self._round[self._cursor]  # the cursor is on the next file now
            if not self._round:  # the last of its round: caught up, said with the chunk
                self._round = None
                return TurnResult(chunk, blocked=False, caught_up=True)
        else:
            self._cursor += 1
        return TurnResult(chunk, blocked=False, caught_up=False)

    def look_at(self, tracked: TrackedFile | None = None) -> None:
        """A file event named ``tracked`` (None: an event that named no file): it is in the
        next round again."""
        if tracked is None:
            for each in self._watcher.files:
                each.quiet = False
        else:
            tracked.quiet = False
        self._round = None

    def _files_in_round(self) -> list[TrackedFile]:
        readable = self._watcher.readable()
        if self._watcher.scans != self._scans_seen:  # the files may have changed: a new round
            self._scans_seen = self._watcher.scans
            self._idle_turns = 0
            self._round = None
            self._full_look_at = self._clock()
            for tracked in readable:
                tracked.quiet = False
        if not self.event_driven:
            return readable
        if self._round is None or self._round_of is not readable:
            every = self.full_look_every
            if every is not None and self._clock() - self._full_look_at >= every:
                self._full_look_at = self._clock()
                for tracked in readable:
                    tracked.quiet = False
            self._round = [tracked for tracked in readable if not tracked.quiet]
            self._round_of = readable
            self._idle_turns = 0
        return self._round

    def _read(self, tracked: TrackedFile, rotated_grace: float, flush: bool) -> Chunk | None:
        settled = tracked.state is FileState.COPIED  # a copy is never written again
        framing = self._framings.get(tracked.source)
        now = self._clock() if framing is not None or tracked.state is FileState.ROTATED else 0.0
        if tracked.state is FileState.ROTATED:
            if tracked.rotated_at is None:
                tracked.rotated_at = now
            settled = now - tracked.rotated_at >= rotated_grace
        chunk = read_chunk(
            tracked, self._chunk_bytes, self._max_line_bytes, settled, framing, now=now, flush=flush
        )
        if chunk is None and settled and tracked.read_offset >= tracked.size():
            if tracked.state is FileState.ROTATED:
                tracked.move_to(FileState.DONE)
                tracked.close()
            else:  # a COPIED file stays claimed at its path, and open: its inode stays its own
                tracked.move_to(FileState.KEPT)
        return chunk


def _may_rest(tracked: TrackedFile) -> bool:
    """Whether a file that had nothing whole to read may wait for an event to be read again:
    a LIVE file holding no event back (a held event is handed on by time, not by a write)."""
    return (
        tracked.state is FileState.LIVE
        and tracked.fd is not None
        and tracked.held_since is None
        and tracked.flush_at is None
    )
