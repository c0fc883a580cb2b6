"""Discovery and the rotation state machine: which files are tracked, and as what."""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from pipeline_core.config import SourceConfig, StartPosition
from pipeline_core.source import (
    FileRecord,
    FileState,
    FileWatcher,
    Signature,
    TrackedFile,
    read_chunk,
    read_signature,
)
from pipeline_core.source._copy_adoption import COPY_WAIT_S
from pipeline_core.testing import append
from pipeline_core.testing import source_of as source
from tests.support.file_names import named

HOST = "test-host"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


def watch(
    watchers: list[FileWatcher],
    *sources: SourceConfig,
    signature_bytes: int = 1024,
    records: tuple[FileRecord, ...] = (),
) -> FileWatcher:
    watcher = FileWatcher(sources, HOST, signature_bytes, records)
    watchers.append(watcher)
    return watcher


def by_name(watcher: FileWatcher) -> dict[str, TrackedFile]:
    return {os.path.basename(f.path): f for f in watcher.files}


# -- discovery ---------------------------------------------------------------------------------


def test_should_track_every_matching_file_from_its_start(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"live")
    append(logs / "access.log.1", b"older")
    append(logs / "error.log", b"not matched")
    watcher = watch(watchers, source(logs))

    watcher.scan()

    files = by_name(watcher)
    assert sorted(files) == ["access.log", "access.log.1"]
    for tracked in files.values():
        assert re.fullmatch(r"[0-9a-f]{16}", tracked.fingerprint)
        assert tracked.state is FileState.LIVE
        assert tracked.read_offset == tracked.sealed_offset == 0
        assert tracked.fd is not None
    assert files["access.log"].fingerprint != files["access.log.1"].fingerprint
    assert watcher.readable() == watcher.files


def test_should_skip_paths_matching_an_exclude_glob(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"live")
    append(logs / "access.log.1", b"older")
    append(logs / "access.log.2.gz", b"compressed")
    watcher = watch(watchers, source(logs, exclude=("*.gz",)))

    watcher.scan()

    assert sorted(by_name(watcher)) == ["access.log", "access.log.1"]


