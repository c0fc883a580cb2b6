"""Truncation and copytruncate, as the real tools do them: every line read once, none twice.

Each case writes numbered lines, reads some of them, changes the file the way a tool or a
person would, writes on, and reads everything: the lines received must be every line that is
still on disk or was read before it went, each once, with distinct event ids.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from pipeline_core.source import (
    FileState,
    FileWatcher,
    Signature,
    TrackedFile,
    read_chunk,
    signature_matches,
)
from pipeline_core.source import _tracked_file as tracked_file
from pipeline_core.source._copy_adoption import COPY_WAIT_S
from pipeline_core.testing import (
    MiB,
    Received,
    UniqueAccessLines,
    read_everything,
    reader_of,
    source_of,
    tail_folder,
    watch,
)

pytestmark = pytest.mark.timeout(60)

LINES = UniqueAccessLines(15)


def block(start: int, count: int) -> bytes:
    return LINES.block(start, count)


def numbered(start: int, count: int) -> list[bytes]:
    return LINES.lines(start, count)


def read_lines(tracked: TrackedFile, into: Received, count: int) -> None:
    """Read about ``count`` lines of ``tracked`` in small chunks (a reader behind a writer)."""
    goal = sum(c.lines for c in into) + count
    while sum(c.lines for c in into) < goal:
        chunk = read_chunk(tracked, 2048, MiB, final=False)
        assert chunk is not None
        into.publish(chunk)


def assert_once(received: Received, expected: list[bytes]) -> None:
    got = received.lines()
    assert sorted(got) == sorted(expected), (
        f"{len(got)} lines for {len(expected)}: "
        f"{len(set(expected) - set(got))} missing, {len(got) - len(set(got))} twice"
    )
    ids = received.event_ids()
    assert len(ids) == len(set(ids))


# -- copytruncate while the writer writes -----------------------------------------------------


@pytest.mark.parametrize("read_between", [0, 60, 100], ids=["none", "some", "all"])
def test_copytruncate_keeps_lines_written_between_the_copy_and_the_truncation_if_read(
    tmp_path: Path, read_between: int, caplog: pytest.LogCaptureFixture
) -> None:
    """logrotate copies the log, the server writes 100 more lines, logrotate truncates. The
    collector read ``read_between`` of those 100 first: they land once, the copy is not read
    again, and the lines it did not read are gone and named in a warning."""
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(block(0, 1000))
    watcher, reader, received = tail_folder(tmp_path)
    (tracked,) = watcher.files

    shutil.copyfile(live, copy)
    with open(live, "ab") as writer:
        writer.write(block(1000, 100))
    if read_between:
        read_lines(tracked, received, read_between)
    watcher.scan()  # the collector looks at the file (inotify wakes it at every write)
    seen = tracked.size()
    caplog.set_level(logging.INFO)
    os.truncate(live, 0)
    with open(live, "ab") as writer:
        writer.write(block(1100, 50))
    read_everything(watcher, reader, received)
    read_everything(watcher, reader, received)

    read_in_window = sum(c.lines for c in received) - 1000 - 50
    assert read_in_window >= read_between
    assert_once(received, numbered(0, 1000 + read_in_window) + numbered(1100, 50))
    assert by_path(watcher)["access.log.1"].fingerprint == tracked.fingerprint
    if read_in_window < 100:
        assert f"bytes [{tracked.read_offset}, {seen}) written after its copy" in caplog.text
    assert watcher.truncated_unread_bytes == seen - tracked.read_offset
    watcher.close()


def test_a_copytruncate_between_the_signature_check_and_the_size_is_not_taken_for_a_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan checks the file's first bytes, then its size: logrotate truncating it between
    the two (and the server writing on) made a file that still "started as it did" look cut
    below its offset, so its copy was read again from its start as a new file (11,800 lines
    twice in a fault run). The cut is believed only if the file still starts as it did."""
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(block(0, 1000))
    watcher, reader, received = tail_folder(tmp_path)
    read_everything(watcher, reader, received)
    shutil.copyfile(live, copy)
    read_everything(watcher, reader, received)  # the copy: held back, the live file's twin
    checked = signature_matches

    def truncated_right_after(fd: int, expected: Signature) -> bool:
        matched = checked(fd, expected)
        if matched and live.stat().st_size > 0:  # the first check of the scan, then the cut
            os.truncate(live, 0)
            with open(live, "ab") as writer:
                writer.write(block(1000, 50))
        return matched

    monkeypatch.setattr(tracked_file, "signature_matches", truncated_right_after)
    watcher.scan()
    monkeypatch.undo()
    for _ in range(3):
        read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 1050))
    assert by_path(watcher)["access.log.1"].state is FileState.KEPT  # read to its end
    watcher.close()


