"""remote_filesystem: the filesystem of a folder, from the kernel (``statfs``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pipeline_core.source._filesystems import (
    REMOTE_FILESYSTEMS,
    filesystem_magic,
    remote_filesystem,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="statfs: Linux")

PROC_SUPER_MAGIC = 0x9FA0


def test_should_read_the_magic_number_of_the_filesystem_a_path_is_on(tmp_path: Path) -> None:
    assert filesystem_magic("/proc") == PROC_SUPER_MAGIC
    assert filesystem_magic(str(tmp_path)) not in (None, PROC_SUPER_MAGIC)


def test_should_tell_local_folders_from_network_ones(tmp_path: Path) -> None:
    assert remote_filesystem(str(tmp_path)) is None
    assert remote_filesystem("/proc") is None
    assert REMOTE_FILESYSTEMS[0x6969] == "nfs"


def test_should_know_nothing_of_a_path_that_is_not_there(tmp_path: Path) -> None:
    assert filesystem_magic(str(tmp_path / "gone")) is None
    assert remote_filesystem(str(tmp_path / "gone")) is None
