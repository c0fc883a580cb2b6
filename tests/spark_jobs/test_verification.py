"""Checking part files against their manifests on the driver: line counts and over-long lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline_core.staging_contract import checkpoint_dir
from spark_jobs.checkpoint import read_checkpoint
from spark_jobs.verification import PartRowCountError, verify_parts
from tests.spark_jobs.support import ACCESS, PIPELINE, edit_manifest
from tests.support.staging import Line, LongLine, write_batch


def test_segment_with_other_line_count_than_its_bytes_fails(tmp_path: Path) -> None:
    batch = write_batch(
        tmp_path, PIPELINE, 6, "web-1", "access", "nginx_combined", ACCESS, "a" * 16,
        lines_per_segment=4,
    )  # fmt: skip

    def move_a_line(manifest: dict[str, Any]) -> None:
        first, second = manifest["parts"][0]["segments"][:2]
        first["lines"] -= 1  # the part's rows stay right; the segments' lines do not
        second["lines"] += 1

    edit_manifest(batch, move_a_line)
    second_offset = sum(len(line) + 1 for line in ACCESS[:4])
    checkpoint = read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 6))

    with pytest.raises(PartRowCountError) as raised:
        verify_parts(checkpoint.parts)
    message = str(raised.value)
    assert "part-access-00000.lines: the segment at part_offset 0 holds 4 lines, the " in message
    assert f"part_offset {second_offset} holds 4 lines, the manifest says 5" in message
    assert type(raised.value) is PartRowCountError


def test_an_over_long_lines_prefix_holding_a_newline_fails(tmp_path: Path) -> None:
    lines: list[Line] = [b"before", LongLine(b"prefix\n", 5_000_000), b"after"]
    write_batch(tmp_path, PIPELINE, 8, "web-1", "misc", "raw", lines, "c" * 16)
    checkpoint = read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 8))

    with pytest.raises(PartRowCountError, match=r"the segment at part_offset 7 is an over-long"):
        verify_parts(checkpoint.parts)