def test_a_copy_read_past_its_end_is_kept_and_never_read_as_new(tmp_path: Path) -> None:
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(block(0, 100))
    watcher, reader, received = tail_folder(tmp_path)
    shutil.copyfile(live, copy)
    with open(live, "ab") as writer:
        writer.write(block(100, 10))
    read_everything(watcher, reader, received)
    os.truncate(live, 0)
    read_everything(watcher, reader, received)
    # logrotate's next run renames the copy along, within the paths.
    os.rename(copy, tmp_path / "access.log.2")
    for _ in range(3):
        read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 110))
    kept = by_path(watcher)["access.log.2"]
    assert kept.state is FileState.KEPT and kept.fd is not None  # claimed at its path, open
    assert kept not in watcher.readable()
    assert kept.record(kept.read_offset).state is FileState.COPIED  # stored as a copy


def test_a_copy_is_read_to_its_end_with_its_unterminated_last_line(tmp_path: Path) -> None:
    """A line half written when logrotate copied the file: the copy is never written again,
    so its last line is read without its newline instead of waiting for it forever."""
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(block(0, 10) + b"half a li")
    watcher, reader, received = tail_folder(tmp_path)
    shutil.copyfile(live, copy)
    os.truncate(live, 0)
    with open(live, "ab") as writer:
        writer.write(b"ne\n" + block(10, 5))
    read_everything(watcher, reader, received)

    assert_once(received, [*numbered(0, 10), b"half a li", b"ne", *numbered(10, 5)])


def test_a_restart_reads_the_rest_of_a_copy_recorded_before_it_was_sealed(
    tmp_path: Path,
) -> None:
    live, copy = tmp_path / "access.log", tmp_path / "access.log.1"
    live.write_bytes(block(0, 100))
    watcher, _reader, _received = tail_folder(tmp_path)
    (tracked,) = watcher.files
    record = tracked.record(len(block(0, 40)))  # sealed up to line 40 only
    watcher.close()
    shutil.copyfile(live, copy)
    os.truncate(live, 0)

    restarted = FileWatcher([source_of(tmp_path)], "test-host", 1024, [record])
    again = Received()
    read_everything(restarted, reader_of(restarted), again)
    restarted.close()

    assert again.lines() == numbered(40, 60)


# -- the truncation matrix --------------------------------------------------------------------


def test_a_file_cut_to_zero_and_written_again_is_read_as_a_new_file(tmp_path: Path) -> None:
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 50))
    watcher, reader, received = tail_folder(tmp_path)
    os.truncate(live, 0)
    read_everything(watcher, reader, received)
    with open(live, "ab") as writer:
        writer.write(block(50, 20))
    read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 70))
    assert len(received.by_file()) == 2


@pytest.mark.parametrize("cut", ["line_boundary", "mid_line"])
@pytest.mark.parametrize("appended_before_scan", [0, 5, 200], ids=["none", "few", "past"])
def test_a_file_cut_below_its_read_offset_with_its_beginning_kept_reads_only_new_bytes(
    tmp_path: Path, cut: str, appended_before_scan: int
) -> None:
    """130 lines, cut to 40 % of the file, then appended to. Only the bytes after the cut are
    new: the kept beginning is not read again, the appended lines once, under a new generation
    (so their event ids cannot repeat the old ones). A line cut in two is read again whole, as
    it stands with what was written after it."""
    live = tmp_path / "access.log"
    content = block(0, 130)
    live.write_bytes(content)
    watcher, reader, received = tail_folder(tmp_path)
    at = int(len(content) * 0.4)
    if cut == "line_boundary":
        at = content.rindex(b"\n", 0, at) + 1
    os.truncate(live, at)
    with open(live, "ab") as writer:
        writer.write(block(1000, appended_before_scan))
    read_everything(watcher, reader, received)
    with open(live, "ab") as writer:
        writer.write(block(2000, 10))
    read_everything(watcher, reader, received)

    appended = numbered(1000, appended_before_scan) + numbered(2000, 10)
    kept_half = content[content.rindex(b"\n", 0, at) + 1 : at]
    appended[0] = kept_half + appended[0]  # a line cut in two: the next write joins its half
    assert_once(received, numbered(0, 130) + appended)
    old, new = sorted(watcher.files, key=lambda f: f.state is FileState.LIVE)
    assert old.state is FileState.DONE and old.read_offset == len(content)
    assert new.state is FileState.LIVE and new.fingerprint != old.fingerprint
    assert (new.dev, new.ino) == (old.dev, old.ino)
    watcher.close()


def test_a_file_cut_and_rewritten_past_its_offset_is_not_read_under_the_old_name(
    tmp_path: Path,
) -> None:
    """Cut to half and written again beyond the read offset before any scan: the reader must
    not hand the rewritten bytes out as the old file's continuation."""
    live = tmp_path / "access.log"
    content = block(0, 100)
    live.write_bytes(content)
    watcher, reader, received = tail_folder(tmp_path)
    half = content.rindex(b"\n", 0, len(content) // 2) + 1
    os.truncate(live, half)
    with open(live, "ab") as writer:
        writer.write(block(500, 100))  # longer than what was cut
    while not reader.read_slice(received.publish).caught_up:  # before the next scan
        pass
    read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 100) + numbered(500, 100))


