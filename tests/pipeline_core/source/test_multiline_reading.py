"""Reading a multiline source: a read ends after a whole event, and the last event of a file that
may still grow is held back (not read, so never in a checkpoint) until it is proven whole.

The logs are written by Python's ``logging`` (a ``FileHandler``), the events it wrote recorded
by a second handler as it formatted them.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline_core.config import MultilineConfig, MultilinePreset
from pipeline_core.sinks import DeliveryBatch
from pipeline_core.source import FileWatcher, TimeSlicedReader
from pipeline_core.staging_contract import EventCut
from pipeline_core.testing import Received, holds_within, reader_of, source_of
from tests.support.python_log_program import SplittingFileHandler
from tests.support.python_logs import FORMAT, ServiceLog, Written


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceLog]:
    log = ServiceLog(tmp_path)
    yield log
    log.close()


def _tail(
    folder: Path, multiline: MultilineConfig, chunk_bytes: int = 1 << 20
) -> tuple[FileWatcher, TimeSlicedReader, Received]:
    watcher = FileWatcher([source_of(folder, "app.log*", multiline=multiline)], "test-host", 1024)
    watcher.scan()
    return watcher, reader_of(watcher, chunk_bytes), Received()


def _read(reader: TimeSlicedReader, received: Received, *, flush: bool = False) -> None:
    while not reader.read_slice(received.publish, flush=flush).caught_up:
        pass


PYTHON = MultilineConfig(preset=MultilinePreset.PYTHON)


def test_should_hold_the_last_event_back_until_following_lines_prove_it_whole(
    service: ServiceLog, tmp_path: Path
) -> None:
    service.info("started")
    service.failure("loading the config")
    watcher, reader, received = _tail(tmp_path, PYTHON)

    _read(reader, received)
    assert received.events() == service.written.events[:1]
    (tracked,) = watcher.files
    held_at = len(service.written.events[0]) + 1
    assert tracked.read_offset == held_at  # the traceback is not read: no checkpoint holds it
    assert tracked.held_since is not None
    assert tracked.cut_barrier() == (0, held_at, 1)

    service.info("retrying")
    _read(reader, received)
    # The preset judges a line by the two after it (a cause that was never raised): the
    # traceback is whole once two more lines settle its end.
    assert received.events() == service.written.events[:1]
    service.info("retrying again")
    service.info("retried")
    _read(reader, received)
    assert received.events() == service.written.events[:2]
    traceback = received[-1]
    assert traceback.start == held_at
    assert [(s.first_line, s.cut) for s in traceback.events] == [(0, None)]
    assert traceback.event_count == 1 < traceback.lines


def test_should_hand_the_last_event_on_once_its_file_is_quiet_for_flush_after(
    service: ServiceLog, tmp_path: Path
) -> None:
    service.info("started")
    service.failure("connecting")
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON, flush_after_s=5)
    watcher, reader, received = _tail(tmp_path, multiline)
    _read(reader, received)
    assert received.events() == service.written.events[:1]
    due = reader.flush_due()
    assert due is not None and 4 < due - time.monotonic() <= 5

    service.quiet_for(6)
    _read(reader, received)
    assert received.events() == service.written.events
    assert reader.flush_due() is None
    assert watcher.files[0].held_since is None


def test_should_read_a_held_event_whole_after_a_restart_from_the_sealed_offset(
    service: ServiceLog, tmp_path: Path
) -> None:
    service.info("started")
    service.failure("writing")
    watcher, reader, received = _tail(tmp_path, PYTHON)
    _read(reader, received)
    (tracked,) = watcher.files
    tracked.mark_sealed(tracked.read_offset)  # a checkpoint sealed what was read

    service.info("recovered")
    service.quiet_for(10)
    restarted = FileWatcher(
        [source_of(tmp_path, "app.log*", multiline=PYTHON)],
        "test-host",
        1024,
        [tracked.record(tracked.sealed_offset)],
    )
    restarted.scan()
    again = Received()
    _read(reader_of(restarted), again)
    assert again.events() == service.written.events[1:]


def test_should_close_an_event_at_max_lines_and_mark_the_rest_headless(
    service: ServiceLog, tmp_path: Path
) -> None:
    service.failure("parsing")
    service.info("next")
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON, max_lines=3)
    _, reader, received = _tail(tmp_path, multiline)
    _read(reader, received, flush=True)

    traceback = service.written.events[0].split(b"\n")
    rows = received.events()
    assert rows[0] == b"\n".join(traceback[:3])
    assert b"\n".join(rows[1:-1]) == b"\n".join(traceback[3:])
    assert rows[-1] == service.written.events[1]
    cuts = [span.cut for chunk in received for span in chunk.events]
    assert cuts[0] is EventCut.LINES
    assert set(cuts[1:]) <= {EventCut.LINES, EventCut.HEADLESS}
    assert cuts[-1] is EventCut.HEADLESS


def test_should_close_an_event_that_fills_a_whole_read_as_cut_by_bytes(tmp_path: Path) -> None:
    log = ServiceLog(tmp_path)
    try:
        log.info(
            "dump follows\n"
            + "\n".join(f"  frame {n:05d} of a dump of a long running task" for n in range(2000))
        )
        log.info("after")
    finally:
        log.close()
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON, max_bytes=8192)
    _, reader, received = _tail(tmp_path, multiline, chunk_bytes=8192)
    _read(reader, received, flush=True)

    assert b"\n".join(received.events()) == b"\n".join(log.written.events)
    cuts = [span.cut for chunk in received for span in chunk.events]
    assert cuts[0] is EventCut.BYTES
    assert all(len(event) <= 8192 for event in received.events())


def test_should_not_join_whole_events_when_a_full_read_cannot_settle_them(
    tmp_path: Path,
) -> None:
    # Records of 3 KiB read 8 KiB at a time: a read holds two whole records, too few lines to
    # settle them by the lines after them. The first is handed on alone; the second waits for
    # the next read (they were handed on as one row, cut "bytes").
    log = ServiceLog(tmp_path)
    try:
        for number in range(6):
            log.info(f"record {number} " + "x" * 3000)
    finally:
        log.close()
    _, reader, received = _tail(tmp_path, PYTHON, chunk_bytes=8192)
    _read(reader, received, flush=True)

    assert received.events() == log.written.events
    assert not [span for chunk in received for span in chunk.events]


def test_should_not_hold_an_event_back_forever_when_the_start_pattern_never_matches(
    tmp_path: Path,
) -> None:
    log = ServiceLog(tmp_path)
    try:
        for n in range(300):
            log.info(f"line {n}")
    finally:
        log.close()
    multiline = MultilineConfig(start_pattern=r"NEVER", max_bytes=4096)
    _, reader, received = _tail(tmp_path, multiline)
    _read(reader, received)  # the file is not quiet: only bounds can close events

    assert received.events()
    assert b"\n".join(received.events()) + b"\n" == b"".join(
        bytes(c.data) for c in received
    )  # nothing lost or repeated so far
    assert all(span.cut is not None for chunk in received for span in chunk.events)


def test_should_hand_on_the_events_before_an_over_long_line_whole(tmp_path: Path) -> None:
    log = ServiceLog(tmp_path)
    try:
        log.info("before")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            log.logger.exception("failed")
        log.info("x" * 5000)
    finally:
        log.close()
    watcher = FileWatcher([source_of(tmp_path, "app.log*", multiline=PYTHON)], "test-host", 1024)
    watcher.scan()
    reader = TimeSlicedReader(watcher, chunk_bytes=1 << 20, max_line_bytes=2048, slice_seconds=10)
    received = Received()
    _read(reader, received)

    assert received.events()[:2] == log.written.events[:2]
    assert received[-1].long_line is not None


@pytest.mark.parametrize(
    ("split_before", "read_before_copy"),
    [(None, True), ("RuntimeError", True), (None, False), ("RuntimeError", False)],
    ids=["in-frames-read", "before-exception-line-read", "in-frames", "before-exception-line"],
)
def test_should_mark_an_event_copytruncate_cut_in_two_on_both_sides(
    tmp_path: Path, split_before: str | None, read_before_copy: bool
) -> None:
    """The program writes a traceback in two halves a second apart (as a buffered appender
    writes a large record); logrotate-style copytruncate comes between them: the head is the
    copy's last event, marked ``truncated``; the tail, written into the truncated file, is its
    first, marked ``headless``. Together they are the event. A tail that begins with the
    exception's line (which continues an event only after a frame) is judged after the copy's
    last line; a head the collector had not read before the truncation is known cut by the
    tail after it, when the tail is on disk as the copy is found."""
    log = tmp_path / "app.log"
    with splitting_logger(log, pause=1.0, before=split_before) as (written, log_a_traceback):
        watcher, reader, received = _tail(tmp_path, PYTHON)
        writer = log_a_traceback()
        holds_within(lambda: log.read_bytes().count(b"\n") >= 3, 10, 0.01)
        if read_before_copy:
            _read(reader, received)  # the head is held back: it may still grow
        shutil.copy(log, tmp_path / "app.log.1")
        os.truncate(log, 0)
        read_the_rest(writer, watcher, reader, received)

    rows = list(DeliveryBatch(tuple(received), 0).events())
    assert [(row.line, row.cut) for row in rows[:1]] == [(written.events[0], None)]
    (head, tail) = sorted(rows[1:], key=lambda row: row.cut != EventCut.TRUNCATED)
    assert (head.cut, tail.cut) == (EventCut.TRUNCATED, EventCut.HEADLESS)
    assert head.line + b"\n" + tail.line == written.events[1]
    if split_before is not None:
        assert tail.line.startswith(split_before.encode())


def test_should_report_an_event_cut_by_copytruncate_whose_head_went_before_its_rest_was_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The head of a traceback is written, the file copied and truncated, and the copy found
    and read to its end before the program writes the rest: nothing held the head back, and
    nothing on disk said it would continue, so it is handed on as a whole event. When the
    rest comes, it lands cut ``headless`` and the log names both files and their byte ranges
    (the head landed unmarked before: the event was split with nothing saying so)."""
    log = tmp_path / "app.log"
    caplog.set_level(logging.WARNING, logger="pipeline_core.source")
    with splitting_logger(log, pause=2.0, before=None) as (written, log_a_traceback):
        watcher, reader, received = _tail(tmp_path, PYTHON)
        writer = log_a_traceback()
        holds_within(lambda: log.read_bytes().count(b"\n") >= 3, 10, 0.01)
        shutil.copy(log, tmp_path / "app.log.1")
        os.truncate(log, 0)
        watcher.scan()  # the copy is found while its rest is not written yet
        _read(reader, received, flush=True)
        read_the_rest(writer, watcher, reader, received)

    rows = list(DeliveryBatch(tuple(received), 0).events())
    (head, tail) = rows[1:]
    assert (head.cut, tail.cut) == (None, EventCut.HEADLESS)
    assert head.line + b"\n" + tail.line == written.events[1]
    (said,) = [r.getMessage() for r in caplog.records if "copytruncate copy" in r.getMessage()]
    copy_size = (tmp_path / "app.log.1").stat().st_size
    assert f"bytes [0, {len(tail.line) + 1})" in said
    assert "app.log.1" in said and f"ends at offset {copy_size}" in said


