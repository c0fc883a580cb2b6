"""The handoff writer: part files under _inflight, sealed with a manifest into a checkpoint."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import zlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipeline_core.config import SourceConfig, SourceFormat
from pipeline_core.errors import SealError, StagingFullError
from pipeline_core.sinks import Barrier, HandoffWriter, _handoff
from pipeline_core.source import Chunk, LongLine, count_lines
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    EventCut,
    EventRuns,
    EventSpan,
    ManifestRange,
    Segment,
    SegmentKind,
    checkpoint_dir,
    write_manifest,
)

PIPELINE = "web_access"
HOST = "web-1"
FP_A = "00000000000000aa"
FP_B = "00000000000000bb"
SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
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


def writer(staging: Path, max_part_bytes: int = 1 << 20) -> HandoffWriter:
    return HandoffWriter(staging, PIPELINE, HOST, SOURCES, max_part_bytes=max_part_bytes)


def inflight(staging: Path) -> Path:
    return staging / PIPELINE / "_inflight" / HOST


@contextlib.contextmanager
def disk_full_after(monkeypatch: pytest.MonkeyPatch, writes: int) -> Iterator[None]:
    """``os.write`` succeeds ``writes`` times, then fails as on a full disk (ENOSPC), until
    the block ends."""
    real_write = os.write
    left = [writes]

    def write_until_full(fd: int, data: bytes) -> int:
        if not left[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= 1
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write_until_full)
    try:
        yield
    finally:
        monkeypatch.setattr(os, "write", real_write)


def manifest_of(batch: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((batch / MANIFEST_NAME).read_text())
    return loaded


def test_should_seal_appended_lines_into_the_checkpoints_folder(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    chunks = [chunk(lines("a", 3), 0), chunk(lines("a", 2), 30)]
    for c in chunks:
        sink.append([c])

    sealed = sink.seal(Barrier(3, SEALED_AT, covering(*chunks)))

    target = checkpoint_dir(tmp_path, PIPELINE, 3) / HOST
    assert target == tmp_path / PIPELINE / "00000003" / HOST
    assert sealed.staging_path == target
    assert sorted(p.name for p in target.iterdir()) == [MANIFEST_NAME, "part-access-00000.lines"]
    assert (target / "part-access-00000.lines").read_bytes() == b"".join(c.data for c in chunks)
    (part,) = sealed.parts
    assert part.segments == (Segment(FP_A, 0, 0, 50, 5),)
    assert (sealed.checkpoint_id, sealed.line_count, sealed.byte_count) == (3, 5, 50)
    assert not inflight(tmp_path).exists()


def test_should_write_a_manifest_describing_the_batch(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    access = chunk(lines("a", 4), 100, FP_A, "access")
    app = chunk(lines("b", 2), 0, FP_B, "app")
    sink.append([access, app])  # one delivery, two sources: two parts
    ranges = covering(access, app)

    sealed = sink.seal(Barrier(7, SEALED_AT, ranges))

    manifest = manifest_of(sealed.staging_path)
    assert sealed.event_count == 6
    assert manifest["format_version"] == 4
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
    assert [(p["name"], p["source"], p["rows"], p["bytes"]) for p in parts] == [
        ("part-access-00000.lines", "access", 4, 40),
        ("part-app-00000.lines", "app", 2, 20),
    ]
    assert [p["segments"] for p in parts] == [
        [
            {
                "file_fingerprint": FP_A,
                "start_offset": 100,
                "part_offset": 0,
                "length": 40,
                "lines": 4,
                "kind": "lines",
            }
        ],
        [
            {
                "file_fingerprint": FP_B,
                "start_offset": 0,
                "part_offset": 0,
                "length": 20,
                "lines": 2,
                "kind": "lines",
            }
        ],
    ]


def test_should_index_an_over_long_line_as_a_segment_of_its_own(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    before = chunk(lines("a", 2), 0)
    prefix = b"L" * 1024
    long_line = Chunk("access", FP_A, 20, prefix, 1, long_line=LongLine(5_000_000, True))
    after = chunk(lines("b", 3), long_line.end)
    sink.append([before, long_line, after])

    sealed = sink.seal(Barrier(4, SEALED_AT, covering(before, long_line, after)))

    (part,) = sealed.parts
    assert part.segments == (
        Segment(FP_A, 0, 0, 20, 2),
        Segment(FP_A, 20, 20, 1024, 1, SegmentKind.LONG_LINE, 5_000_000),
        Segment(FP_A, 5_000_021, 1044, 30, 3),
    )
    data = (sealed.staging_path / part.name).read_bytes()
    assert data == lines("a", 2) + prefix + lines("b", 3)
    assert (part.rows, part.bytes) == (6, len(data))
    assert (sealed.line_count, sealed.byte_count) == (6, 20 + 5_000_001 + 30)
    parts = manifest_of(sealed.staging_path)["parts"]
    assert isinstance(parts, list)
    assert parts[0]["segments"][1] == {
        "file_fingerprint": FP_A,
        "start_offset": 20,
        "part_offset": 20,
        "length": 1024,
        "lines": 1,
        "kind": "long_line",
        "line_bytes": 5_000_000,
    }
    assert [s["kind"] for s in parts[0]["segments"]] == ["lines", "long_line", "lines"]


def test_should_record_the_size_and_crc32_of_every_part(tmp_path: Path) -> None:
    sink = writer(tmp_path, max_part_bytes=25)
    chunks = [chunk(lines("a", 2), 20 * i) for i in range(3)]
    for c in chunks:
        sink.append([c])

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
        sink.append([c])

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(*chunks)))

    assert [(p.name, p.rows, p.segments) for p in sealed.parts] == [
        ("part-access-00000.lines", 12, (Segment(FP_A, 0, 0, 120, 12),)),
        ("part-access-00001.lines", 12, (Segment(FP_A, 120, 0, 120, 12),)),
        ("part-access-00002.lines", 6, (Segment(FP_A, 240, 0, 60, 6),)),
    ]
    staged = b"".join((sealed.staging_path / p.name).read_bytes() for p in sealed.parts)
    assert staged == b"".join(c.data for c in chunks)


def test_should_roll_parts_at_max_part_bytes_within_one_append(tmp_path: Path) -> None:
    sink = writer(tmp_path, max_part_bytes=100)
    chunks = [chunk(lines("a", 6), 60 * i) for i in range(5)]  # 60 bytes each

    sink.append(chunks)  # what a sink gets when it drains a full ring at once
    sealed = sink.seal(Barrier(1, SEALED_AT, covering(*chunks)))

    assert [(p.rows, p.bytes) for p in sealed.parts] == [(12, 120), (12, 120), (6, 60)]
    staged = b"".join((sealed.staging_path / p.name).read_bytes() for p in sealed.parts)
    assert staged == b"".join(c.data for c in chunks)


def test_should_take_back_every_part_of_an_append_that_fails_past_a_full_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = writer(tmp_path, max_part_bytes=100)
    first = chunk(lines("a", 3), 0)
    sink.append([first])
    chunks = [chunk(lines("a", 6), 30 + 60 * i) for i in range(3)]
    with disk_full_after(monkeypatch, writes=2), pytest.raises(OSError):
        sink.append(chunks)  # fills part 0, starts part 1, then the disk is full
    assert sorted(p.name for p in inflight(tmp_path).iterdir()) == ["part-access-00000.lines"]
    sink.append(chunks)  # the same chunks again, once there is room
    sealed = sink.seal(Barrier(1, SEALED_AT, covering(first, *chunks)))

    assert [(p.name, p.rows) for p in sealed.parts] == [
        ("part-access-00000.lines", 15),
        ("part-access-00001.lines", 6),
    ]
    staged = b"".join((sealed.staging_path / p.name).read_bytes() for p in sealed.parts)
    assert staged == first.data + b"".join(c.data for c in chunks)


def test_should_merge_consecutive_chunks_of_a_file_into_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipeline_core.sinks._handoff_part.SEGMENT_BYTES", 50)
    sink = writer(tmp_path)
    chunks = [
        chunk(lines("a", 2), 0),  # 0: starts a segment
        chunk(lines("a", 2), 20),  # 1: follows 0
        chunk(lines("b", 1), 0, FP_B),  # 2: another file
        chunk(lines("a", 1), 40),  # 3: a follows b, so a new segment
        chunk(lines("a", 1) + b"cut", 50),  # 4: follows 3, ends in a cut line
        chunk(lines("a", 1), 63),  # 5: never joined to a cut line
        chunk(lines("a", 1), 80),  # 6: not consecutive in its file
        chunk(lines("a", 5), 90),  # 7: would pass SEGMENT_BYTES with 6
    ]
    sink.append(chunks)

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(*chunks)))

    (part,) = sealed.parts
    assert part.segments == (
        Segment(FP_A, 0, 0, 40, 4),
        Segment(FP_B, 0, 40, 10, 1),
        Segment(FP_A, 40, 50, 23, 3),
        Segment(FP_A, 63, 73, 10, 1),
        Segment(FP_A, 80, 83, 10, 1),
        Segment(FP_A, 90, 93, 50, 5),
    )
    data = (sealed.staging_path / part.name).read_bytes()
    assert data == b"".join(c.data for c in chunks)
    for segment in part.segments:
        assert segment.lines == count_lines(
            data[segment.part_offset : segment.part_offset + segment.length]
        )


def test_should_carry_multiline_events_into_segments_merged_across_chunks(
    tmp_path: Path,
) -> None:
    sink = writer(tmp_path)
    first = Chunk("access", FP_A, 0, lines("a", 4), 4, events=EventRuns.of([EventSpan(1, 2)]))
    second = Chunk(
        "access",
        FP_A,
        40,
        lines("a", 3),
        3,
        events=EventRuns.of([EventSpan(0, 2, EventCut.HEADLESS)]),
    )
    sink.append([first, second])

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(first, second)))

    (part,) = sealed.parts
    assert part.segments == (
        Segment(
            FP_A,
            0,
            0,
            70,
            7,
            events=EventRuns.of([EventSpan(1, 2), EventSpan(4, 2, EventCut.HEADLESS)]),
        ),
    )
    assert part.segments[0].event_count == 5
    assert manifest_of(sealed.staging_path)["format_version"] == 5
    assert sealed.event_count == 5


def test_should_keep_a_segments_events_through_a_failed_append_and_a_new_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events of the chunks a segment takes after its first are joined into it once the
    segment is done; an append taken back after a full disk takes back its events too."""
    sink = writer(tmp_path)

    def multiline(start: int, count: int, *spans: EventSpan, fingerprint: str = FP_A) -> Chunk:
        data = lines("a", count)
        return Chunk("access", fingerprint, start, data, count, events=EventRuns.of(spans))

    first = multiline(0, 4, EventSpan(1, 2))
    second = multiline(40, 3, EventSpan(0, 2, EventCut.HEADLESS))
    third = multiline(70, 5, EventSpan(2, 3))
    other = multiline(0, 2, EventSpan(0, 2), fingerprint=FP_B)
    sink.append([first])
    with disk_full_after(monkeypatch, writes=1), pytest.raises(OSError):
        sink.append([second, third])  # the second extends the segment, then the disk is full
    sink.append([second, third])
    sink.append([other])  # a new segment: the first one's events are joined

    sealed = sink.seal(Barrier(1, SEALED_AT, covering(first, second, third, other)))

    (part,) = sealed.parts
    assert [segment.events for segment in part.segments] == [
        EventRuns.of([EventSpan(1, 2), EventSpan(4, 2, EventCut.HEADLESS), EventSpan(9, 3)]),
        EventRuns.of([EventSpan(0, 2)]),
    ]
    assert [segment.lines for segment in part.segments] == [12, 2]
    assert sealed.event_count == 12 - 1 - 1 - 2 + 2 - 1


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
    sink.append([first])
    sink.seal(Barrier(1, SEALED_AT, covering(first)))
    sink.append([second])

    sealed = sink.seal(Barrier(2, SEALED_AT, covering(second)))

    assert [(p.name, p.rows) for p in sealed.parts] == [("part-access-00000.lines", 3)]
    assert sealed.parts[0].segments == (Segment(FP_A, 20, 0, 30, 3),)


