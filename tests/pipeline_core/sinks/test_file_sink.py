"""RollingFileSink: raw appends, size rotation at line boundaries, fsync at barriers."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks import Barrier, DeliveryBatch, RollingFileSink, Status
from pipeline_core.testing import FaultPoint, raising_at
from tests.pipeline_core.sinks.support import chunk, line_batch, long_line_chunk, wire

BARRIER = Barrier(checkpoint_id=1, sealed_at=datetime(2026, 11, 22, tzinfo=timezone.utc), ranges=())


def deliver_all(sink: RollingFileSink, *batches: DeliveryBatch) -> None:
    channel = wire([sink], capacity=max(1, len(batches)))
    for batch in batches:
        channel.put(batch)
        assert sink.process() is Status.READY


def files(path: Path) -> list[Path]:
    """``path`` then its backups, newest first."""
    backups = sorted(path.parent.glob(f"{path.name}.*"), key=lambda p: int(p.suffix[1:]))
    return ([path] if path.exists() else []) + backups


def oldest_first(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in reversed(files(path)))


def test_appends_the_chunks_bytes_as_they_are_and_creates_parent_folders(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out" / "nested" / "lines.log"
    sink = RollingFileSink("file", path)
    sink.start()
    batch = DeliveryBatch((chunk(b"a\r\nb \xff\x00\n"), chunk(b"tail without newline")), 0)

    deliver_all(sink, batch, line_batch(b"next"))
    sink.stop()

    assert path.read_bytes() == b"a\r\nb \xff\x00\ntail without newlinenext\n"


def test_appends_to_an_existing_file_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    for line in (b"first", b"second"):
        sink = RollingFileSink("file", path)
        sink.start()
        deliver_all(sink, line_batch(line))
        sink.stop()

    assert path.read_bytes() == b"first\nsecond\n"


def test_rotates_by_size_keeping_backups_and_never_splitting_a_line(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path, max_bytes=100, backups=3)
    lines = [f"line {i:03d} {'x' * (i % 17)}".encode() for i in range(60)]
    batches = [line_batch(*lines[i : i + 7], sequence=i) for i in range(0, 60, 7)]

    deliver_all(sink, *batches)
    sink.stop()

    kept = files(path)
    assert [p.name for p in kept] == ["lines.log", "lines.log.1", "lines.log.2", "lines.log.3"]
    for file in kept:
        content = file.read_bytes()
        assert len(content) <= 100
        assert content.endswith(b"\n")
    everything = b"".join(line + b"\n" for line in lines)
    assert everything.endswith(oldest_first(path))  # the newest lines, contiguous and whole


def test_every_line_is_kept_while_the_backups_suffice(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path, max_bytes=64, backups=50)
    data = b"".join(f"{i:05d}-{'y' * (i % 23)}\n".encode() for i in range(100))

    deliver_all(sink, DeliveryBatch((chunk(data),), 0))
    sink.stop()

    assert oldest_first(path) == data
    assert all(len(p.read_bytes()) <= 64 for p in files(path))


def test_a_line_longer_than_max_bytes_gets_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path, max_bytes=10, backups=5)

    deliver_all(sink, line_batch(b"short", b"a line far longer than ten bytes", b"end"))
    sink.stop()

    assert [p.read_bytes() for p in reversed(files(path))] == [
        b"short\n",
        b"a line far longer than ten bytes\n",
        b"end\n",
    ]


def test_skips_an_over_long_line_and_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path)
    long_line = long_line_chunk(start=3)

    deliver_all(
        sink, DeliveryBatch((chunk(b"ok\n"), long_line, chunk(b"next\n", long_line.end)), 0)
    )
    sink.stop()

    assert path.read_bytes() == b"ok\nnext\n"
    assert sink.skipped_long_lines == 1


def test_zero_backups_deletes_the_full_file(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path, max_bytes=8, backups=0)

    deliver_all(sink, line_batch(b"aaaa", b"bbbb"), line_batch(b"cccc"))
    sink.stop()

    assert files(path) == [path]
    assert path.read_bytes() == b"cccc\n"


def test_fsyncs_the_file_on_barrier_and_the_folder_after_a_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr("pipeline_core.sinks._file.os.fsync", recording_fsync)
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path, max_bytes=12, backups=2)
    sink.start()
    deliver_all(sink, line_batch(b"12345"))
    assert synced == []

    assert sink.on_barrier(BARRIER) is None
    assert len(synced) == 1  # the file only: nothing was rotated

    deliver_all(sink, line_batch(b"67890", b"abcde"))  # the second line rotates the file
    synced.clear()
    assert sink.on_barrier(BARRIER) is None
    assert len(synced) == 2  # the new file and the folder
    synced.clear()
    assert sink.on_barrier(BARRIER) is None
    assert len(synced) == 1
    sink.stop()


def test_a_failed_write_truncates_back_and_raises_event_delivery(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    sink = RollingFileSink("file", path)
    sink.start()
    deliver_all(sink, line_batch(b"kept"))
    batch = DeliveryBatch((chunk(b"written\n"), chunk(b"fails\n")), 1)
    channel = wire([sink], batch)

    disk_full = OSError(28, "No space left on device")
    with (
        raising_at(FaultPoint.FILE_SINK_WRITING, disk_full, nth=2),
        pytest.raises(EventDeliveryException, match="No space left") as raised,
    ):
        sink.process()
    sink.stop()

    assert isinstance(raised.value.__cause__, OSError)
    assert len(channel) == 1
    assert path.read_bytes() == b"kept\n"
