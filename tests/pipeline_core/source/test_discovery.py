"""Discovery: which paths a source's globs match, its symlink policy and its excludes, and a
file that changes between the scan and its opening (another file, a symlink, a FIFO)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.source import FileWatcher, discover, excluded, explain_not_read, find_files
from pipeline_core.source import _watcher as watcher_module
from pipeline_core.testing import Received, append, reader_of

SECRET = b"root:$6$not-a-log-line$:19000:0:99999:7:::"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    append(folder / "access.log", b"a real line")
    return folder


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the logs folder that no source may read."""
    path = tmp_path / "etc" / "shadow"
    append(path, SECRET)
    return path


def source(folder: Path, pattern: str = "access.log*", **keys: Any) -> SourceConfig:
    return SourceConfig(
        name="access", paths=[str(folder / pattern)], format=SourceFormat.RAW, **keys
    )


def found_paths(config: SourceConfig) -> list[str]:
    return sorted(path for path, _size in find_files(config).values())


# -- the symlink policy: nothing is read through a symlink by default -----------------------------


def test_should_not_read_a_symlink_to_a_file_outside_the_globs_folder(
    logs: Path, secret: Path
) -> None:
    (logs / "access.log.evil").symlink_to(secret)

    assert found_paths(source(logs)) == [str(logs / "access.log")]


def test_should_not_read_a_symlink_to_a_file_in_the_same_folder_by_default(logs: Path) -> None:
    append(logs / "other.txt", b"not on the glob")
    (logs / "access.log.link").symlink_to("other.txt")

    assert found_paths(source(logs)) == [str(logs / "access.log")]


def test_should_not_read_through_a_symlinked_folder_below_the_globs_fixed_prefix(
    logs: Path, secret: Path
) -> None:
    append(logs / "app" / "access.log", b"app line")
    (logs / "evil").symlink_to(secret.parent, target_is_directory=True)
    (secret.parent / "access.log").symlink_to("shadow")  # a name the glob matches

    assert found_paths(source(logs, "*/access.log")) == [str(logs / "app" / "access.log")]


def test_should_not_descend_through_a_symlinked_folder_under_a_recursive_glob(
    logs: Path, secret: Path
) -> None:
    append(logs / "a" / "b" / "deep.log", b"deep line")
    append(secret.parent / "leak.log", SECRET)
    (logs / "a" / "out").symlink_to(secret.parent, target_is_directory=True)
    (logs / "a" / "b" / "up").symlink_to("..", target_is_directory=True)

    assert found_paths(source(logs, "**/*.log")) == [
        str(logs / "a" / "b" / "deep.log"),
        str(logs / "access.log"),
    ]


def test_should_name_the_symlinked_folders_a_recursive_glob_did_not_enter(
    logs: Path, secret: Path
) -> None:
    append(logs / "a" / "deep.log", b"deep line")
    (logs / "a" / "out").symlink_to(secret.parent, target_is_directory=True)

    found = discover(source(logs, "**/*.log"))

    assert sorted(path for path, _size in found.files.values()) == [
        str(logs / "a" / "deep.log"),
        str(logs / "access.log"),
    ]
    assert list(found.refused) == [str(logs / "a" / "out")]
    why = explain_not_read(str(logs / "a" / "out"), found.refused[str(logs / "a" / "out")])
    assert why.startswith(f"a symlinked folder (to {secret.parent})")
    assert "follow_symlinks: true" in why


def test_should_read_through_a_symlink_in_the_globs_fixed_prefix(
    tmp_path: Path, logs: Path
) -> None:
    (tmp_path / "current").symlink_to(logs, target_is_directory=True)

    assert found_paths(source(tmp_path / "current")) == [str(tmp_path / "current" / "access.log")]


def test_should_follow_a_symlink_whose_target_is_under_the_globs_prefix_when_asked(
    logs: Path,
) -> None:
    target = logs / "pods" / "web" / "0.log"
    append(target, b"container line")
    (logs / "access.log.web").symlink_to(target)

    found = find_files(source(logs, follow_symlinks=True))

    info = target.stat()
    assert found[(info.st_dev, info.st_ino)] == (str(logs / "access.log.web"), info.st_size)
    assert sorted(path for path, _ in found.values()) == [
        str(logs / "access.log"),
        str(logs / "access.log.web"),
    ]


def test_should_not_follow_a_symlink_out_of_the_globs_prefix_to_a_folder_not_allowed(
    logs: Path, secret: Path
) -> None:
    (logs / "access.log.evil").symlink_to(secret)
    (logs / "sub").symlink_to(secret.parent, target_is_directory=True)

    assert found_paths(source(logs, follow_symlinks=True)) == [str(logs / "access.log")]
    assert found_paths(source(logs, "**/*", follow_symlinks=True)) == [str(logs / "access.log")]


def test_should_follow_a_symlink_into_a_folder_of_symlink_targets(
    tmp_path: Path, logs: Path
) -> None:
    pods = tmp_path / "pods"
    append(pods / "web_1" / "nginx" / "0.log", b"container line")
    containers = tmp_path / "containers"
    containers.mkdir()
    (containers / "web_1_nginx.log").symlink_to(pods / "web_1" / "nginx" / "0.log")
    (containers / "evil.log").symlink_to(logs / "access.log")  # a real file, not allowed

    config = source(containers, "*.log", follow_symlinks=True, symlink_targets=[str(pods)])

    assert found_paths(config) == [str(containers / "web_1_nginx.log")]
    assert found_paths(source(containers, "*.log", follow_symlinks=True)) == []