def test_should_refuse_to_seal_when_lines_do_not_match_the_barriers_lines(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    appended = chunk(lines("a", 3))
    sink.append([appended])
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
    sink.append([appended])
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


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT], ids=["ENOSPC", "EDQUOT"])
def test_should_keep_the_parts_when_a_full_filesystem_refuses_the_manifest_and_seal_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    sink = writer(tmp_path)
    chunks = [chunk(lines("a", 3), 0), chunk(lines("a", 2), 30)]
    for c in chunks:
        sink.append([c])
    refusals = [code]

    def refused_once(folder: Path, manifest: object) -> Path:
        if refusals:
            (folder / MANIFEST_NAME).write_text('{"half": ')  # what a full disk leaves
            raise OSError(refusals.pop(), os.strerror(code))
        return write_manifest(folder, manifest)  # type: ignore[arg-type]

    monkeypatch.setattr(_handoff, "write_manifest", refused_once)
    barrier = Barrier(3, SEALED_AT, covering(*chunks))

    with pytest.raises(StagingFullError, match="filesystem is full"):
        sink.seal(barrier)
    assert not (inflight(tmp_path) / MANIFEST_NAME).exists()
    assert (inflight(tmp_path) / "part-access-00000.lines").is_file()
    sealed = sink.seal(barrier)

    assert (sealed.line_count, sealed.byte_count) == (5, 50)
    target = checkpoint_dir(tmp_path, PIPELINE, 3) / HOST
    assert (target / "part-access-00000.lines").read_bytes() == b"".join(c.data for c in chunks)
    assert manifest_of(target)["checkpoint_id"] == 3
    assert not inflight(tmp_path).exists()


