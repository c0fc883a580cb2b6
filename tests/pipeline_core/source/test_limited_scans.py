"""Scans limited to the folders whose entries changed (what file events name): with containers
coming and going among ten thousand files, each coming or going is a scan of its folder, not of
every file. What a whole scan would decide about the files there, a limited one decides alike;
files elsewhere are left as they were; a source whose globs cannot be matched folder by folder
is scanned whole."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.source import FileState, FileWatcher, TrackedFile
from pipeline_core.testing import append


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    for name in ("a", "b", "c"):
        append(tmp_path / "logs" / name / "app.log", f"{name} first".encode())
    return tmp_path / "logs"


def watch(watchers: list[FileWatcher], pattern: str) -> FileWatcher:
    config = SourceConfig(name="app", paths=[pattern], format=SourceFormat.RAW)
    watcher = FileWatcher([config], "test-host", 1024)
    watchers.append(watcher)
    watcher.scan()
    return watcher


def by_folder(watcher: FileWatcher) -> dict[str, TrackedFile]:
    return {
        os.path.basename(os.path.dirname(f.path)): f
        for f in watcher.files
        if f.state is not FileState.DONE
    }


def test_should_find_a_new_file_in_a_folder_named_and_leave_the_others_alone(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    watcher = watch(watchers, str(logs / "*" / "*.log"))
    checked = by_folder(watcher)["b"].checked_size
    append(logs / "b" / "app.log", b"grown")  # looked at by a whole scan only
    append(logs / "d" / "app.log", b"d first")  # a container comes

    watcher.scan(within=[str(logs / "d")])

    files = by_folder(watcher)
    assert sorted(files) == ["a", "b", "c", "d"]
    assert files["b"].checked_size == checked  # not looked at
    watcher.scan()
    assert files["b"].checked_size > checked


def test_should_tell_a_file_gone_from_a_folder_named_as_a_whole_scan_would(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    watcher = watch(watchers, str(logs / "*" / "*.log"))
    gone = by_folder(watcher)["c"]
    shutil.rmtree(logs / "c")  # a container goes

    watcher.scan(within=[str(logs / "c")])

    assert gone.state is FileState.ROTATED  # read to its end through its descriptor
    assert {f.state for f in watcher.files if f is not gone} == {FileState.LIVE}


def test_should_claim_a_file_moved_in_from_a_folder_not_named_not_read_it_again(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    watcher = watch(watchers, str(logs / "*" / "*.log"))
    moved = by_folder(watcher)["a"]
    (logs / "e").mkdir()
    os.rename(logs / "a" / "app.log", logs / "e" / "app.log")

    watcher.scan(within=[str(logs / "e")])  # the event of "a" not taken yet

    assert len(watcher.files) == 3
    assert moved.path == str(logs / "e" / "app.log")
    assert moved.state is FileState.LIVE


@pytest.mark.parametrize(
    "pattern",
    ["**/*.log", "*/../*/*.log"],
    ids=["double-star", "pattern-in-two-folders"],
)
def test_should_scan_whole_where_a_glob_is_not_one_folder_deep(
    logs: Path, watchers: list[FileWatcher], pattern: str
) -> None:
    watcher = watch(watchers, str(logs / pattern))
    append(logs / "d" / "app.log", b"d first")

    watcher.scan(within=[str(logs / "a")])  # another folder

    assert "d" in by_folder(watcher)


def test_should_scan_whole_when_a_folder_named_is_a_symlink(
    logs: Path, watchers: list[FileWatcher], tmp_path: Path
) -> None:
    watcher = watch(watchers, str(logs / "*" / "*.log"))
    append(tmp_path / "elsewhere" / "app.log", b"linked")
    (logs / "link").symlink_to(tmp_path / "elsewhere")
    append(logs / "d" / "app.log", b"d first")

    watcher.scan(within=[str(logs / "link")])

    files = by_folder(watcher)
    assert "d" in files  # scanned whole
    assert "elsewhere" not in files and "link" not in files  # the source's symlink policy