def test_should_warn_once_per_path_not_read(
    logs: Path, secret: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (logs / "access.log.evil").symlink_to(secret)
    config = source(logs)

    with caplog.at_level(logging.WARNING, logger="pipeline_core.source"):
        for _ in range(3):
            find_files(config)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(logs / "access.log.evil") in warnings[0] and "symlink" in warnings[0]


def test_should_find_a_file_whose_name_is_not_utf8(logs: Path) -> None:
    with open(os.path.join(os.fsencode(logs), b"access.log.bad\xff"), "wb") as handle:
        handle.write(b"a line\n")

    assert found_paths(source(logs)) == [
        str(logs / "access.log"),
        os.fsdecode(os.path.join(os.fsencode(logs), b"access.log.bad\xff")),
    ]


# -- excludes ----------------------------------------------------------------------------------


def test_should_match_an_exclude_without_a_separator_against_the_file_name(logs: Path) -> None:
    append(logs / "access.log.1", b"older")
    append(logs / "access.log.2.gz", b"compressed")
    append(logs / "access.log.3.gz", b"compressed")

    config = source(logs, exclude=["access.log.[2-9]*"])

    assert found_paths(config) == [str(logs / "access.log"), str(logs / "access.log.1")]


def test_should_match_an_exclude_with_a_separator_against_the_whole_path(logs: Path) -> None:
    append(logs / "old" / "access.log", b"old")
    append(logs / "new" / "access.log", b"new")

    config = source(logs, "*/access.log", exclude=[str(logs / "old" / "*")])

    assert found_paths(config) == [str(logs / "new" / "access.log")]


# -- what is opened is what the scan saw ------------------------------------------------------


def swap_after_discovery(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """The watcher's discovery finds what is there, then ``swap`` changes it before the
    watcher opens anything."""

    def find_then_swap(config: SourceConfig) -> Any:
        found = find_files(config)
        swap()
        return found

    monkeypatch.setattr(watcher_module, "find_files", find_then_swap)


def run_with_timeout(action: Callable[[], None], fifo: Path | None, seconds: float = 10) -> bool:
    """Whether ``action`` ended within ``seconds``; a reader stuck on ``fifo`` is let go."""
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    thread.join(seconds)
    stuck = thread.is_alive()
    if stuck and fifo is not None:
        with contextlib.suppress(OSError):  # a writer ends the blocked open for reading
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(seconds)
    return not stuck


@pytest.mark.parametrize("replacement", ["another file", "a symlink to a secret"])
def test_should_not_read_a_file_swapped_in_between_the_scan_and_its_opening(
    logs: Path,
    secret: Path,
    watchers: list[FileWatcher],
    monkeypatch: pytest.MonkeyPatch,
    replacement: str,
) -> None:
    target = logs / "access.log"

    def swap() -> None:
        staged = logs / ".swap"
        if replacement == "another file":
            staged.write_bytes(SECRET + b"\n")
        else:
            staged.symlink_to(secret)
        os.replace(staged, target)

    swap_after_discovery(monkeypatch, swap)
    watcher = FileWatcher([source(logs)], "test-host", 1024)
    watchers.append(watcher)
    reader, received = reader_of(watcher), Received()

    watcher.scan()
    while not reader.read_slice(received.publish).caught_up:
        pass

    assert received.lines() == []
    assert [f for f in watcher.files if f.fd is not None] == []


@pytest.mark.timeout(60)
def test_should_not_block_on_a_fifo_swapped_in_between_the_scan_and_its_opening(
    logs: Path, watchers: list[FileWatcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = logs / "access.log"

    def swap() -> None:
        fifo.unlink()
        os.mkfifo(fifo)

    swap_after_discovery(monkeypatch, swap)
    watcher = FileWatcher([source(logs)], "test-host", 1024)
    watchers.append(watcher)

    assert run_with_timeout(watcher.scan, fifo), "the scan blocked opening a FIFO"
    assert [f for f in watcher.files if f.fd is not None] == []


@pytest.mark.timeout(60)
def test_should_pass_over_a_fifo_planted_at_a_matched_name(
    logs: Path, watchers: list[FileWatcher]
) -> None:
    fifo = logs / "access.log.fifo"
    os.mkfifo(fifo)
    watcher = FileWatcher([source(logs)], "test-host", 1024)
    watchers.append(watcher)
    reader, received = reader_of(watcher), Received()

    def scan_and_read() -> None:
        watcher.scan()
        while not reader.read_slice(received.publish).caught_up:
            pass

    assert run_with_timeout(scan_and_read, fifo), "discovery or reading blocked on a FIFO"
    assert received.lines() == [b"a real line"]
    assert [os.path.basename(f.path) for f in watcher.files] == ["access.log"]


def test_should_tell_excluded_paths_as_discovery_does_for_every_caller(logs: Path) -> None:
    """One rule for the scan and for the file events of a file being written: a pattern without
    a separator names files, one with a separator whole paths."""
    config = source(logs, exclude=["*.gz", "access.log.?", str(logs / "old" / "*")])

    assert excluded(config, str(logs / "access.log.2.gz"))
    assert excluded(config, str(logs / "access.log.1"))
    assert excluded(config, str(logs / "old" / "access.log"))
    assert not excluded(config, str(logs / "access.log"))
    assert not excluded(config, str(logs / "access.log.10"))
