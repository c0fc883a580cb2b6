"""The handoff writer: part files under _inflight, sealed with a manifest into a checkpoint."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.errors import SealError
from pipeline_core.sinks import (
    HANDOFF_SCHEMA,
    MANIFEST_NAME,
    Barrier,
    HandoffWriter,
    ManifestRange,
    checkpoint_dir,
)
from pipeline_core.source import Chunk, count_lines

PIPELINE = "web_access"
HOST = "web-1"
FP_A = "00000000000000aa"
FP_B = "00000000000000bb"
SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC)
SOURCES = [
    SourceConfig(name="access", paths=["/logs/access.log*"], format=SourceFormat.NGINX_COMBINED),
    SourceConfig(
        name="app", paths=["/logs/app.jsonl"], format=SourceFormat.JSON_LINES, time_field="ts"
    ),
]


def lines(prefix: str, count: int) -> bytes:
    """``count`` lines of 10 bytes each (newline included)."""
    return b"".join(f"{prefix}-{i:07d}\n".encode()[-10:] for i in range(count))


def chunk(data: bytes, start: int = 0, fingerprint: str = FP_A, source: str = "access") -> Chunk:
    return Chunk(source, fingerprint, start, data, count_lines(data))


def covering(*chunks: Chunk) -> tuple[ManifestRange, ...]:
    """One range per file, spanning the given chunks of it."""
    by_file: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_file.setdefault(c.fingerprint, []).append(c)
    return tuple(
        ManifestRange(
            fingerprint=fingerprint,
            path=f"/logs/{fingerprint}.log",
            source=group[0].source,
            start=group[0].start,
            end=group[-1].end,
            lines=sum(c.lines for c in group),
        )
        for fingerprint, group in by_file.items()
    )


def writer(staging: Path, max_part_bytes: int = 1 << 20, row_group_bytes: int = 1) -> HandoffWriter:
    return HandoffWriter(
        staging,
        PIPELINE,
        HOST,
        SOURCES,
        max_part_bytes=max_part_bytes,
        row_group_bytes=row_group_bytes,
    )


def inflight(staging: Path) -> Path:
    return staging / PIPELINE / "_inflight" / HOST


def manifest_of(batch: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((batch / MANIFEST_NAME).read_text())
    return loaded


def test_should_seal_appended_lines_into_the_checkpoints_folder(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    chunks = [chunk(lines("a", 3), 0), chunk(lines("a", 2), 30)]
    for c in chunks:
        sink.append(c)

    sealed = sink.seal(Barrier(3, SEALED_AT, covering(*chunks)))

    target = checkpoint_dir(tmp_path, PIPELINE, 3) / HOST
    assert target == tmp_path / PIPELINE / "00000003" / HOST
    assert sealed.staging_path == target
    assert sorted(p.name for p in target.iterdir()) == [MANIFEST_NAME, "part-access-00000.parquet"]
    table = pq.read_table(target / "part-access-00000.parquet")
    assert table.schema.remove_metadata() == HANDOFF_SCHEMA
    assert table.column("start_offset").to_pylist() == [0, 30]
    assert table.column("line_count").to_pylist() == [3, 2]
    assert b"".join(table.column("data").to_pylist()) == b"".join(c.data for c in chunks)
    assert (sealed.checkpoint_id, sealed.line_count, sealed.byte_count) == (3, 5, 50)
    assert not inflight(tmp_path).exists()


def test_should_write_a_manifest_describing_the_batch(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    access = chunk(lines("a", 4), 100, FP_A, "access")
    app = chunk(lines("b", 2), 0, FP_B, "app")
    sink.append(access)
    sink.append(app)
    ranges = covering(access, app)

    sealed = sink.seal(Barrier(7, SEALED_AT, ranges))

    manifest = manifest_of(sealed.staging_path)
    assert manifest == sealed.manifest
    assert manifest["format_version"] == 2
    assert manifest["pipeline"] == PIPELINE
    assert manifest["checkpoint_id"] == 7
    assert manifest["host"] == HOST
    assert manifest["sealed_at"] == "2026-11-22T10:00:00.123456+00:00"
    assert manifest["line_count"] == 6
    assert manifest["byte_count"] == 60
    assert manifest["sources"] == {
        "access": {"format": "nginx_combined", "time_field": None},
        "app": {"format": "json_lines", "time_field": "ts"},
    }
    assert manifest["ranges"] == [
        {
            "fingerprint": FP_A,
            "path": f"/logs/{FP_A}.log",
            "source": "access",
            "start": 100,
            "end": 140,
            "lines": 4,
        },
        {
            "fingerprint": FP_B,
            "path": f"/logs/{FP_B}.log",
            "source": "app",
            "start": 0,
            "end": 20,
            "lines": 2,
        },
    ]
    parts = manifest["parts"]
    assert isinstance(parts, list)
    assert [(p["name"], p["source"], p["rows"]) for p in parts] == [
        ("part-access-00000.parquet", "access", 4),
        ("part-app-00000.parquet", "app", 2),
    ]


def test_should_record_the_size_and_crc32_of_every_part(tmp_path: Path) -> None:
    sink = writer(tmp_path, max_part_bytes=25)
    chunks = [chunk(lines("a", 2), 20 * i) for i in range(3)]
    for c in chunks:
        sink.append(c)

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(*chunks)))

    parts = manifest_of(sealed.staging_path)["parts"]
    assert isinstance(parts, list) and len(parts) == 2
    for part in parts:
        data = (sealed.staging_path / part["name"]).read_bytes()
        assert part["bytes"] == len(data)
        assert part["crc32"] == f"{zlib.crc32(data):08x}"
    assert [p.crc32 for p in sealed.parts] == [p["crc32"] for p in parts]


def test_should_roll_parts_at_max_part_bytes(tmp_path: Path) -> None:
    sink = writer(tmp_path, max_part_bytes=100)
    chunks = [chunk(lines("a", 6), 60 * i) for i in range(5)]  # 60 bytes each
    for c in chunks:
        sink.append(c)

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(*chunks)))

    assert [(p.name, p.rows) for p in sealed.parts] == [
        ("part-access-00000.parquet", 12),
        ("part-access-00001.parquet", 12),
        ("part-access-00002.parquet", 6),
    ]
    offsets = [
        offset
        for part in sealed.parts
        for offset in pq.read_table(sealed.staging_path / part.name)
        .column("start_offset")
        .to_pylist()
    ]
    assert offsets == list(range(0, 300, 60))


def test_should_buffer_lines_until_row_group_bytes(tmp_path: Path) -> None:
    sink = writer(tmp_path, row_group_bytes=1000)
    sink.append(chunk(lines("a", 3)))

    assert not inflight(tmp_path).exists()

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(chunk(lines("a", 3)))))
    assert [p.rows for p in sealed.parts] == [3]


def test_should_seal_an_empty_batch_with_a_manifest_and_no_parts(tmp_path: Path) -> None:
    sealed = writer(tmp_path).seal(Barrier(2, SEALED_AT, ()))

    assert sealed.parts == ()
    assert (sealed.line_count, sealed.byte_count) == (0, 0)
    assert [p.name for p in sealed.staging_path.iterdir()] == [MANIFEST_NAME]
    manifest = manifest_of(sealed.staging_path)
    assert (manifest["parts"], manifest["ranges"], manifest["line_count"]) == ([], [], 0)


def test_should_start_each_batch_with_fresh_parts(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    first = chunk(lines("a", 2), 0)
    second = chunk(lines("b", 3), 20)
    sink.append(first)
    sink.seal(Barrier(1, SEALED_AT, covering(first)))
    sink.append(second)

    sealed = sink.seal(Barrier(2, SEALED_AT, covering(second)))

    assert [(p.name, p.rows) for p in sealed.parts] == [("part-access-00000.parquet", 3)]
    table = pq.read_table(sealed.staging_path / "part-access-00000.parquet")
    assert table.column("start_offset").to_pylist() == [20]
    assert table.column("line_count").to_pylist() == [3]


def test_should_refuse_to_seal_when_lines_do_not_match_the_barriers_lines(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    appended = chunk(lines("a", 3))
    sink.append(appended)
    (claimed,) = covering(appended)
    wrong = ManifestRange(
        claimed.fingerprint, claimed.path, claimed.source, claimed.start, claimed.end, 2
    )

    with pytest.raises(SealError, match=r"parts hold 3 lines .* ranges hold 2"):
        sink.seal(Barrier(4, SEALED_AT, (wrong,)))

    assert not checkpoint_dir(tmp_path, PIPELINE, 4).exists()


def test_should_list_every_file_of_a_batch_sealed_after_a_failed_seal(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    appended = chunk(lines("a", 3))
    sink.append(appended)
    (claimed,) = covering(appended)
    wrong = ManifestRange(
        claimed.fingerprint, claimed.path, claimed.source, claimed.start, claimed.end, 2
    )
    with pytest.raises(SealError):
        sink.seal(Barrier(4, SEALED_AT, (wrong,)))

    sealed = sink.seal(Barrier(5, SEALED_AT, ()))

    parts = manifest_of(sealed.staging_path)["parts"]
    assert isinstance(parts, list)
    listed = {MANIFEST_NAME, *(p["name"] for p in parts)}
    assert {p.name for p in sealed.staging_path.iterdir()} == listed


def test_should_replace_a_stale_folder_left_by_an_earlier_seal(tmp_path: Path) -> None:
    stale = checkpoint_dir(tmp_path, PIPELINE, 5) / HOST
    stale.mkdir(parents=True)
    (stale / "part-access-00007.parquet").write_bytes(b"half written")
    (stale / MANIFEST_NAME).write_text('{"line_count": 999}')
    sink = writer(tmp_path)
    appended = chunk(lines("a", 2))
    sink.append(appended)

    sealed = sink.seal(Barrier(5, SEALED_AT, covering(appended)))

    assert sealed.staging_path == stale
    assert sorted(p.name for p in stale.iterdir()) == [MANIFEST_NAME, "part-access-00000.parquet"]
    assert manifest_of(stale)["line_count"] == 2


def test_should_leave_other_hosts_batches_alone(tmp_path: Path) -> None:
    other = checkpoint_dir(tmp_path, PIPELINE, 5) / "web-2"
    other.mkdir(parents=True)
    (other / MANIFEST_NAME).write_text("{}")

    writer(tmp_path).seal(Barrier(5, SEALED_AT, ()))

    assert (other / MANIFEST_NAME).read_text() == "{}"


def test_should_remove_inflight_parts_on_reset(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    sink.append(chunk(lines("a", 3)))
    assert any(inflight(tmp_path).iterdir())

    sink.reset()

    assert not inflight(tmp_path).exists()
    sealed = sink.seal(Barrier(1, SEALED_AT, ()))
    assert sealed.parts == ()
    assert [p.name for p in sealed.staging_path.iterdir()] == [MANIFEST_NAME]


def test_should_remove_parts_left_by_a_crash_on_reset(tmp_path: Path) -> None:
    leftover = inflight(tmp_path)
    leftover.mkdir(parents=True)
    (leftover / "part-access-00000.parquet").write_bytes(b"from a crashed run")

    writer(tmp_path).reset()

    assert not leftover.exists()