def test_should_give_up_the_batch_when_the_manifest_fails_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = writer(tmp_path)
    appended = chunk(lines("a", 3))
    sink.append([appended])

    def broken(folder: Path, manifest: object) -> Path:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(_handoff, "write_manifest", broken)

    with pytest.raises(SealError) as raised:
        sink.seal(Barrier(3, SEALED_AT, covering(appended)))
    assert not isinstance(raised.value, StagingFullError)
    assert not inflight(tmp_path).exists()


def test_should_replace_a_stale_folder_left_by_an_earlier_seal(tmp_path: Path) -> None:
    stale = checkpoint_dir(tmp_path, PIPELINE, 5) / HOST
    stale.mkdir(parents=True)
    (stale / "part-access-00007.lines").write_bytes(b"half written")
    (stale / MANIFEST_NAME).write_text('{"line_count": 999}')
    sink = writer(tmp_path)
    appended = chunk(lines("a", 2))
    sink.append([appended])

    sealed = sink.seal(Barrier(5, SEALED_AT, covering(appended)))

    assert sealed.staging_path == stale
    assert sorted(p.name for p in stale.iterdir()) == [MANIFEST_NAME, "part-access-00000.lines"]
    assert manifest_of(stale)["line_count"] == 2


def test_should_leave_other_hosts_batches_alone(tmp_path: Path) -> None:
    other = checkpoint_dir(tmp_path, PIPELINE, 5) / "web-2"
    other.mkdir(parents=True)
    (other / MANIFEST_NAME).write_text("{}")

    writer(tmp_path).seal(Barrier(5, SEALED_AT, ()))

    assert (other / MANIFEST_NAME).read_text() == "{}"


def test_should_remove_inflight_parts_on_reset(tmp_path: Path) -> None:
    sink = writer(tmp_path)
    sink.append([chunk(lines("a", 3))])
    assert any(inflight(tmp_path).iterdir())

    sink.reset()

    assert not inflight(tmp_path).exists()
    sealed = sink.seal(Barrier(1, SEALED_AT, ()))
    assert sealed.parts == ()
    assert [p.name for p in sealed.staging_path.iterdir()] == [MANIFEST_NAME]


def test_should_remove_parts_left_by_a_crash_on_reset(tmp_path: Path) -> None:
    leftover = inflight(tmp_path)
    leftover.mkdir(parents=True)
    (leftover / "part-access-00000.lines").write_bytes(b"from a crashed run")

    writer(tmp_path).reset()

    assert not leftover.exists()
