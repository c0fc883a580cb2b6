"""Reading a tracked file: its whole lines from its read offset, one chunk at a time.

A read takes whole lines only: a last line without its newline waits for it (unless the file
will not grow), and a line over ``max_line_bytes`` is skipped to its end and handed on as its
prefix alone (:class:`LongLine`). A multiline source's read ends after a whole event
(:class:`EventFraming`): the last one is held back while it may still grow. Bytes read are
handed out only while the file still starts with its signature and still holds the last bytes
read where they were read: a file truncated or cut under the reader is left to the watcher's
next scan.

:func:`read_chunk` reads, and moves the file's offsets past what it read through
:meth:`TrackedFile.mark_read` (every offset move is one of :class:`TrackedFile`'s methods).
Runs on the thread that owns the tracked file (the collector's mailbox thread).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import TYPE_CHECKING

from pipeline_core._file_names import shown_path
from pipeline_core.source._chunk import Chunk, LongLine, count_lines
from pipeline_core.source._content_change import tail_intact
from pipeline_core.source._fingerprint import signature_matches
from pipeline_core.source._long_line import LongLineScan, first_long_line, prefix_bytes
from pipeline_core.source._read_memory import TAIL_WINDOW_BYTES
from pipeline_core.staging_contract import NO_EVENTS, EventCut, EventRuns, EventSpan

if TYPE_CHECKING:
    from pipeline_core.source._multiline import EventFraming
    from pipeline_core.source._preset_lines import JudgedLines
    from pipeline_core.source._tracked_file import CopyEnd, TrackedFile

log = logging.getLogger("pipeline_core.source._tracked_file")
"""The tracked file's logger: what a read says is said of the file."""


def read_chunk(
    tracked: TrackedFile,
    chunk_bytes: int,
    max_line_bytes: int,
    final: bool,
    framing: EventFraming | None = None,
    *,
    now: float = 0.0,
    flush: bool = False,
) -> Chunk | None:
    """The whole lines at ``tracked``'s read offset (at most about ``chunk_bytes``) as a
    chunk, the read offset moved past them (:meth:`TrackedFile.mark_read`, with the last bytes
    read, up to :data:`TAIL_WINDOW_BYTES`, for its :class:`ReadMemory`).

    A last line without its newline waits for it, unless ``final`` is set (the file will not
    grow: a rotated file at its end). A line longer than ``max_line_bytes`` is one chunk of
    its own, holding only its prefix (``Chunk.long_line``): it is skipped to its end without
    being held, and waited for while its end is not written yet. Returns None when there is
    nothing whole to read yet.

    With a ``framing`` (a multiline source) the chunk ends after a whole event: the last
    event read stays unread (:attr:`TrackedFile.held_since`) while it may still grow, until a
    line that begins another event follows it, a bound closes it, or the read reaches the file's end
    and the file will not grow (``final``) or has not grown for ``framing.flush_after``
    seconds by ``now`` (``flush``: at once, as a one-shot run does).
    """
    if tracked.fd is None:
        return None
    judged: JudgedLines | None = None
    try:
        asked = chunk_bytes
        data, judged = _read(tracked, chunk_bytes, framing)
        if data and data.rfind(b"\n") < 0 and len(data) == chunk_bytes:
            # One long line: look as far as its newline could be without a cut.
            asked = max(chunk_bytes, max_line_bytes + 1)
            data = _pread(tracked.fd, asked, tracked.read_offset)
        tracked.read_to_end = len(data) < asked
        # Checked after reading: a file truncated and written again (copytruncate) before
        # the watcher's next scan would otherwise hand its new lines out under this name
        # and offset, and the copy that takes this name over would skip them.
        if data and not signature_matches(tracked.fd, tracked.signature):
            log.info(
                "%s no longer starts as it did; leaving it to the next scan",
                shown_path(tracked.path),
            )
            return None
        # Likewise a file cut below the read offset and written again past it: its new
        # bytes belong to a new generation that the next scan starts where the cut was.
        if data and not tail_intact(tracked):
            log.info(
                "%s was cut below offset %d; leaving it to the next scan",
                shown_path(tracked.path),
                tracked.read_offset,
            )
            return None
    except OSError as exc:
        log.warning("cannot read %s at %d: %s", shown_path(tracked.path), tracked.read_offset, exc)
        return None
    if not data:
        tracked.held_since = tracked.flush_at = None
        return None
    read = len(data)
    tracked.seen_size = max(tracked.seen_size, tracked.read_offset + read)
    cut = data.rfind(b"\n")
    too_long = cut < 0 and len(data) > max_line_bytes
    before_long_line = False
    if cut >= 0:
        del data[cut + 1 :]  # in place: no copy of the chunk
        if len(data) > max_line_bytes + 1:  # only then can a whole line in it be too long
            over = first_long_line(data, max_line_bytes)
            if over >= 0:
                # The lines before the long one, or (none before it) the long one itself.
                del data[over or data.find(b"\n") :]
                too_long = over == 0
                before_long_line = over > 0
    elif not too_long and not final:
        return None
    spans, lines = NO_EVENTS, -1
    if framing is not None and not too_long:
        # Only a multiline source asks whether the read reached the file's end (an fstat).
        at_end = read < chunk_bytes or tracked.read_offset + read >= tracked.size()
        framed = _frame(
            tracked,
            data,
            framing,
            read,
            at_end,
            before_long_line,
            final,
            now,
            flush,
            max_line_bytes,
            judged,
        )
        if framed is None:
            return None
        spans, lines = framed
    long_line: LongLine | None = None
    last_bytes: bytes | bytearray = data
    if too_long:
        skipped = _skip_long_line(tracked, data, chunk_bytes, max_line_bytes, final)
        if skipped is None:
            return None
        data, long_line, last_bytes = skipped
    chunk = Chunk(
        tracked.source,
        tracked.fingerprint,
        tracked.read_offset,
        data,
        lines if lines >= 0 else count_lines(data),  # framing counted them
        long_line=long_line,
        events=spans,
    )
    tracked.mark_read(chunk, last_bytes)
    return chunk


