"""Staged checkpoints and landings shared by the landing job's tests (reads of the lake
tables are in ``tests.support.lake``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from datetime import timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from pyspark.sql import DataFrame

from pipeline_core.lake import LakeLocation, LandingMode
from pipeline_core.staging_contract import MANIFEST_NAME, checkpoint_dir
from pipeline_core.testing import Received
from spark_jobs.formats import parse
from spark_jobs.landing import CheckpointInput, Landing
from tests.support.staging import Event, Line, line_offsets, write_batch

FINGERPRINT = "9f1c00000000abcd"
HOST = "web-1"
CHECKPOINT_ID = 7
SPARK_EXAMPLES = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""The property tests' settings: one Spark job per example, so few examples, each of many
lines or records."""
StagingRows = Callable[..., DataFrame]
"""The ``staging_rows`` fixture: staging rows (as the landing job reads them) from items."""

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "web_access"
ACCESS = [
    b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0"',
    b'198.51.100.2 - bob [22/Nov/2026:23:59:59 -0100] "GET /late HTTP/1.1" 200 1 "-" "-"',
    b'203.0.113.7 - - [22/Nov/2026:10:00:02 +0000] "GET /\xff HTTP/1.1" 200 1 "-" "-"',
    b"\x00\x00\x00\x00",
    b'203.0.113.7 - - [22/Nov/2026:10:00:03 +0000] "GET /trunc',
    b'203.0.113.7 - - [99/Nov/2026:10:00:04 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
    b"z" * 100 * 1024,
    b'203.0.113.8 - - [21/Nov/2026:08:00:00 +0000] "HEAD /ping HTTP/1.0" 204 0 "-" "probe"',
    b"garbage \xff line",
]
APP = [
    b'{"ts": "2026-11-22T10:00:00Z", "msg": "a"}',
    b'{"msg": "no time"}',
    b"not json",
]
MISC = [b"free text", b"\xfe\xff"]
LINES_PER_HOST = len(ACCESS) + len(APP) + len(MISC)
STAGED = {"access": (ACCESS, "aaaa"), "app": (APP, "bbbb"), "misc": (MISC, "cccc")}
"""The lines ``stage`` writes per source, and the end of their files' fingerprints."""


def stage(staging: Path, checkpoint_id: int, hosts: tuple[str, ...] = ("web-1", "web-2")) -> Path:
    """A checkpoint with three sources (nginx, JSON, raw) on every host. Each host's files
    are read from byte ``1000 * checkpoint_id`` on, so that the event ids of the checkpoints a
    test stages differ."""
    for number, host in enumerate(hosts):
        fingerprint = f"{number:04x}00000000aaaa"
        write_batch(
            staging, PIPELINE, checkpoint_id, host, "access", "nginx_combined", ACCESS,
            fingerprint, 1000 * checkpoint_id, rows_per_part=4, lines_per_segment=3,
        )  # fmt: skip
        write_batch(
            staging, PIPELINE, checkpoint_id, host, "app", "json_lines", APP,
            f"{number:04x}00000000bbbb", 1000 * checkpoint_id, time_field="ts",
        )  # fmt: skip
        write_batch(
            staging, PIPELINE, checkpoint_id, host, "misc", "raw", MISC,
            f"{number:04x}00000000cccc", 1000 * checkpoint_id,
        )  # fmt: skip
    return checkpoint_dir(staging, PIPELINE, checkpoint_id)


def landing(
    lake: LakeLocation,
    *checkpoints: Path | CheckpointInput,
    landing_id: str = "landing-1",
    mode: LandingMode = LandingMode.APPEND,
) -> Landing:
    """A landing of ``checkpoints`` (staging folders: every batch of each) into ``lake``."""
    inputs = tuple(
        c if isinstance(c, CheckpointInput) else CheckpointInput(str(c)) for c in checkpoints
    )
    return Landing(inputs, lake, landing_id, mode)


def checkpoint_summary(summary: dict[str, Any], checkpoint_id: int) -> dict[str, Any]:
    """The part of a landing's summary about one checkpoint."""
    (found,) = [c for c in summary["checkpoints"] if c["checkpoint_id"] == checkpoint_id]
    return dict(found)


