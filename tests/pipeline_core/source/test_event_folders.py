"""File events name the folders whose entries changed, so a scan can keep to them."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.source import FileChange, FileChanges, InotifyFileEvents, watch_targets

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")


@pytest.fixture
def events() -> Iterator[InotifyFileEvents]:
    source = InotifyFileEvents(threading.Event().set)
    yield source
    source.close()


def taken_until(events: InotifyFileEvents, folders: set[str]) -> FileChanges:
    """What was taken for key ``k``, merged, once its folders include ``folders``."""
    deadline = time.monotonic() + 5
    change = FileChange.NONE
    seen: set[str] = set()
    while time.monotonic() < deadline:
        got = events.take().get("k")
        if got is not None:
            assert got.folders is not None
            change |= got.change
            seen |= got.folders
        if folders <= seen:
            return FileChanges(change, frozenset(), frozenset(seen))
        time.sleep(0.01)
    raise AssertionError(f"folders {folders} not named within 5 s: {seen}")


@pytest.mark.timeout(30)
def test_should_name_the_folders_whose_entries_came_or_went(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    logs = tmp_path / "logs"
    for name in ("a", "b"):
        (logs / name).mkdir(parents=True)
        (logs / name / "app.log").write_bytes(b"x\n")
    assert events.watch("k", watch_targets([str(logs / "*" / "*.log")]))

    (logs / "a" / "new.log").write_bytes(b"y\n")  # an entry of a comes
    (logs / "c").mkdir()  # a folder comes
    shutil.rmtree(logs / "b")  # a folder goes

    changes = taken_until(events, {os.path.normpath(logs / name) for name in ("a", "b", "c")})
    assert changes.change & FileChange.SCAN


@pytest.mark.timeout(30)
def test_should_say_any_folder_when_it_cannot_say_which(
    tmp_path: Path, events: InotifyFileEvents
) -> None:
    (tmp_path / "app.log").write_bytes(b"x\n")
    assert events.watch("k", watch_targets([str(tmp_path / "*.log")]))
    with events._lock:  # what the thread records when events were lost (IN_Q_OVERFLOW)
        events._record("k", (FileChange.READ | FileChange.SCAN).value)
    got = events.take()["k"]
    assert got.change & FileChange.SCAN and got.folders is None