def _frame(
    tracked: TrackedFile,
    data: bytearray,
    framing: EventFraming,
    read: int,
    at_end: bool,
    before_long_line: bool,
    final: bool,
    now: float,
    flush: bool,
    max_line_bytes: int,
    judged: JudgedLines | None = None,
) -> tuple[EventRuns, int] | None:
    """Cut ``data`` (whole lines, ``read`` bytes read) after its last whole event, in
    place: its multiline events and its lines, or None (and :attr:`TrackedFile.held_since`
    set) while all of it is one event that may still grow.

    Whether the file is quiet is told by its modification time, not by when this process
    saw it grow: a collector started again, or a one-shot run, hands a quiet file's last
    event on at once, and holds a fresh one back (to be read whole by a later run)."""
    idle = 0.0

    def quiet() -> bool:
        """At the file's end: whether the file will not grow, or has not for a while."""
        nonlocal idle
        if final or flush:
            return True
        try:
            idle = time.time() - os.fstat(tracked.fd).st_mtime if tracked.fd is not None else 0.0
        except OSError:
            idle = 0.0
        return idle >= framing.flush_after

    complete = before_long_line or (at_end and quiet())
    grows = framing.container is not None and not complete
    after = tracked.lead_line if tracked.read_offset == 0 else b""
    framed = framing.frame(
        data, complete=complete, filled=not at_end and not grows, after=after, judged=judged
    )
    window = _GROWN_READS * max(read, framing.max_bytes)
    while grows and not framed.length and not at_end and tracked.fd is not None:
        # A container's held event waits for its stream's next line, which the other
        # stream's entries may push past this read: read further (up to ``window`` bytes
        # in all), then, if it is still held, cut it at the read's end.
        want = min(len(data) * 3, window - len(data))
        more = _pread(tracked.fd, want, tracked.read_offset + len(data)) if want > 0 else b""
        end = more.rfind(b"\n")
        if want > 0 and end < 0 and len(more) < want:
            break  # nothing whole past the read yet: the runtime is writing it
        added = more[: end + 1]
        if want <= 0 or end < 0 or first_long_line(added, max_line_bytes) >= 0:
            framed = framing.frame(data, complete=False, filled=True, after=after)
            break
        data += added
        at_end = len(more) < want
        framed = framing.frame(data, complete=at_end and quiet(), filled=False, after=after)
    spans = framed.spans
    if after and tracked.lead_of is not None and framed.length:
        _report_unmarked_head(tracked, tracked.lead_of, spans, data)
    if final and at_end and tracked.cut_mid_event and framed.length == len(data):
        spans = _mark_truncated(tracked, spans, framed.lines, framed.length)
    if framed.length < len(data):
        if tracked.held_since is None:
            tracked.held_since = now
        tracked.flush_at = now + max(framing.flush_after - max(idle, 0.0), 0.0)
    else:
        tracked.held_since = tracked.flush_at = None
    if not framed.length:
        return None
    tracked.lead_line = b""
    tracked.lead_of = None
    del data[framed.length :]
    return spans, framed.lines


def _report_unmarked_head(
    tracked: TrackedFile, copy: CopyEnd, spans: EventRuns, data: bytearray
) -> None:
    """The file's first event is the rest (``headless``) of its copy's last event, whose head
    was handed on unmarked: read before this rest was on disk, and not held back when the
    file was truncated. Said with both files' byte ranges: the event landed in two rows."""
    first = next(iter(spans), None)
    if copy.marked or first is None or first.first_line or first.cut is not EventCut.HEADLESS:
        return
    end = 0
    for _ in range(first.lines):
        end = data.index(b"\n", end) + 1
    log.warning(
        "%s: bytes [0, %d) are the rest of the last event of its copytruncate copy %s (which "
        "ends at offset %d); its head was read before this rest was written and landed "
        "unmarked, this rest lands as cut 'headless'",
        shown_path(tracked.path),
        end,
        shown_path(copy.path),
        copy.size,
    )


