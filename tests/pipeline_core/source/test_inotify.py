"""InotifyFileEvents: events of watched folders, coalesced per key, and their degrade path."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline_core.source import (
    FileChange,
    FileChanges,
    InotifyFileEvents,
    PollingFileEvents,
    WatchTarget,
    _inotify,
    open_file_events,
    watch_targets,
)
from pipeline_core.testing import append_bytes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")

WAIT = 5.0
"""Upper bound of every wait (an event comes within milliseconds)."""


class Notifications:
    """Counts ``on_changes`` calls and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self._condition = threading.Condition()

    def __call__(self) -> None:
        with self._condition:
            self.count += 1
            self._condition.notify_all()

    def wait_beyond(self, count: int, timeout: float = WAIT) -> None:
        with self._condition:
            if not self._condition.wait_for(lambda: self.count > count, timeout):
                raise AssertionError(f"no change reported within {timeout} s")


@pytest.fixture
def notified() -> Notifications:
    return Notifications()


@pytest.fixture
def events(notified: Notifications) -> Iterator[InotifyFileEvents]:
    source = InotifyFileEvents(notified)
    yield source
    source.close()


def take_until(
    events: InotifyFileEvents, done: Callable[[dict[str, FileChanges]], bool]
) -> dict[str, FileChanges]:
    """Take until ``done`` holds for what was taken (all of it, merged per key)."""
    deadline = time.monotonic() + WAIT
    taken: dict[str, FileChanges] = {}
    while True:
        for key, changes in events.take().items():
            before = taken.get(key, FileChanges(FileChange.NONE, frozenset()))
            taken[key] = FileChanges(
                before.change | changes.change, before.written | changes.written
            )
        if done(taken):
            return taken
        if time.monotonic() > deadline:
            raise AssertionError(f"expected changes not reported within {WAIT} s: {taken}")
        time.sleep(0.01)


@pytest.mark.timeout(30)
def test_should_report_a_write_in_a_watched_folder_promptly(
    tmp_path: Path, events: InotifyFileEvents, notified: Notifications
) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"first\n")
    assert events.watch("web", watch_targets([str(log)]))

    started = time.monotonic()
    append_bytes(log)
    notified.wait_beyond(0)

    assert time.monotonic() - started < WAIT
    taken = take_until(events, lambda t: "web" in t)
    assert taken["web"].change & FileChange.READ
    assert taken["web"].written == {str(log)}