def edit_manifest(batch: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    """Apply ``edit`` to a batch's manifest (in place); returns the manifest's path."""
    path = batch / MANIFEST_NAME
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    return path


def spark_submit_landing(
    staged: Path, lake: LakeLocation, jar: Path | None, landing_id: str
) -> list[str]:
    """The spark-submit command line landing ``staged`` (hosts ``web-1`` and ``web-2``) into
    ``lake`` on local cores, with the Java functions' ``jar`` as the landing's spec gives it."""
    return [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master", "local[2]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        *(["--jars", str(jar)] if jar is not None else []),
        str(REPO / "spark_jobs" / "land.py"),
        "--checkpoint", f"{staged}=web-1,web-2",
        "--lake", str(lake.warehouse), "--namespace", lake.namespace,
        "--landing-id", landing_id,
    ]  # fmt: skip


def staged_event_ids(checkpoint_id: int, hosts: dict[str, int]) -> set[tuple[int, str]]:
    """``(checkpoint_id, event_id)`` of every line ``stage`` wrote for ``hosts`` (each host
    with its position in the hosts it was staged with)."""
    return {
        (checkpoint_id, f"{number:04x}00000000{suffix}:{offset}")
        for number in hosts.values()
        for lines, suffix in STAGED.values()
        for offset in line_offsets(lines, 1000 * checkpoint_id)
    }


def staged_items(received: Received) -> list[Line]:
    """The chunks a reader published, as the items the handoff stages: a line, or an event
    (a span's lines, with its cut)."""
    items: list[Line] = []
    for chunk in received:
        lines = bytes(chunk.data).split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        spans = {span.first_line: span for span in chunk.events}
        number = 0
        while number < len(lines):
            span = spans.get(number)
            if span is None:
                items.append(lines[number])
                number += 1
                continue
            items.append(Event(tuple(lines[number : number + span.lines]), span.cut))
            number += span.lines
    return items


def landed(
    staging_rows: StagingRows,
    lines: Sequence[Line],
    fmt: str,
    *,
    source: str = "syslog",
    **options: Any,
) -> list[dict[str, Any] | str]:
    """Each line (or multiline event) parsed as ``fmt`` (with ``parse``'s ``options``), in
    order: its row, or its reject's reason; exactly one for each."""
    parsed, rejects = parse(staging_rows(list(lines), source=source), fmt, **options)
    found: dict[int, dict[str, Any] | str] = {}
    for row in parsed.collect():
        found[row["byte_offset"]] = row.asDict()
    for reject in rejects.collect():
        assert reject["byte_offset"] not in found, reject
        found[reject["byte_offset"]] = reject["reason"]
    offsets = line_offsets(lines, 0)
    assert sorted(found) == offsets
    return [found[offset] for offset in offsets]


class ParsedOnce:
    """The ``parsed_once`` fixture: each line's outcome under a format (its row, or its
    reject's reason), every line of one list parsed together in one Spark job the first time
    any of them is asked for. A parametrized test of one line a case asks for its case's line
    of the list of all its cases: one parse for the test instead of one a case (the format
    reads each line on its own, so the outcomes are the same)."""

    def __init__(self, staging_rows: StagingRows) -> None:
        self._staging_rows = staging_rows
        self._done: dict[tuple[Any, ...], dict[bytes, dict[str, Any] | str]] = {}

    def of(
        self, lines: Sequence[bytes], fmt: str, *, source: str, **options: Any
    ) -> dict[bytes, dict[str, Any] | str]:
        key = (tuple(lines), fmt, source, repr(sorted(options.items())))
        if key not in self._done:
            assert len(set(lines)) == len(lines), "each line is its own case"
            outcomes = landed(self._staging_rows, lines, fmt, source=source, **options)
            self._done[key] = dict(zip(lines, outcomes, strict=True))
        return self._done[key]


def reason_of(outcome: dict[str, Any] | str) -> str | None:
    """A reject's reason; None for a row."""
    return outcome if isinstance(outcome, str) else None


def format_columns(names: Sequence[str], row: dict[str, Any] | str) -> dict[str, Any] | str:
    """A landed row's ``names`` columns and its ``event_time`` in UTC (a reject's reason, a
    string, as it is): what a property test compares with the record it wrote."""
    if isinstance(row, str):
        return row
    picked = {name: row[name] for name in names}
    picked["event_time"] = row["event_time"].astimezone(timezone.utc)
    return picked


def java_frame(frame: dict[str, Any]) -> str:
    """A frame as ``StackTraceElement.toString`` writes it, written apart from the parser's."""
    if frame["line"] == -2:
        where = "Native Method"
    elif frame["file"] is None:
        where = "Unknown Source"
    elif frame["line"] >= 0:
        where = f"{frame['file']}:{frame['line']}"
    else:
        where = frame["file"]
    return f"{frame['class']}.{frame['method']}({where})"