def test_should_hold_a_truncated_files_new_content_back_until_its_copy_is_found(
    tmp_path: Path,
) -> None:
    """A scan lists the folder, logrotate copies the log and truncates it, the program writes a
    traceback's rest, and the scan then finds the log truncated: the copy was not in its
    listing. The truncated file's first read must wait for the copy's last line, or the rest
    lands as a whole event, unmarked (seen in the fault run under copytruncate: the rest began
    with the exception's line, which starts an event unless it follows a frame). Held back
    until the next scan finds the copy, the head and the tail are both marked."""
    log = tmp_path / "app.log"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with splitting_logger(log, pause=1.0, before="RuntimeError") as (written, log_a_traceback):
        watcher, reader, received = _tail(tmp_path, PYTHON)
        writer = log_a_traceback()
        holds_within(lambda: log.read_bytes().count(b"\n") >= 3, 10, 0.01)
        _read(reader, received)  # the head is held back: it may still grow
        shutil.copy(log, elsewhere / "app.log.1")  # not in the scan's listing yet
        os.truncate(log, 0)
        writer.join(timeout=10)
        assert not writer.is_alive()
        watcher.scan()  # sees the truncation; the copy is not at the paths
        _read(reader, received)
        assert [f for f in watcher.readable() if f.path == str(log)] == []
        os.rename(elsewhere / "app.log.1", tmp_path / "app.log.1")
        watcher.scan()
        _read(reader, received)
        watcher.scan()
        _read(reader, received, flush=True)

    rows = list(DeliveryBatch(tuple(received), 0).events())
    (head, tail) = sorted(rows[1:], key=lambda row: row.cut != EventCut.TRUNCATED)
    assert (head.cut, tail.cut) == (EventCut.TRUNCATED, EventCut.HEADLESS)
    assert head.line + b"\n" + tail.line == written.events[1]
    assert tail.line.startswith(b"RuntimeError")


