"""``sluice sample-logs``, in-process."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pipeline_core.cli import main


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_should_write_sample_lines_and_rotate_by_rename_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"

    code = main(["sample-logs", str(folder), "--lines", "200", "--malformed", "5", "--seed", "1"])

    assert code == 0
    out = capsys.readouterr().out
    assert "wrote 200 lines (5 malformed)" in out
    assert "rotated rename to access.log.1" in out
    assert line_count(folder / "access.log.1") == 100
    assert line_count(folder / "access.log") == 100


def test_should_alternate_rename_and_copytruncate_rotations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    args = ["sample-logs", str(folder), "--lines", "40", "--malformed", "0"]

    main(args)
    live_before = os.stat(folder / "access.log").st_ino
    main(args)
    live_after_copy = os.stat(folder / "access.log").st_ino
    main(args)

    out = capsys.readouterr().out
    assert re.findall(r"rotated (\S+) to (\S+)", out) == [
        ("rename", "access.log.1"),
        ("copytruncate", "access.log.2"),
        ("rename", "access.log.3"),
    ]
    assert live_after_copy == live_before  # copytruncate keeps the live file's inode
    assert os.stat(folder / "access.log.3").st_ino == live_before  # rename moves it
    total = sum(line_count(p) for p in folder.glob("access.log*"))
    assert total == 3 * 40
