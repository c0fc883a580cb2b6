"""ConfigSource's look at a folder of configs: a file is read again only when its status says
it may have changed, and a rewrite that puts the modification time back is still seen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipeline_core.collector import ConfigChange, ConfigSource
from pipeline_core.collector import _config_watch as config_watch
from tests.support.pipelines import write_config


def age(path: Path, seconds: float) -> None:
    """Set ``path``'s modification time ``seconds`` into the past."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_file_whose_status_is_old_and_unchanged_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "pipelines"
    for name in ("one", "two"):
        age(write_config(folder, f"sqlite:///{tmp_path / 'm.db'}", name=name), 60)
    source = ConfigSource(folder)
    assert sorted(c.name for c in source.load()) == ["one", "two"]
    read: list[Path] = []
    real = Path.read_bytes

    def counted(path: Path) -> bytes:
        read.append(path)
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", counted)

    assert source.changes() == []
    assert source.changes() == []
    assert read == []
    age(folder / "two.yaml", 60 - 1)  # its status changed: read, and found the same

    assert source.changes() == []
    assert read == [folder / "two.yaml"]


def test_a_rewrite_of_the_same_size_whose_modification_time_is_put_back_is_seen(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pipelines"
    url = f"sqlite:///{tmp_path / 'm.db'}"
    path = write_config(folder, url, name="one", collector={"read_chunk_bytes": 8192})
    source = ConfigSource(folder)
    assert [c.name for c in source.load()] == ["one"]
    before = path.stat()

    write_config(folder, url, name="one", collector={"read_chunk_bytes": 4096})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert time.time() - path.stat().st_mtime < config_watch.RACY_SECONDS

    (event,) = source.changes()
    assert (event.change, event.name) == (ConfigChange.CHANGED, "one")
    assert event.config is not None
    assert event.config.collector.read_chunk_bytes == 4096
