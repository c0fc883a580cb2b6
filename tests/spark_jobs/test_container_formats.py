"""The container formats (``cri``, ``docker_json``) in the landing: a real program's output,
copied into a log file as a container runtime copies it, read and framed by the collector's
reader, staged, and parsed by Spark into the events the program printed."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipeline_core.config import MultilinePreset, SourceFormat
from pipeline_core.staging_contract import EventCut
from pipeline_core.testing import read_framed
from spark_jobs.formats import RejectReason, parse
from tests.spark_jobs.support import StagingRows, staged_items
from tests.support.container_runtime import cri_entry, docker_entry, run_container
from tests.support.log_programs import PYTHON_FORMATS, PYTHON_PROGRAM, read_truth
from tests.support.staging import Event, Line, line_offsets

pytestmark = pytest.mark.spark

FORMATS = [SourceFormat.CRI, SourceFormat.DOCKER_JSON]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fmt", FORMATS)
def test_should_land_each_record_a_container_printed_as_one_row_with_stream_and_time(
    staging_rows: StagingRows, tmp_path: Path, fmt: SourceFormat
) -> None:
    log, truth = tmp_path / "logs" / "0.log", tmp_path / "truth.jsonl"
    log.parent.mkdir()
    program = [
        sys.executable, str(PYTHON_PROGRAM), "--log", "/dev/stderr", "--truth", str(truth),
        "--format", PYTHON_FORMATS["common"], "--events", "300", "--tracebacks", "0.2",
        "--long", "0.05", "--seed", "11",
    ]  # fmt: skip
    started = datetime.now(timezone.utc)
    status = run_container(program, log, fmt.value).wait()
    ended = datetime.now(timezone.utc)
    received = read_framed(log, MultilinePreset.PYTHON, fmt)

    parsed, rejects = parse(staging_rows(staged_items(received), source="app"), fmt.value)
    rows = parsed.orderBy("byte_offset").collect()
    written = [record.rstrip(b"\n").decode() for record in read_truth(truth)]
    assert status == 0
    assert rejects.count() == 0
    assert [row["message"] for row in rows] == written
    assert {row["stream"] for row in rows} == {"stderr"}
    assert [row["event_lines"] for row in rows] == [text.count("\n") + 1 for text in written]
    assert all(row["cut"] is None for row in rows)
    times = [row["event_time"].astimezone(timezone.utc) for row in rows]
    assert times == sorted(times)
    assert started.replace(microsecond=0) <= times[0] and times[-1] <= ended
    assert any("Traceback" in text for text in written)
    assert any(len(text) > 16 * 1024 for text in written)


def test_should_join_partial_entries_and_keep_stream_time_cut_and_text_as_written(
    staging_rows: StagingRows,
) -> None:
    at = 1_795_000_000_123_456_789  # 2026-11-18T...: nanoseconds, cut to microseconds
    entry = cri_entry
    items: list[Line] = [
        entry("stdout", False, b"plain", at),
        Event(
            (
                entry("stderr", True, b"first part, ", at + 1000).rstrip(b"\n"),
                entry("stderr", True, b"second part, ", at + 2000).rstrip(b"\n"),
                entry("stderr", False, b"last part", at + 3000).rstrip(b"\n"),
                entry("stderr", False, b"  next line\r", at + 4000).rstrip(b"\n"),
            )
        ),
        Event((entry("stdout", True, b"head of a line", at).rstrip(b"\n"),), EventCut.HEADLESS),
        entry("stdout", False, b"", at).rstrip(b"\n"),
        entry("stdout", False, "café \u2028 ok".encode(), at).rstrip(b"\n"),
        Event(  # a character the runtime's 16 KiB entries cut in two
            (
                entry("stdout", True, b"x" * 3 + "é".encode()[:1], at).rstrip(b"\n"),
                entry("stdout", False, "é".encode()[1:] + b" whole", at).rstrip(b"\n"),
            )
        ),
    ]
    items = [item.rstrip(b"\n") if isinstance(item, bytes) else item for item in items]
    parsed, rejects = parse(staging_rows(items, source="app"), "cri")

    assert rejects.count() == 0
    rows = {row["byte_offset"]: row for row in parsed.collect()}
    got = [rows[offset] for offset in line_offsets(items, 0)]
    assert [(r["message"], r["stream"], r["event_lines"], r["cut"]) for r in got] == [
        ("plain", "stdout", 1, None),
        ("first part, second part, last part\n  next line\r", "stderr", 2, None),
        ("head of a line", "stdout", 1, "headless"),
        ("", "stdout", 1, None),
        ("café \u2028 ok", "stdout", 1, None),
        ("xxxé whole", "stdout", 1, None),
    ]
    stamp = got[0]["event_time"].astimezone(timezone.utc)
    assert stamp == datetime.fromtimestamp(at // 1000 / 1e6, timezone.utc)


@pytest.mark.parametrize(
    ("fmt", "line", "reason"),
    [
        ("cri", b"not an entry at all", RejectReason.NO_MATCH),
        ("cri", b"2026-11-28T10:00:00Z stdin F text", RejectReason.NO_MATCH),
        ("cri", b"2026-11-28T10:00:00Z stdout X text", RejectReason.NO_MATCH),
        ("cri", b"yesterday stdout F text", RejectReason.BAD_TIMESTAMP),
        ("cri", b"2026-11-28T10:00:00Z stdout F \xff\xfe", RejectReason.INVALID_UTF8),
        ("docker_json", b'{"log":"x\\n","stream":"stdout"', RejectReason.INVALID_JSON),
        ("docker_json", b'{"stream":"stdout","time":"2026-11-28T10:00:00Z"}',
         RejectReason.INVALID_JSON),
        ("docker_json", b'{"log":"x\\n","stream":"stdout","time":"soon"}',
         RejectReason.BAD_TIMESTAMP),
    ],
)  # fmt: skip
def test_should_reject_what_is_not_an_entry_of_the_format_with_its_reason(
    staging_rows: StagingRows, fmt: str, line: bytes, reason: RejectReason
) -> None:
    good = (cri_entry if fmt == "cri" else docker_entry)("stdout", False, b"ok", time.time_ns())
    parsed, rejects = parse(staging_rows([good.rstrip(b"\n"), line], source="app"), fmt)

    assert [row["message"] for row in parsed.collect()] == ["ok"]
    assert [row["reason"] for row in rejects.collect()] == [reason.value]