def test_a_file_cut_and_rewritten_with_other_bytes_is_read_as_new(tmp_path: Path) -> None:
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 100))
    watcher, reader, received = tail_folder(tmp_path)
    with open(live, "r+b") as handle:  # rewritten in place from its start, a little shorter
        handle.truncate(0)
        handle.write(block(300, 60))
    read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 100) + numbered(300, 60))


def test_a_line_half_written_when_the_file_is_cut_is_read_as_two_parts(tmp_path: Path) -> None:
    """The writer was in the middle of a line when the file was emptied: the half before the
    cut is in no file any more and the collector waited for its newline, so only the half
    written after the cut remains, read as a line of its own."""
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 20) + b"first half of a line")
    watcher, reader, received = tail_folder(tmp_path)
    os.truncate(live, 0)
    with open(live, "ab") as writer:
        writer.write(b" and its second half\n" + block(20, 5))
    read_everything(watcher, reader, received)

    assert_once(received, [*numbered(0, 20), b" and its second half", *numbered(20, 5)])


def test_a_reused_inode_after_a_delete_is_read_as_a_new_file(tmp_path: Path) -> None:
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 40))
    watcher, reader, received = tail_folder(tmp_path)
    os.unlink(live)
    read_everything(watcher, reader, received)  # read to its end through its descriptor: DONE
    attempts = 20
    for attempt in range(attempts):  # ext4 hands the freed inode out again, mostly at once
        live.write_bytes(block(100 + attempt * 10, 10))
        # Another process may take the inode first: the last attempt's file stays, a new
        # file with a new inode, which must be read as new all the same.
        if os.stat(live).st_ino == watcher.files[0].ino or attempt == attempts - 1:
            break
        os.unlink(live)
    read_everything(watcher, reader, received)

    assert_once(received, numbered(0, 40) + numbered(100 + attempt * 10, 10))


def test_a_restart_after_a_cut_below_the_sealed_offset_reads_on_from_the_files_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing read is kept across a restart to compare with: the cut is taken to be at the
    file's size, with a warning naming the bytes taken on trust."""
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 100))
    watcher = watch(tmp_path)
    read_everything(watcher, reader_of(watcher), Received())
    record = watcher.files[0].record(len(block(0, 100)))
    watcher.close()
    os.truncate(live, len(block(0, 30)))

    restarted = FileWatcher([source_of(tmp_path)], "test-host", 1024, [record])
    received = Received()
    read_everything(restarted, reader_of(restarted), received)
    with open(live, "ab") as writer:
        writer.write(block(700, 5))
    read_everything(restarted, reader_of(restarted), received)
    restarted.close()

    assert received.lines() == numbered(700, 5)
    assert f"bytes [0, {len(block(0, 30))}) are taken as the ones already read" in caplog.text


def test_a_truncated_file_whose_copy_never_turns_up_is_given_up_with_what_it_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    live = tmp_path / "access.log"
    live.write_bytes(block(0, 10))
    watcher = FileWatcher([source_of(tmp_path)], "test-host", 1024, clock=lambda: now[0])
    reader = reader_of(watcher)
    received = Received()
    read_everything(watcher, reader, received)
    with open(live, "ab") as writer:
        writer.write(block(10, 5))
    (tracked,) = watcher.files
    watcher.scan()
    unread_from, seen = tracked.read_offset, tracked.size()
    os.truncate(live, 0)
    watcher.scan()
    assert tracked.state is FileState.DETACHED
    now[0] += COPY_WAIT_S
    watcher.scan()

    assert watcher.files[0].state is FileState.DONE
    assert f"bytes [{unread_from}, {seen}) it held were not read and are gone" in caplog.text
    watcher.close()


def by_path(watcher: FileWatcher) -> dict[str, TrackedFile]:
    return {os.path.basename(f.path): f for f in watcher.files}


@pytest.mark.parametrize("cut", ["line_boundary", "mid_line"])
def test_a_restart_finds_a_cut_among_the_last_lines_sealed_to_the_line(
    tmp_path: Path, cut: str
) -> None:
    """The metastore keeps the last lines sealed as CRC-32s: a file cut among them while no
    collector ran, then appended to, is read from the cut, to the line."""
    live = tmp_path / "access.log"
    content = block(0, 100)
    live.write_bytes(content)
    watcher = watch(tmp_path)
    read_everything(watcher, reader_of(watcher), Received())
    record = watcher.files[0].record(len(content))
    watcher.close()
    at = len(block(0, 90)) + (40 if cut == "mid_line" else 0)
    os.truncate(live, at)
    with open(live, "ab") as writer:
        writer.write(block(500, 5))

    restarted = FileWatcher([source_of(tmp_path)], "test-host", 1024, [record])
    received = Received()
    read_everything(restarted, reader_of(restarted), received)
    restarted.close()

    appended = numbered(500, 5)
    if cut == "mid_line":
        appended[0] = content[len(block(0, 90)) : at] + appended[0]
    assert received.lines() == appended