def _mark_truncated(tracked: TrackedFile, spans: EventRuns, lines: int, length: int) -> EventRuns:
    """``spans`` with the last of ``lines`` lines' event marked ``truncated`` (the copy's
    last event, which copytruncate may have cut), said once in the log."""
    tracked.cut_mid_event = False
    listed = list(spans)
    last = len(listed) - 1
    if listed and listed[last].first_line + listed[last].lines == lines:
        head = listed[last].head if listed[last].head >= 0 else last
        first = listed[head].first_line
        listed[head] = dataclasses.replace(listed[head], cut=EventCut.TRUNCATED)
    else:
        first = lines - 1
        listed.append(EventSpan(first, 1, EventCut.TRUNCATED))
    log.warning(
        "%s: the event at line %d of the read at offset %d (to offset %d) was being written "
        "when copytruncate truncated its file: it lands as cut 'truncated', and what was "
        "written of it after the copy, as the truncated file's first row, cut 'headless'",
        shown_path(tracked.path),
        first,
        tracked.read_offset,
        tracked.read_offset + length,
    )
    return EventRuns.of(listed)


def _skip_long_line(
    tracked: TrackedFile, head: bytearray, step: int, max_line_bytes: int, final: bool
) -> tuple[bytearray, LongLine, bytes] | None:
    """The line at ``read_offset``, longer than ``max_line_bytes``, whose first bytes are
    ``head`` (no newline among them): its prefix, the line, and its last bytes read (up to
    ``TAIL_WINDOW_BYTES``, its newline included). None until its end is in the file.

    The rest of the line is read ``step`` bytes at a time and dropped. ``read_offset`` stays
    at the line's start until its end is found, so a checkpoint cut meanwhile leaves the
    whole line to the next batch (a restart looks for its end again). How far it was
    looked for is kept, so a line still being written is not read again from its start.
    """
    assert tracked.fd is not None
    scan = tracked.long_line_scan
    if scan is None or not scan.resumes(
        tracked.fingerprint, tracked.read_offset, head, tracked.size()
    ):
        prefix = bytes(head[: prefix_bytes(max_line_bytes)])
        scan = tracked.long_line_scan = LongLineScan(
            tracked.fingerprint, tracked.read_offset, prefix, len(head)
        )
    first_found = scan.found is None
    try:
        line = scan.advance(tracked.fd, step, final)
        if line is None:
            return None
        keep = min(TAIL_WINDOW_BYTES, line.size)
        last_bytes = bytes(_pread(tracked.fd, keep, tracked.read_offset + line.size - keep))
    except OSError as exc:
        log.warning("cannot read %s at %d: %s", shown_path(tracked.path), tracked.read_offset, exc)
        return None
    if first_found:  # not again when a refused chunk is read again
        log.warning(
            "%s: the line at offset %d is %d bytes long, over max_line_bytes %d: it is "
            "staged as its first %d bytes, to be rejected as line_too_long",
            shown_path(tracked.path),
            tracked.read_offset,
            line.length,
            max_line_bytes,
            len(scan.prefix),
        )
    return bytearray(scan.prefix), line, last_bytes


_GROWN_READS = 8
"""A container's read grows (:func:`_frame`) to at most this many times its size
(or ``multiline.max_bytes``) in all before a held event is cut at its end."""


def _read(
    tracked: TrackedFile, size: int, framing: EventFraming | None
) -> tuple[bytearray, JudgedLines | None]:
    """Up to ``size`` bytes at ``tracked``'s read offset (as :func:`_pread`) and, for a source
    whose lines the presets alone judge, what they say of the whole lines read, in the same
    compiled call (:meth:`EventFraming.read`)."""
    fd, offset = tracked.fd, tracked.read_offset
    assert fd is not None
    size = _readable(fd, size, offset)
    if size <= 0:
        return bytearray(), None
    read = None if framing is None else framing.read(fd, offset, size)
    return read if read is not None else (_pread_at(fd, size, offset), None)


def _pread(fd: int, size: int, offset: int) -> bytearray:
    """Up to ``size`` bytes at ``offset``, in a buffer that can be cut short in place (a
    ``bytes`` would be copied to drop the partial line at its end)."""
    size = _readable(fd, size, offset)
    return _pread_at(fd, size, offset) if size > 0 else bytearray()


def _readable(fd: int, size: int, offset: int) -> int:
    """How much of ``size`` bytes the file holds at ``offset``: a read's buffer is no larger
    (a tailed file is read often, a few lines at a time, and a whole chunk's buffer for each
    read costs more than the read)."""
    return min(size, os.fstat(fd).st_size - offset)


def _pread_at(fd: int, size: int, offset: int) -> bytearray:
    """``size`` bytes (at most) at ``offset``, into a buffer cut to what was read."""
    buffer = bytearray(size)
    read = os.preadv(fd, [buffer], offset)
    del buffer[read:]
    return buffer
