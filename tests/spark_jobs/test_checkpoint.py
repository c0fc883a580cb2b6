"""Reading a checkpoint's manifests: malformed, foreign and missing ones fail naming the part."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.staging_contract import ManifestError, SegmentKind, checkpoint_dir
from spark_jobs.checkpoint import read_checkpoint
from tests.spark_jobs.support import ACCESS, PIPELINE, edit_manifest
from tests.support.staging import write_batch


def test_manifest_naming_a_missing_part_fails(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    batch = write_batch(staging, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16)
    (batch / "part-access-00000.lines").unlink()

    with pytest.raises(ManifestError, match=r"missing: .*part-access-00000\.lines"):
        read_checkpoint(checkpoint_dir(staging, PIPELINE, 7))


@pytest.mark.parametrize("version", [2, 7, "4"])
def test_manifest_of_another_format_fails(tmp_path: Path, version: object) -> None:
    batch = write_batch(
        tmp_path, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16
    )
    edit_manifest(batch, lambda manifest: manifest.update(format_version=version))

    message = rf"_manifest\.json: unsupported format_version {version!r}"
    with pytest.raises(ManifestError, match=message):
        read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 7))


def _as_format_3(manifest: dict[str, Any]) -> None:
    """A batch as the collector sealed it before format 4: segments without ``kind``."""
    manifest["format_version"] = 3
    for part in manifest["parts"]:
        for segment in part["segments"]:
            del segment["kind"]


def test_manifest_of_format_3_is_read_as_lines_segments(tmp_path: Path) -> None:
    batch = write_batch(
        tmp_path, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16,
        lines_per_segment=4,
    )  # fmt: skip
    expected = read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 7))
    edit_manifest(batch, _as_format_3)

    assert read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 7)) == expected
    assert {s.kind for p in expected.parts for s in p.entry.segments} == {SegmentKind.LINES}

    edit_manifest(batch, lambda m: m["parts"][0]["segments"][0].update(kind="lines"))
    with pytest.raises(ManifestError, match=r"segment 0: kind is not part of format_version 3"):
        read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 7))


def _segments(manifest: dict[str, Any]) -> list[Any]:
    """The first part's segments."""
    segments: list[Any] = manifest["parts"][0]["segments"]
    return segments


def _append_segment(manifest: dict[str, Any], length: int, lines: int) -> None:
    """Add a segment after the first part's last one."""
    part = manifest["parts"][0]
    segment = {
        "file_fingerprint": "a" * 16,
        "start_offset": 0,
        "part_offset": part["bytes"],
        "kind": "lines",
    }
    part["segments"].append({**segment, "length": length, "lines": lines})


MALFORMED_SEGMENTS: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "no segments": (lambda m: m["parts"][0].pop("segments"), r"no 'segments'"),
    "segments not a list": (
        lambda m: m["parts"][0].update(segments={}),
        r"segments is not a list",
    ),
    "segment not an object": (lambda m: _segments(m).append(7), r"segment 3: not an object"),
    "missing field": (lambda m: _segments(m)[1].pop("lines"), r"segment 1: no 'lines'"),
    "first not at 0": (
        lambda m: _segments(m)[0].update(part_offset=1),
        r"segment 0: part_offset 1 is not where the last segment ended \(0\)",
    ),
    "gap": (
        lambda m: _segments(m)[2].update(part_offset=_segments(m)[2]["part_offset"] + 1),
        r"segment 2: part_offset \d+ is not where the last segment ended",
    ),
    "lengths": (
        lambda m: m["parts"][0].update(bytes=m["parts"][0]["bytes"] + 1),
        r"segments hold other than its \d+ bytes",
    ),
    "lines": (
        lambda m: _segments(m)[0].update(lines=2),
        r"segments hold other than its 9 rows",
    ),
    "negative": (lambda m: _segments(m)[1].update(start_offset=-1), r"start_offset -1 is not"),
    "float": (lambda m: _segments(m)[1].update(length=1.5), r"length 1\.5 is not"),
    "text": (lambda m: _segments(m)[1].update(lines="3"), r"lines '3' is not"),
    "bool": (lambda m: _segments(m)[1].update(part_offset=True), r"part_offset True is not"),
    "fingerprint": (
        lambda m: _segments(m)[1].update(file_fingerprint=7),
        r"segment 1: file_fingerprint 7 is not a string",
    ),
    "more lines than bytes": (
        lambda m: _append_segment(m, length=1, lines=2),
        r"segment 3: 1 bytes cannot hold 2 lines",
    ),
    "bytes without lines": (
        lambda m: _append_segment(m, length=1, lines=0),
        r"segment 3: 1 bytes cannot hold 0 lines",
    ),
    "crc32": (lambda m: m["parts"][0].update(crc32="xyz"), r"crc32 'xyz' is not 8 hex digits"),
    "no kind": (lambda m: _segments(m)[1].pop("kind"), r"segment 1: no 'kind'"),
    "unknown kind": (
        lambda m: _segments(m)[1].update(kind="huge"),
        r"segment 1: kind 'huge' is not one of lines, long_line",
    ),
    "long line of several lines": (
        lambda m: _segments(m)[1].update(kind="long_line", line_bytes=10**6),
        r"segment 1: a long_line segment holds 1 line, not 4",
    ),
    "long line without its length": (
        lambda m: _segments(m)[2].update(kind="long_line"),
        r"segment 2: no 'line_bytes'",
    ),
    "long line no longer than its prefix": (
        lambda m: _segments(m)[2].update(kind="long_line", line_bytes=_segments(m)[2]["length"]),
        r"segment 2: an over-long line of \d+ bytes cannot have a prefix of \d+",
    ),
    "line_bytes of lines": (
        lambda m: _segments(m)[1].update(line_bytes=10**6),
        r"segment 1: line_bytes belongs to long_line segments only",
    ),
    "rows": (lambda m: m["parts"][0].update(rows="9"), r"rows '9' is not"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_SEGMENTS))
def test_manifest_with_malformed_segments_fails_naming_the_part(tmp_path: Path, case: str) -> None:
    edit, message = MALFORMED_SEGMENTS[case]
    batch = write_batch(
        tmp_path, PIPELINE, 7, "web-1", "access", "nginx_combined", ACCESS, "a" * 16,
        lines_per_segment=4,
    )  # fmt: skip
    manifest_path = edit_manifest(batch, edit)

    with pytest.raises(ManifestError) as raised:
        read_checkpoint(checkpoint_dir(tmp_path, PIPELINE, 7))
    assert str(raised.value).startswith(f"{manifest_path}: part part-access-00000.lines")
    assert raised.match(message)
