"""Descriptors held to a bound: a file idle for a while, or beyond the pipeline's
``max_open_files``, has its descriptor closed, and is opened again by identity (device, inode,
first bytes) without losing its place. Every rotation rule holds for a file that was closed:
a rename, a copytruncate, a deletion or a cut while it was closed is told when it is looked at
again, and every line is read exactly once.

Real files, counted by the descriptors this process holds on them (``/proc/self/fd``).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline_core.config import MultilineConfig, MultilinePreset
from pipeline_core.source import FileState, FileWatcher, TimeSlicedReader
from pipeline_core.source._copy_adoption import COPY_WAIT_S
from pipeline_core.testing import Received, append_bytes, padded_lines, reader_of, source_of
from tests.support.descriptors import open_under
from tests.support.python_logs import ServiceLog

HOST = "test-host"


class Clock:
    """The watcher's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def watcher_of(
    watchers: list[FileWatcher],
    folder: Path,
    pattern: str,
    clock: Callable[[], float],
    *,
    max_open_files: int | None = None,
    close_idle_after: float | None = None,
    multiline: MultilineConfig | None = None,
) -> FileWatcher:
    watcher = FileWatcher(
        [source_of(folder, pattern, multiline=multiline)],
        HOST,
        1024,
        clock=clock,
        max_open_files=max_open_files,
        close_idle_after=close_idle_after,
    )
    watchers.append(watcher)
    return watcher


class Tail:
    """A watcher, its reader and what it read; records the most descriptors seen open on the
    folder after any scan."""

    def __init__(self, watcher: FileWatcher, folder: Path, clock: Clock) -> None:
        self.watcher = watcher
        self.clock = clock
        self.reader: TimeSlicedReader = reader_of(watcher)
        self.received = Received()
        self.folder = folder
        self.most_open = 0

    def scan(self) -> None:
        self.watcher.scan()
        self.most_open = max(self.most_open, open_under(self.folder))

    def read(self) -> None:
        while not self.reader.read_slice(self.received.publish).caught_up:
            pass

    def everything(self, scans: int = 50) -> None:
        """Scan and read until a scan finds nothing more to read and no file waits."""
        for _ in range(scans):
            before = len(self.received)
            self.clock.now += 0.1  # a file read at one scan is not active at the next
            self.scan()
            self.read()
            if len(self.received) == before and not self.watcher.waiting:
                return
        raise AssertionError(f"still reading after {scans} scans")


def closed_after_reading(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock, pattern: str
) -> tuple[Path, Tail]:
    """``access.log`` with 10 lines, tailed through ``pattern`` (``close_idle_after`` 60 s),
    read to its end, then idle for 61 s and scanned: its descriptor is closed."""
    log = tmp_path / "access.log"
    append_bytes(log, padded_lines("a", 0, 10))
    tail = Tail(
        watcher_of(watchers, tmp_path, pattern, clock, close_idle_after=60), tmp_path, clock
    )
    tail.everything()
    clock.now += 61
    tail.scan()
    return log, tail


def assert_each_once(received: Received, expected: bytes) -> None:
    read = received.lines()
    assert len(read) == len(set(read)), "a line was read twice"
    assert sorted(read) == sorted(expected.splitlines())


