"""Time-sliced reading: files served round robin, slices bounded by time and by downstream."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.source import Chunk, FileState, FileWatcher, LongLine, TimeSlicedReader
from pipeline_core.testing import append

LINE = 10  # every test line is 9 bytes and its newline


class SteppingClock:
    """A monotonic clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 1000.0
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


class Downstream:
    """Collects published chunks; refuses them while ``full``."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.full = False

    def __call__(self, chunk: Chunk) -> bool:
        if self.full:
            return False
        self.chunks.append(chunk)
        return True


def lines(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i:07d}".encode() for i in range(count)]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


@pytest.fixture
def watcher(logs: Path) -> Iterator[FileWatcher]:
    source = SourceConfig(name="access", paths=[str(logs / "*.log")], format=SourceFormat.RAW)
    watcher = FileWatcher([source], "test-host", 1024)
    yield watcher
    watcher.close()


def reader(
    watcher: FileWatcher,
    clock: SteppingClock | None = None,
    *,
    chunk_bytes: int = 4096,
    slice_seconds: float = 10.0,
) -> TimeSlicedReader:
    return TimeSlicedReader(
        watcher,
        chunk_bytes=chunk_bytes,
        max_line_bytes=4096,
        slice_seconds=slice_seconds,
        clock=clock or SteppingClock(),
    )


def fingerprints(watcher: FileWatcher) -> dict[str, str]:
    """Fingerprint -> file name."""
    return {f.fingerprint: os.path.basename(f.path) for f in watcher.files}


def test_should_report_caught_up_when_there_is_no_file(watcher: FileWatcher) -> None:
    downstream = Downstream()

    result = reader(watcher).read_slice(downstream)

    assert result.caught_up and not result.blocked
    assert (result.chunks, result.bytes, result.lines) == (0, 0, 0)


def test_should_serve_files_round_robin_a_chunk_at_a_time(logs: Path, watcher: FileWatcher) -> None:
    append(logs / "a.log", *lines("a", 4))
    append(logs / "b.log", *lines("b", 4))
    watcher.scan()
    downstream = Downstream()

    result = reader(watcher, chunk_bytes=LINE + 5).read_slice(downstream)

    names = fingerprints(watcher)
    assert [names[c.fingerprint] for c in downstream.chunks] == ["a.log", "b.log"] * 4
    assert all(c.lines == 1 for c in downstream.chunks)
    assert result.caught_up and not result.blocked
    assert (result.chunks, result.lines, result.bytes) == (8, 8, 8 * LINE)


def test_should_keep_serving_the_file_with_data_left(logs: Path, watcher: FileWatcher) -> None:
    append(logs / "a.log", *lines("a", 1))
    append(logs / "b.log", *lines("b", 3))
    watcher.scan()
    downstream = Downstream()

    result = reader(watcher, chunk_bytes=LINE + 5).read_slice(downstream)

    names = fingerprints(watcher)
    assert [names[c.fingerprint] for c in downstream.chunks] == ["a.log", "b.log", "b.log", "b.log"]
    assert result.caught_up


def test_should_end_a_slice_when_its_time_is_used_and_resume_with_the_next_file(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", *lines("a", 3))
    append(logs / "b.log", *lines("b", 3))
    watcher.scan()
    downstream = Downstream()
    # Each reading of the clock takes a second; a slice of half a second fits one chunk.
    tailer = reader(watcher, SteppingClock(step=1.0), chunk_bytes=LINE + 5, slice_seconds=0.5)

    results = [tailer.read_slice(downstream) for _ in range(4)]

    assert [r.chunks for r in results] == [1, 1, 1, 1]
    assert not any(r.caught_up or r.blocked for r in results)
    names = fingerprints(watcher)
    assert [names[c.fingerprint] for c in downstream.chunks] == ["a.log", "b.log"] * 2


def test_should_stop_when_downstream_is_full_and_resume_at_the_refused_chunk(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", *lines("a", 3))
    watcher.scan()
    (tracked,) = watcher.files
    downstream = Downstream()
    downstream.full = True
    tailer = reader(watcher)

    blocked = tailer.read_slice(downstream)

    assert blocked.blocked and not blocked.caught_up
    assert (blocked.chunks, blocked.lines) == (0, 0)
    assert tracked.read_offset == 0
    assert tracked.lines_since_barrier == 0

    downstream.full = False
    resumed = tailer.read_slice(downstream)

    assert resumed.caught_up
    (chunk,) = downstream.chunks
    assert (chunk.start, chunk.lines) == (0, 3)
    assert tracked.lines_since_barrier == 3


def test_should_offer_a_refused_over_long_line_again_whole(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", b"first", b"L" * 20_000, b"last")
    watcher.scan()
    (tracked,) = watcher.files
    downstream = Downstream()
    tailer = reader(watcher)
    assert tailer.read_turn(downstream).chunk is not None  # "first"
    downstream.full = True

    assert tailer.read_turn(downstream).blocked
    assert (tracked.read_offset, tracked.lines_since_barrier) == (6, 1)

    downstream.full = False
    assert tailer.read_slice(downstream).caught_up

    assert [(c.start, c.end, c.lines, c.long_line) for c in downstream.chunks] == [
        (0, 6, 1, None),
        (6, 20_007, 1, LongLine(20_000, True)),
        (20_007, 20_012, 1, None),
    ]
    assert tracked.lines_since_barrier == 3


def test_should_leave_a_partial_line_of_a_live_file_unread(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", b"whole\npartial", newline=False)
    watcher.scan()
    downstream = Downstream()

    result = reader(watcher).read_slice(downstream)

    assert result.caught_up
    assert [c.data for c in downstream.chunks] == [b"whole\n"]
    assert watcher.files[0].state is FileState.LIVE


def test_should_ship_the_unterminated_end_of_a_rotated_file_and_finish_it(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", b"whole\nlast words", newline=False)
    watcher.scan()
    (tracked,) = watcher.files
    os.rename(logs / "a.log", logs / "a.log.1")
    watcher.scan()
    assert [f.state for f in watcher.files] == [FileState.ROTATED]
    downstream = Downstream()

    result = reader(watcher).read_slice(downstream)

    assert [c.data for c in downstream.chunks] == [b"whole\n", b"last words"]
    assert result.lines == 2
    assert result.caught_up
    assert tracked.state is FileState.DONE
    assert tracked.fd is None
    assert watcher.readable() == []


def test_should_hold_back_the_end_of_a_rotated_file_when_not_finishing(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", b"whole\nlast words", newline=False)
    watcher.scan()
    (tracked,) = watcher.files
    os.rename(logs / "a.log", logs / "a.log.1")
    watcher.scan()
    downstream = Downstream()

    reader(watcher).read_slice(downstream, rotated_grace=3600)

    assert [c.data for c in downstream.chunks] == [b"whole\n"]
    assert tracked.state is FileState.ROTATED
    assert tracked in watcher.readable()


def test_should_keep_tailing_a_rotated_file_until_its_grace_runs_out(
    logs: Path, watcher: FileWatcher
) -> None:
    append(logs / "a.log", b"first")
    watcher.scan()
    (tracked,) = watcher.files
    os.rename(logs / "a.log", logs / "a.log.1")
    watcher.scan()
    clock = SteppingClock()
    tailer = reader(watcher, clock)
    downstream = Downstream()
    tailer.read_slice(downstream, rotated_grace=5.0)
    append(logs / "a.log.1", b"late append from the old writer")
    clock.now += 4.0

    tailer.read_slice(downstream, rotated_grace=5.0)
    state_within_grace = tracked.state
    clock.now += 2.0
    tailer.read_slice(downstream, rotated_grace=5.0)

    assert [c.data for c in downstream.chunks] == [
        b"first\n",
        b"late append from the old writer\n",
    ]
    assert state_within_grace is FileState.ROTATED
    assert tracked.state is FileState.DONE


def test_should_read_a_deleted_file_to_its_end(logs: Path, watcher: FileWatcher) -> None:
    append(logs / "a.log", *lines("a", 2))
    watcher.scan()
    tailer = reader(watcher)
    downstream = Downstream()
    tailer.read_slice(downstream)
    with open(logs / "a.log", "ab") as writer:
        writer.write(b"".join(line + b"\n" for line in lines("late", 3)))
        os.unlink(logs / "a.log")
        writer.write(b"after the unlink\n")
    watcher.scan()

    tailer.read_slice(downstream)

    data = b"".join(c.data for c in downstream.chunks)
    expected = lines("a", 2) + lines("late", 3) + [b"after the unlink"]
    assert data == b"".join(line + b"\n" for line in expected)
    assert watcher.files[0].state is FileState.DONE


def read_turns(reader: TimeSlicedReader, downstream: Downstream) -> None:
    """Turns until a whole round found nothing (bounded)."""
    for _ in range(1000):
        if reader.read_turn(downstream).caught_up:
            return
    raise AssertionError("never caught up")


def caught_up_then_written(
    logs: Path,
    watcher: FileWatcher,
    count: int,
    *,
    event_driven: bool,
    clock: SteppingClock | None = None,
) -> tuple[TimeSlicedReader, Downstream]:
    """``count`` files of a line each (``f<NN>``), read to their end; then a line more in each
    (``g<NN>``) that no event names."""
    for index in range(count):
        append(logs / f"{index:02d}.log", *lines(f"f{index:02d}", 1))
    watcher.scan()
    downstream = Downstream()
    tailing = reader(watcher, clock)
    tailing.event_driven = event_driven
    read_turns(tailing, downstream)
    assert len(downstream.chunks) == count
    for index in range(count):
        append(logs / f"{index:02d}.log", *lines(f"g{index:02d}", 1))
    return tailing, downstream


def test_should_read_only_the_files_events_named_once_caught_up(
    logs: Path, watcher: FileWatcher
) -> None:
    tailing, downstream = caught_up_then_written(logs, watcher, 20, event_driven=True)
    named = next(f for f in watcher.files if f.path.endswith("07.log"))

    tailing.look_at(named)
    read_turns(tailing, downstream)
    names = fingerprints(watcher)
    assert [names[c.fingerprint] for c in downstream.chunks[20:]] == ["07.log"]

    watcher.scan()  # a scan looks at every file again: what no event named is read then
    read_turns(tailing, downstream)
    assert sorted(c.data for c in downstream.chunks[21:]) == sorted(
        line + b"\n" for index in range(20) if index != 7 for line in lines(f"g{index:02d}", 1)
    )


def test_should_look_at_every_file_when_events_do_not_name_them(
    logs: Path, watcher: FileWatcher
) -> None:
    tailing, downstream = caught_up_then_written(logs, watcher, 5, event_driven=False)

    read_turns(tailing, downstream)

    assert len(downstream.chunks) == 10


@pytest.mark.parametrize("event_driven", [False, True], ids=["polled", "event-driven"])
def test_should_read_a_line_written_to_any_one_file_at_the_next_wake(
    logs: Path, watcher: FileWatcher, event_driven: bool
) -> None:
    """Each wake-up of a caught-up pipeline (every 0.2 s when it is polled) is a whole round
    of its files, however many there are: a wake that looked at one file only read a line
    written to the sixth of six files a second late, and to the 500th of 500 after 100 s."""
    for index in range(6):
        append(logs / f"{index:02d}.log", *lines(f"f{index:02d}", 1))
    watcher.scan()
    downstream = Downstream()
    tailing = reader(watcher)
    tailing.event_driven = event_driven
    read_turns(tailing, downstream)
    read_turns(tailing, downstream)  # a wake with nothing written
    names = fingerprints(watcher)

    for index in (4, 1, 5):
        append(logs / f"{index:02d}.log", *lines(f"g{index:02d}", 1))
        if event_driven:
            tailing.look_at(next(f for f in watcher.files if f.path.endswith(f"{index:02d}.log")))
        read_turns(tailing, downstream)  # the next wake

        assert names[downstream.chunks[-1].fingerprint] == f"{index:02d}.log"
    assert len(downstream.chunks) == 9


def test_should_look_at_quiet_files_again_every_full_look_interval(
    logs: Path, watcher: FileWatcher
) -> None:
    """What raises no event (a write over NFS) is read at the next full look."""
    clock = SteppingClock()
    tailing, downstream = caught_up_then_written(logs, watcher, 3, event_driven=True, clock=clock)
    tailing.full_look_every = 10.0

    read_turns(tailing, downstream)  # no event named them, no full look due: nothing read
    assert len(downstream.chunks) == 3
    clock.now += 10.0
    read_turns(tailing, downstream)

    assert len(downstream.chunks) == 6