@pytest.mark.timeout(30)
def test_should_ask_for_a_scan_when_a_file_is_created_or_renamed(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    events.watch("web", watch_targets([f"{tmp_path}/access.log*"]))

    (tmp_path / "access.log").write_bytes(b"new\n")
    both = FileChange.READ | FileChange.SCAN
    created = take_until(events, lambda t: "web" in t and t["web"].change == both)
    os.rename(tmp_path / "access.log", tmp_path / "access.log.1")
    # Under load the write's closing event can come after the creation's: wait for the scan.
    renamed = take_until(events, lambda t: "web" in t and FileChange.SCAN in t["web"].change)

    assert created["web"].change == both
    assert renamed["web"].change & FileChange.SCAN


@pytest.mark.timeout(30)
def test_should_ignore_files_the_patterns_do_not_name(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    events.watch("web", watch_targets([f"{tmp_path}/access.log"]))
    events.watch("other", watch_targets([f"{tmp_path}/error.log"]))

    append_bytes(tmp_path / "error.log")
    taken = take_until(events, lambda t: "other" in t)

    assert "web" not in taken


@pytest.mark.timeout(30)
def test_should_coalesce_a_thousand_writes_into_few_notifications(
    tmp_path: Path, events: InotifyFileEvents, notified: Notifications
) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b"")
    events.watch("web", watch_targets([str(log)]))
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        for index in range(1000):
            os.write(fd, b"line %d\n" % index)
    finally:
        os.close(fd)
    notified.wait_beyond(0)
    time.sleep(0.2)  # let every event arrive

    # Nothing was taken: one notification however many writes, one record per key.
    assert notified.count == 1
    taken = events.take()
    assert list(taken) == ["web"]
    assert taken["web"].written == {str(log)}
    # After a take, the next write notifies again.
    append_bytes(log)
    notified.wait_beyond(1)


@pytest.mark.timeout(30)
def test_should_ask_for_a_scan_when_a_folder_appears_under_a_double_star(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    events.watch("web", watch_targets([f"{tmp_path}/**/*.log"]))

    (tmp_path / "new-folder").mkdir()
    taken = take_until(events, lambda t: "web" in t)

    assert taken["web"].change & FileChange.SCAN


@pytest.mark.timeout(30)
def test_should_ask_for_a_scan_when_a_watched_folder_goes_and_watch_it_again_later(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    targets = watch_targets([f"{logs}/*.log"])
    events.watch("web", targets)

    shutil.rmtree(logs)
    gone = take_until(events, lambda t: "web" in t and bool(t["web"].change & FileChange.SCAN))
    assert events.watch("web", targets)  # a missing folder is skipped, not an error
    logs.mkdir()
    assert events.watch("web", targets)
    append_bytes(logs / "a.log")
    # The file's creation (a scan) and its write may come in two reads of the events.
    back = take_until(events, lambda t: "web" in t and bool(t["web"].written))

    assert gone["web"].change & FileChange.SCAN
    assert back["web"].written == {str(logs / "a.log")}


@pytest.mark.timeout(30)
def test_should_report_a_files_writes_to_the_keys_watching_it_now(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    """A key that starts or stops watching a folder (or changes its patterns) is heard of at
    the next write to a file there, and only while it watches it."""
    log, text = tmp_path / "app.log", tmp_path / "app.txt"
    log.write_bytes(b"first\n")
    text.write_bytes(b"first\n")

    def written(key: str, path: Path) -> Callable[[dict[str, FileChanges]], bool]:
        return lambda taken: key in taken and str(path) in taken[key].written

    def settled() -> dict[str, FileChanges]:
        """What the writes so far sent that was not taken yet (a write's closing event can
        come late)."""
        time.sleep(0.3)
        return events.take()

    events.watch("web", watch_targets([f"{tmp_path}/*.log"]))
    append_bytes(log)
    assert set(take_until(events, written("web", log))) == {"web"}
    settled()

    events.watch("other", watch_targets([f"{tmp_path}/app.*"]))
    append_bytes(log)
    take_until(events, lambda t: written("web", log)(t) and written("other", log)(t))
    settled()

    events.watch("web", watch_targets([f"{tmp_path}/*.txt"]))
    append_bytes(log)
    append_bytes(text)
    taken = take_until(events, lambda t: written("web", text)(t) and written("other", log)(t))
    late = settled()
    assert (
        str(log)
        not in taken["web"].written
        | late.get("web", FileChanges(FileChange.NONE, frozenset())).written
    )

    events.unwatch("other")
    append_bytes(log)
    append_bytes(text)
    taken = take_until(events, written("web", text))
    assert "other" not in taken
    assert "other" not in settled()


@pytest.mark.timeout(30)
def test_should_report_every_file_of_a_folder_with_more_names_than_its_paths_kept(
    tmp_path: Path, events: InotifyFileEvents, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch keeps the paths of the names it has seen up to a bound, then starts again:
    names past the bound, and names seen before it was emptied, are still reported."""
    monkeypatch.setattr(_inotify, "_PATHS_KEPT", 2)
    events.watch("web", watch_targets([f"{tmp_path}/*.log"]))
    logs = [tmp_path / f"app-{index}.log" for index in range(5)]

    for _ in range(2):  # the second time, each name's path was kept or dropped before
        for log in logs:
            append_bytes(log)
            append_bytes(tmp_path / f"{log.stem}.txt")  # not the key's: kept as None
        taken = take_until(
            events, lambda t: "web" in t and {str(log) for log in logs} <= t["web"].written
        )
        time.sleep(0.3)
        assert not any(path.endswith(".txt") for path in taken["web"].written)
        assert not any(
            path.endswith(".txt")
            for path in events.take().get("web", FileChanges(FileChange.NONE, frozenset())).written
        )


@pytest.mark.timeout(30)
def test_should_report_nothing_for_a_key_no_longer_watched(
    tmp_path: Path, events: InotifyFileEvents, notified: Notifications
) -> None:
    events.watch("web", watch_targets([f"{tmp_path}/*.log"]))
    events.watch("other", watch_targets([f"{tmp_path}/*.txt"]))
    events.unwatch("web")

    append_bytes(tmp_path / "a.log")
    append_bytes(tmp_path / "a.txt")
    taken = take_until(events, lambda t: "other" in t)

    assert "web" not in taken


@pytest.mark.timeout(30)
def test_should_stop_its_thread_promptly_on_close(notified: Notifications) -> None:
    source = InotifyFileEvents(notified, wait_timeout=60)
    started = time.monotonic()

    source.close()
    source.close()  # idempotent

    assert time.monotonic() - started < WAIT
    assert not any(t.name == "sluice-file-events" and t.is_alive() for t in threading.enumerate())


@pytest.mark.timeout(30)
def test_should_give_up_a_key_with_one_warning_when_the_watch_limit_is_reached(
    tmp_path: Path,
    events: InotifyFileEvents,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def no_room(path: object, mask: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(events._inotify, "add_watch", no_room)
    targets = [WatchTarget(str(tmp_path), ("*.log",)), WatchTarget("/", ("*.log",))]

    with caplog.at_level(logging.WARNING):
        covered = events.watch("web", targets)
        covered_again = events.watch("other", targets)

    assert not covered and not covered_again  # the collector polls them
    warnings = [r for r in caplog.records if "max_user_watches" in r.getMessage()]
    assert len(warnings) == 1


def test_should_not_cover_a_key_whose_folder_is_on_a_network_filesystem(
    tmp_path: Path,
    events: InotifyFileEvents,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Writes from other machines to an NFS folder raise no event here: its keys are polled
    (the folder is still watched: this machine's writes wake reading at once)."""
    nfs = tmp_path / "nfs"
    local = tmp_path / "local"
    for folder in (nfs, local, tmp_path / "nfs2"):
        folder.mkdir()
    monkeypatch.setattr(
        _inotify, "remote_filesystem", lambda path: "nfs" if "nfs" in path else None
    )

    with caplog.at_level(logging.WARNING):
        on_nfs = events.watch("web", [WatchTarget(str(nfs), ("*.log",))])
        on_nfs_again = events.watch("web", [WatchTarget(str(nfs), ("*.log",))])
        on_other_nfs = events.watch("api", [WatchTarget(str(tmp_path / "nfs2"), ("*.log",))])
        on_local = events.watch("db", [WatchTarget(str(local), ("*.log",))])

    assert (on_nfs, on_nfs_again, on_other_nfs, on_local) == (False, False, False, True)
    warnings = [r.getMessage() for r in caplog.records if "nfs filesystem" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert str(nfs) in warnings[0]


@pytest.mark.timeout(30)
def test_should_fall_back_to_polling_with_one_warning_when_inotify_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def exhausted(**kwargs: object) -> object:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(_inotify, "INotify", exhausted)

    with caplog.at_level(logging.WARNING):
        source = open_file_events(lambda: None)

    assert isinstance(source, PollingFileEvents)
    assert not source.watch("web", [WatchTarget("/tmp", ("*.log",))])
    assert source.take() == {}
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"inotify is not available ([Errno {errno.EMFILE}] {os.strerror(errno.EMFILE)}): "
        "polling files"
    ]


def test_should_poll_where_there_is_no_inotify(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")

    with caplog.at_level(logging.WARNING):
        source = open_file_events(lambda: None)

    assert isinstance(source, PollingFileEvents)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