# -- the bound ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_should_hold_no_more_descriptors_than_the_bound_and_read_every_line_once(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    """30 files, 8 descriptors: files beyond the bound wait, released, for the descriptor of a
    file read to its end; written again, each is read on from where it was."""
    written = b""
    for index in range(30):
        data = padded_lines(f"f{index:02d}", 0, 50)
        append_bytes(tmp_path / f"f{index:02d}.log", data)
        written += data
    tail = Tail(watcher_of(watchers, tmp_path, "*.log", clock, max_open_files=8), tmp_path, clock)

    while True:  # the clock moves: files read at one scan are idle at the next
        clock.now += 1
        tail.scan()
        tail.read()
        if not tail.watcher.waiting and len(tail.received.lines()) == 30 * 50:
            break
    assert tail.most_open <= 8
    assert_each_once(tail.received, written)

    for index in range(30):
        data = padded_lines(f"f{index:02d}", 50, 20)
        append_bytes(tmp_path / f"f{index:02d}.log", data)
        written += data
    for _ in range(40):
        clock.now += 1
        tail.everything()

    assert tail.most_open <= 8
    assert tail.watcher.open_files <= 8
    assert_each_once(tail.received, written)
    assert len({chunk.fingerprint for chunk in tail.received}) == 30  # no file taken as new


@pytest.mark.timeout(60)
def test_should_close_an_idle_file_and_read_on_from_its_offset_when_it_grows(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    log = tmp_path / "app.log"
    append_bytes(log, padded_lines("a", 0, 10))
    tail = Tail(
        watcher_of(watchers, tmp_path, "app.log", clock, close_idle_after=60), tmp_path, clock
    )
    tail.everything()
    (tracked,) = tail.watcher.files
    read_to = tracked.read_offset

    clock.now += 61
    tail.scan()
    assert tracked.fd is None and tracked.released
    assert open_under(tmp_path) == 0
    clock.now += 600
    tail.scan()  # unchanged: left closed
    assert tracked.fd is None

    append_bytes(log, padded_lines("a", 10, 5))
    tail.everything()

    assert tracked.state is FileState.LIVE and tracked.fd is not None
    assert_each_once(tail.received, padded_lines("a", 0, 15))
    last = tail.received[-1]
    assert (last.fingerprint, last.start) == (tracked.fingerprint, read_to)


@pytest.mark.timeout(60)
def test_should_wake_a_closed_file_by_its_identity_and_not_a_file_put_in_its_place(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    log = tmp_path / "app.log"
    append_bytes(log, padded_lines("a", 0, 10))
    tail = Tail(
        watcher_of(watchers, tmp_path, "app.log", clock, close_idle_after=60), tmp_path, clock
    )
    tail.everything()
    (tracked,) = tail.watcher.files
    clock.now += 61
    tail.scan()

    append_bytes(log, padded_lines("a", 10, 1))
    assert tail.watcher.wake(tracked)  # a file event: read at once, no scan
    tail.read()
    assert_each_once(tail.received, padded_lines("a", 0, 11))

    tail.scan()  # sees it read
    clock.now += 61
    tail.scan()
    assert tracked.released
    os.rename(log, tmp_path / "old.log")
    append_bytes(log, padded_lines("b", 0, 3))  # another inode at its path
    assert not tail.watcher.wake(tracked)
    assert tracked.fd is None


# -- rotation while closed ---------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_should_read_a_closed_file_renamed_off_the_paths_to_its_end(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    log, tail = closed_after_reading(tmp_path, watchers, clock, "access.log")
    (tracked,) = tail.watcher.files
    assert tracked.released

    # written, then rotated before it was looked at again
    append_bytes(log, padded_lines("a", 10, 5))
    os.rename(log, tmp_path / "access.log.1")
    append_bytes(log, padded_lines("b", 0, 7))
    tail.everything()
    tail.reader.read_slice(tail.received.publish, rotated_grace=0)  # finished at its end

    assert tracked.state is FileState.DONE
    assert_each_once(tail.received, padded_lines("a", 0, 15) + padded_lines("b", 0, 7))


@pytest.mark.timeout(60)
def test_should_follow_a_closed_file_renamed_within_the_paths(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    log, tail = closed_after_reading(tmp_path, watchers, clock, "access.log*")
    (tracked,) = tail.watcher.files

    append_bytes(log, padded_lines("a", 10, 5))
    os.rename(log, tmp_path / "access.log.1")
    append_bytes(log, padded_lines("b", 0, 7))
    tail.everything()

    assert tracked.path == str(tmp_path / "access.log.1")
    assert tracked.state is FileState.LIVE
    assert_each_once(tail.received, padded_lines("a", 0, 15) + padded_lines("b", 0, 7))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pattern", ["access.log", "access.log*"], ids=["off-paths", "at-paths"])
def test_should_adopt_the_copy_of_a_file_copytruncated_while_closed(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock, pattern: str
) -> None:
    """The lines written after it was closed and before the copy are read once, from the copy
    (at the source's paths, or off them beside it); what is written after the truncation is
    a new file."""
    log, tail = closed_after_reading(tmp_path, watchers, clock, pattern)
    (tracked,) = tail.watcher.files
    assert tracked.released

    append_bytes(log, padded_lines("a", 10, 5))
    shutil.copyfile(log, tmp_path / "access.log.1")
    os.truncate(log, 0)
    append_bytes(log, padded_lines("b", 0, 7))
    for _ in range(3):  # a copy off the paths is adopted once it kept its size
        tail.everything()

    assert_each_once(tail.received, padded_lines("a", 0, 15) + padded_lines("b", 0, 7))
    assert tracked.path == str(tmp_path / "access.log.1")


@pytest.mark.timeout(60)
def test_should_adopt_the_copy_of_a_closed_file_written_again_to_the_same_size(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    """Truncated and written again to exactly its old size, a closed file looks unchanged to
    a scan; the copy that turns up with its first bytes has it looked at all the same, so the
    copy is adopted, not read again as a new file."""
    log, tail = closed_after_reading(tmp_path, watchers, clock, "access.log*")

    shutil.copyfile(log, tmp_path / "access.log.1")
    os.truncate(log, 0)
    append_bytes(log, padded_lines("b", 0, 10))  # the same length as before
    for _ in range(3):
        tail.everything()

    assert_each_once(tail.received, padded_lines("a", 0, 10) + padded_lines("b", 0, 10))


@pytest.mark.timeout(60)
def test_should_hold_back_a_copy_being_made_of_a_closed_file(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    """A new file holding just the first bytes of a closed file, shorter than its signature,
    is its copy caught in the making: it is not read as a new file."""
    log = tmp_path / "access.log"
    append_bytes(log, b"line a\nline b\nline c\n")
    tail = Tail(
        watcher_of(watchers, tmp_path, "access.log*", clock, close_idle_after=60), tmp_path, clock
    )
    tail.everything()
    clock.now += 61
    tail.scan()
    copy = tmp_path / "access.log.1"

    append_bytes(copy, b"line a\nline b\n")  # the copy's first write
    tail.everything()
    assert len(tail.watcher.files) == 1
    append_bytes(copy, b"line c\n")
    os.truncate(log, 0)
    append_bytes(log, b"line d\n")
    for _ in range(3):
        tail.everything()

    assert_each_once(tail.received, b"line a\nline b\nline c\nline d\n")


@pytest.mark.timeout(60)
def test_should_read_a_lookalike_of_a_closed_file_as_a_file_of_its_own(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    """Another log starting with the same 2 KiB as a closed file, and ending otherwise, is not
    its copy: the closed file is opened to compare their ends, and the new one is read."""
    header = padded_lines("header", 0, 40)
    log = tmp_path / "access.log"
    append_bytes(log, header + padded_lines("a", 0, 10))
    tail = Tail(
        watcher_of(watchers, tmp_path, "*.log", clock, close_idle_after=60), tmp_path, clock
    )
    tail.everything()
    clock.now += 61
    tail.scan()

    append_bytes(tmp_path / "other.log", header + padded_lines("b", 0, 10))
    tail.everything()

    assert sorted(tail.received.by_file()) == sorted(
        [
            (header + padded_lines("a", 0, 10)).splitlines(),
            (header + padded_lines("b", 0, 10)).splitlines(),
        ]
    )


@pytest.mark.timeout(60)
def test_should_say_a_closed_file_read_to_its_end_and_deleted_is_done_without_a_warning(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    log, tail = closed_after_reading(tmp_path, watchers, clock, "access.log")
    (tracked,) = tail.watcher.files

    os.unlink(log)
    append_bytes(log, padded_lines("b", 0, 4))  # a new file (perhaps on the freed inode)
    with caplog.at_level(logging.INFO, logger="pipeline_core.source._watcher"):
        for _ in range(2):
            tail.everything()
        clock.now += COPY_WAIT_S + 1  # a truncation seen on a reused inode waits for a copy
        tail.everything()

    assert tracked.state is FileState.DONE
    assert_each_once(tail.received, padded_lines("a", 0, 10) + padded_lines("b", 0, 4))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.timeout(60)
def test_should_not_close_a_file_holding_a_multiline_event_back(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    """The traceback at the end of an idle file stays held, its file open, and is handed on
    once the file is quiet for ``flush_after_s``."""
    service = ServiceLog(tmp_path)
    try:
        service.info("started")
        service.failure("connecting")
        multiline = MultilineConfig(preset=MultilinePreset.PYTHON, flush_after_s=5)
        watcher = watcher_of(
            watchers, tmp_path, "app.log*", clock, close_idle_after=60, multiline=multiline
        )
        tail = Tail(watcher, tmp_path, clock)
        tail.everything()
        (tracked,) = watcher.files
        assert tracked.held_since is not None

        clock.now += 3600
        tail.scan()
        assert tracked.fd is not None and not tracked.released

        service.quiet_for(6)
        tail.read()
        assert tail.received.events() == service.written.events
        tail.scan()  # sees it read
        clock.now += 3600
        tail.scan()
        assert tracked.released  # nothing held any more
    finally:
        service.close()


@pytest.mark.timeout(60)
def test_should_read_on_after_a_restart_with_more_files_than_the_bound(
    tmp_path: Path, watchers: list[FileWatcher], clock: Clock
) -> None:
    written = b""
    for index in range(12):
        data = padded_lines(f"f{index:02d}", 0, 10)
        append_bytes(tmp_path / f"f{index:02d}.log", data)
        written += data
    first = Tail(watcher_of(watchers, tmp_path, "*.log", clock), tmp_path, clock)
    first.everything()
    records = [f.record(f.read_offset) for f in first.watcher.files]
    first.watcher.close()
    for index in range(12):
        data = padded_lines(f"f{index:02d}", 10, 5)
        append_bytes(tmp_path / f"f{index:02d}.log", data)
        written += data

    again = FileWatcher(
        [source_of(tmp_path, "*.log")], HOST, 1024, records, clock=clock, max_open_files=4
    )
    watchers.append(again)
    tail = Tail(again, tmp_path, clock)
    for _ in range(20):
        clock.now += 1
        tail.everything()

    assert tail.most_open <= 4
    assert_each_once(Received([*first.received, *tail.received]), written)