def test_should_track_files_that_share_their_first_bytes_as_distinct_files(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    header = b"#Fields: date time client method uri status\n" * 40  # > the 1024-byte signature
    append(logs / "access.log", header + b"first file's own line\n")
    append(logs / "access.log.1", header + b"second file, other content\n")
    watcher = watch(watchers, source(logs))

    watcher.scan()

    files = by_name(watcher)
    assert sorted(files) == ["access.log", "access.log.1"]
    assert files["access.log"].fingerprint != files["access.log.1"].fingerprint


def test_should_wait_for_the_truncation_of_a_live_files_exact_copy(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    content = b"".join(f"line {i:04d} of the original\n".encode() for i in range(100))
    append(logs / "access.log", content)
    watcher = watch(watchers, source(logs))
    watcher.scan()
    append(logs / "access.log.1", content)  # copytruncate's copy, before the truncation

    watcher.scan()

    assert sorted(by_name(watcher)) == ["access.log"]


def test_should_say_which_file_it_holds_back_as_a_live_files_copy_and_warn_if_it_stays(
    logs: Path, watchers: list[FileWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    """A file at the paths that starts and ends like a live file is taken for a copy being
    made (copytruncate) and not read until the original is truncated: never without a word,
    and with a warning once it has waited longer than a copytruncate takes."""
    content = b"".join(f"line {i:04d} of the original\n".encode() for i in range(100))
    append(logs / "access.log", content)
    now = [0.0]
    watcher = FileWatcher([source(logs)], HOST, 1024, clock=lambda: now[0])
    watchers.append(watcher)
    watcher.scan()
    append(named(logs, b"access.log.bad\xff"), content)

    with caplog.at_level(logging.INFO, logger="pipeline_core.source"):
        watcher.scan()
        now[0] += COPY_WAIT_S
        watcher.scan()
        watcher.scan()

    assert sorted(by_name(watcher)) == ["access.log"]
    said = [r for r in caplog.records if "access.log.bad\\xff" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO, logging.WARNING], caplog.text
    assert str(logs / "access.log") in said[-1].getMessage()


def test_should_warn_at_once_of_a_live_files_copy_that_has_not_changed_for_long(
    logs: Path,
    watchers: list[FileWatcher],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-shot run sees a held-back copy once: one that has not changed for longer than a
    copytruncate takes is warned of at its first sighting."""
    content = b"".join(f"line {i:04d} of the original\n".encode() for i in range(100))
    append(logs / "access.log", content)
    append(named(logs, b"access.log.bad\xff"), content)
    later = time.time() + COPY_WAIT_S
    monkeypatch.setattr(time, "time", lambda: later)
    watcher = watch(watchers, source(logs))

    with caplog.at_level(logging.INFO, logger="pipeline_core.source"):
        watcher.scan()

    assert sorted(by_name(watcher)) == ["access.log"]
    said = [r for r in caplog.records if "access.log.bad\\xff" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING], caplog.text


def test_should_skip_a_file_it_cannot_look_at_for_the_scan_and_track_the_others(
    logs: Path,
    watchers: list[FileWatcher],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unexpected error while looking at one new file is that file's alone: it is named in
    a warning and looked at again at the next scan; the other files are tracked."""
    append(logs / "access.log", b"a healthy line")
    troubled = named(logs, b"access.log.bad\xff")
    append(troubled, b"a line of the troubled file")
    inode = troubled.stat().st_ino

    def failing(fd: int, size: int) -> Signature:
        if os.fstat(fd).st_ino == inode:
            raise ValueError("something no one expected")
        return read_signature(fd, size)

    monkeypatch.setattr("pipeline_core.source._new_files.read_signature", failing)
    watcher = watch(watchers, source(logs))

    with caplog.at_level(logging.WARNING, logger="pipeline_core.source"):
        watcher.scan()

    assert sorted(by_name(watcher)) == ["access.log"]
    (warning,) = [r for r in caplog.records if "access.log.bad\\xff" in r.getMessage()]
    assert "something no one expected" in warning.getMessage()
    monkeypatch.setattr("pipeline_core.source._new_files.read_signature", read_signature)
    watcher.scan()
    assert sorted(by_name(watcher)) == ["access.log", os.fsdecode(b"access.log.bad\xff")]


def test_should_not_track_an_empty_file_until_it_has_data(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    (logs / "access.log").touch()
    watcher = watch(watchers, source(logs))

    watcher.scan()
    assert watcher.files == []

    append(logs / "access.log", b"first line")
    watcher.scan()
    (tracked,) = watcher.files
    assert tracked.read_offset == 0
    assert tracked.signature.size == len(b"first line\n")


def test_should_not_track_folders(logs: Path, watchers: list[FileWatcher]) -> None:
    (logs / "access.log.d").mkdir()
    watcher = watch(watchers, source(logs))

    watcher.scan()

    assert watcher.files == []


def test_should_keep_tracking_a_file_shorter_than_the_signature_as_it_grows(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"a")
    watcher = watch(watchers, source(logs), signature_bytes=64)
    watcher.scan()
    (tracked,) = watcher.files
    fingerprint = tracked.fingerprint

    for size in (10, 30, 100):
        append(logs / "access.log", b"x" * size)
        watcher.scan()

    (again,) = watcher.files
    assert again is tracked
    assert again.fingerprint == fingerprint
    assert again.state is FileState.LIVE
    assert again.signature.size == 64


# -- start position ----------------------------------------------------------------------------


def test_should_start_after_the_last_complete_line_when_starting_at_the_end(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"old one\nold two\npartial", newline=False)
    watcher = watch(watchers, source(logs, start_at=StartPosition.END))

    watcher.scan()

    (tracked,) = watcher.files
    assert tracked.sealed_offset == tracked.read_offset == len(b"old one\nold two\n")
    append(logs / "access.log", b" now whole")
    chunk = read_chunk(tracked, 4096, 4096, final=False)
    assert chunk is not None and chunk.data == b"partial now whole\n"


def test_should_start_at_zero_at_the_end_of_a_file_without_any_newline(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"no newline yet", newline=False)
    watcher = watch(watchers, source(logs, start_at=StartPosition.END))

    watcher.scan()

    assert watcher.files[0].read_offset == 0


def test_should_read_files_appearing_after_the_first_scan_from_their_start(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"old")
    watcher = watch(watchers, source(logs, start_at=StartPosition.END))
    watcher.scan()

    append(logs / "access.log.1", b"new file")
    watcher.scan()

    files = by_name(watcher)
    assert files["access.log"].read_offset == 4
    assert files["access.log.1"].read_offset == 0


# -- rotation ----------------------------------------------------------------------------------


def test_should_follow_a_rename_within_the_paths(logs: Path, watchers: list[FileWatcher]) -> None:
    append(logs / "access.log", b"line")
    watcher = watch(watchers, source(logs))
    watcher.scan()
    (tracked,) = watcher.files

    os.rename(logs / "access.log", logs / "access.log.1")
    watcher.scan()

    (renamed,) = watcher.files
    assert renamed is tracked
    assert renamed.path == str(logs / "access.log.1")
    assert renamed.state is FileState.LIVE


def test_should_mark_a_file_renamed_out_of_the_paths_rotated_and_keep_it_readable(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"line")
    watcher = watch(watchers, source(logs, "access.log"))
    watcher.scan()
    (tracked,) = watcher.files

    os.rename(logs / "access.log", logs / "old-access.log")
    append(logs / "access.log", b"new")
    watcher.scan()

    rotated, fresh = watcher.files
    assert rotated is tracked
    assert rotated.state is FileState.ROTATED
    assert rotated in watcher.readable()
    assert fresh.state is FileState.LIVE
    assert fresh.fingerprint != rotated.fingerprint


def test_should_mark_a_deleted_open_file_rotated(logs: Path, watchers: list[FileWatcher]) -> None:
    append(logs / "access.log", b"line")
    watcher = watch(watchers, source(logs))
    watcher.scan()

    os.unlink(logs / "access.log")
    watcher.scan()

    (tracked,) = watcher.files
    assert tracked.state is FileState.ROTATED
    assert tracked in watcher.readable()


def test_should_detach_a_truncated_file(logs: Path, watchers: list[FileWatcher]) -> None:
    append(logs / "access.log", b"first content")
    watcher = watch(watchers, source(logs))
    watcher.scan()
    (tracked,) = watcher.files

    with open(logs / "access.log", "r+b") as handle:
        handle.truncate(0)
    watcher.scan()

    assert tracked.state is FileState.DETACHED
    assert tracked.fd is None
    assert watcher.readable() == []


def test_should_track_new_content_of_a_truncated_file_as_a_new_file(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"first content")
    watcher = watch(watchers, source(logs))
    watcher.scan()
    (old,) = watcher.files

    with open(logs / "access.log", "r+b") as handle:
        handle.truncate(0)
    watcher.scan()
    append(logs / "access.log", b"other content")
    watcher.scan()
    assert watcher.readable() == [], "held back while a copy may still turn up off the paths"
    assert watcher.settling
    watcher.scan()

    (new,) = watcher.readable()
    assert new is not old
    assert new.fingerprint != old.fingerprint
    assert new.read_offset == 0
    assert old.state is FileState.DETACHED


def test_should_hand_a_detached_files_fingerprint_and_offset_to_its_copy(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"read before the copy")
    watcher = watch(watchers, source(logs))
    watcher.scan()
    (tracked,) = watcher.files
    chunk = read_chunk(tracked, 4096, 4096, final=False)
    assert chunk is not None
    append(logs / "access.log", b"unread at the copy")

    shutil.copyfile(logs / "access.log", logs / "access.log.1")
    with open(logs / "access.log", "r+b") as handle:
        handle.truncate(0)
    watcher.scan()
    watcher.scan()

    copy = by_name(watcher)["access.log.1"]
    assert copy is tracked
    assert copy.read_offset == chunk.end
    rest = read_chunk(copy, 4096, 4096, final=False)
    assert rest is not None and rest.data == b"unread at the copy\n"


def test_should_find_a_file_renamed_out_of_the_paths_after_a_restart(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"sealed", b"unsealed")
    info = os.stat(logs / "access.log")
    first = watch(watchers, source(logs, "access.log"))
    first.scan()
    record = first.files[0].record(7)
    first.close()
    os.rename(logs / "access.log", logs / "access.log-20261122")

    restarted = watch(watchers, source(logs, "access.log"), records=(record,))
    restarted.scan()

    (tracked,) = restarted.files
    assert (tracked.dev, tracked.ino) == (info.st_dev, info.st_ino)
    assert tracked.state is FileState.ROTATED
    assert tracked.path == str(logs / "access.log-20261122")
    assert tracked.read_offset == 7


def test_should_give_up_on_a_remembered_file_that_is_gone(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    append(logs / "access.log", b"line")
    first = watch(watchers, source(logs))
    first.scan()
    record = first.files[0].record(0)
    first.close()
    os.unlink(logs / "access.log")

    restarted = watch(watchers, source(logs), records=(record,))
    restarted.scan()

    (tracked,) = restarted.files
    assert tracked.state is FileState.DONE
    assert restarted.readable() == []