def test_should_read_a_file_emptied_with_no_copy_after_two_whole_scans(tmp_path: Path) -> None:
    """A log emptied in place (``> app.log``: no copy is ever made) and written again is held
    back only until two whole scans found no copy, then read from its first byte."""
    log = tmp_path / "app.log"
    log.write_bytes(b"2026-11-30 10:00:00,000 INFO first\n")
    watcher, reader, received = _tail(tmp_path, PYTHON)
    _read(reader, received, flush=True)
    log.write_bytes(b"2026-11-30 10:00:01,000 INFO again after emptying\n")
    watcher.scan()
    _read(reader, received, flush=True)
    assert watcher.settling, "a held file asks for the next scan soon"
    assert len(list(DeliveryBatch(tuple(received), 0).events())) == 1
    watcher.scan()
    watcher.scan()
    _read(reader, received, flush=True)
    rows = list(DeliveryBatch(tuple(received), 0).events())
    assert [row.line for row in rows] == [
        b"2026-11-30 10:00:00,000 INFO first",
        b"2026-11-30 10:00:01,000 INFO again after emptying",
    ]
    assert not watcher.settling


@contextmanager
def splitting_logger(
    log: Path, *, pause: float, before: str | None
) -> Iterator[tuple[Written, Callable[[], threading.Thread]]]:
    """A logger writing ``log`` that writes each record in two halves ``pause`` seconds apart
    (the second from ``before``, or at a random point), having logged one record; what it
    wrote, and how to start a thread logging a traceback through it."""
    written = Written()
    logger = logging.getLogger(f"split.{id(log)}.{pause}")
    logger.propagate = False
    handler = SplittingFileHandler(
        log, reopen=False, share=1.0, pause=pause, rng=random.Random(0), before=before
    )
    for each in (handler, written):
        each.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(each)

    def log_a_traceback() -> threading.Thread:
        def fail() -> None:
            try:
                raise RuntimeError("while loading")
            except RuntimeError:
                logger.exception("loading failed")

        writer = threading.Thread(target=fail)
        writer.start()
        return writer

    try:
        logger.error("started")
        yield written, log_a_traceback
    finally:
        logger.removeHandler(handler)
        logger.removeHandler(written)
        handler.close()


def read_the_rest(
    writer: threading.Thread, watcher: FileWatcher, reader: TimeSlicedReader, received: Received
) -> None:
    """Once ``writer`` wrote the traceback's rest: look for the files again and read them to
    their ends, the last read handing on what is held."""
    writer.join(timeout=10)
    assert not writer.is_alive()
    watcher.scan()
    _read(reader, received)
    watcher.scan()
    _read(reader, received, flush=True)
