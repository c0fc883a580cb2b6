"""Bad input: hostile bytes, a 50 MB line, files truncated, deleted, unreadable, replaced, a
symlink loop and a folder on the glob. Each has a defined outcome, the collector keeps going,
and every line of the healthy file beside it is staged exactly once."""

from __future__ import annotations

import logging
import os
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from pipeline_core._file_names import restored_path
from pipeline_core.cli import ExitCode, main
from pipeline_core.collector import Collector
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.source import (
    LONG_LINE_PREFIX_BYTES,
    Chunk,
    FileWatcher,
    LongLine,
    TimeSlicedReader,
)
from pipeline_core.staging_contract import MANIFEST_NAME, read_manifest
from pipeline_core.testing import (
    UniqueAccessLines,
    append,
    lake_table,
    nginx_lines,
    staged_lines,
    staging_folder,
    wait_until,
)
from tests.support.faults import FaultSeed, RunningCollector, land_and_commit_sealed
from tests.support.file_names import NOT_UTF8, named
from tests.support.pipelines import load, write_config

MiB = 1 << 20
BIG_LINE_BYTES = 50 * 1000 * 1000
"""A line of 50 MB: about 48 times ``max_line_bytes``, staged as its first bytes only."""


class Logs:
    """A folder of log files, with one healthy file of unique lines beside the bad ones."""

    def __init__(self, folder: Path, seed: FaultSeed) -> None:
        self.folder = folder
        self._source = UniqueAccessLines(seed.value)
        self._next = 0
        self.healthy: list[bytes] = []
        self.healthy_path = folder / "healthy.log"

    def lines(self, count: int) -> list[bytes]:
        made = self._source.lines(self._next, count)
        self._next += count
        return made

    def write_healthy(self, count: int = 200) -> None:
        lines = self.lines(count)
        append(self.healthy_path, *lines)
        self.healthy += lines


@pytest.fixture
def logs(tmp_path: Path, fault_seed: FaultSeed) -> Logs:
    return Logs(tmp_path / "logs", fault_seed)


def pipeline(
    tmp_path: Path, metastore_url: str, pattern: str = "logs/*.log*", **collector: Any
) -> PipelineConfig:
    return load(tmp_path, metastore_url, pattern=pattern, collector=collector or None)


def collect_once(config: PipelineConfig, metastore: Metastore) -> None:
    Collector(config, metastore).run_once()


def staged_by_fingerprint(config: PipelineConfig) -> dict[str, list[bytes]]:
    by_file: dict[str, list[bytes]] = {}
    for staged in staged_lines(config):
        by_file.setdefault(staged.fingerprint, []).append(staged.line)
    return by_file


def assert_healthy_staged_once(config: PipelineConfig, logs: Logs, seed: FaultSeed) -> None:
    staged = staged_lines(config)
    healthy = set(logs.healthy)
    mine = [s for s in staged if s.line in healthy]
    assert sorted(s.line for s in mine) == sorted(logs.healthy), seed.note(
        f"{len(mine)} lines of the healthy file staged, {len(logs.healthy)} written"
    )
    assert len({(s.fingerprint, s.offset) for s in staged}) == len(staged), "an event id twice"


# -- hostile bytes -----------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_50_mb_line_is_skipped_to_its_end_without_holding_it_whole(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "huge.log"
    log.parent.mkdir()
    with open(log, "wb") as handle:
        handle.write(b"before\n")
        for _ in range(BIG_LINE_BYTES // MiB):
            handle.write(b"x" * MiB)
        handle.write(b"x" * (BIG_LINE_BYTES % MiB))
    config = load(tmp_path, "sqlite://", pattern="logs/*.log")
    watcher = FileWatcher(config.sources, "test-host", 1024)
    watcher.scan()
    reader = TimeSlicedReader(watcher, chunk_bytes=MiB, max_line_bytes=MiB, slice_seconds=10)
    chunks: list[Chunk] = []

    def publish(chunk: Chunk) -> bool:
        chunks.append(chunk)
        return True

    tracemalloc.start()
    try:
        while not reader.read_slice(publish).caught_up:
            pass
        waiting = [(c.start, c.end) for c in chunks]  # the unterminated line waits
        append(log, b"", b"after")
        while not reader.read_slice(publish).caught_up:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        watcher.close()

    assert waiting == [(0, 7)]
    assert [(c.start, c.end, len(c.data), c.lines, c.long_line) for c in chunks] == [
        (0, 7, 7, 1, None),
        (7, 7 + BIG_LINE_BYTES + 1, LONG_LINE_PREFIX_BYTES, 1, LongLine(BIG_LINE_BYTES, True)),
        (7 + BIG_LINE_BYTES + 1, 7 + BIG_LINE_BYTES + 7, 6, 1, None),
    ]
    assert peak < 4 * MiB, f"reading held {peak / MiB:.1f} MiB at its peak"


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(300)
def test_hostile_bytes_are_staged_byte_for_byte_and_land_as_rows_or_rejects(
    tmp_path: Path, metastore_url: str, spark: SparkSession, logs: Logs, fault_seed: FaultSeed
) -> None:
    config_path = write_config(tmp_path, metastore_url, pattern="logs/*.log")
    config = load_pipeline_config(config_path)
    metastore = Metastore.open(metastore_url)
    good = logs.lines(3)
    crlf = logs.lines(1)[0] + b"\r"
    hostile = [good[0], b"\xff\xfe not utf-8 \xc3", b"nul\x00in\x00the middle", crlf, good[1]]
    append(logs.folder / "hostile.log", *hostile)
    logs.write_healthy()
    with open(logs.folder / "hostile.log", "ab") as handle:
        for _ in range(BIG_LINE_BYTES // MiB):
            handle.write(b"y" * MiB)
        handle.write(b"y" * (BIG_LINE_BYTES % MiB))
    collect_once(config, metastore)  # stops before the 50 MB line: its end is not written yet
    append(logs.folder / "hostile.log", b"", good[2])  # ends the 50 MB line
    logs.write_healthy()

    collect_once(config, metastore)
    land_and_commit_sealed(spark, config_path)

    staged = staged_lines(config)
    hostile_lines = [s for s in staged if not s.line.startswith(b"y")]
    (big,) = [s for s in staged if s.line.startswith(b"y")]
    assert [s.line for s in hostile_lines if s.line not in set(logs.healthy)] == [*hostile, good[2]]
    assert (big.line, big.line_bytes) == (b"y" * LONG_LINE_PREFIX_BYTES, BIG_LINE_BYTES)
    assert big.offset == sum(len(line) + 1 for line in hostile)
    assert_healthy_staged_once(config, logs, fault_seed)
    access = lake_table(lake_location(config), "access")
    rejects = lake_table(lake_location(config), "_rejects")
    assert access is not None and rejects is not None
    reasons: dict[str, int] = {}
    for reason in rejects["reason"].to_pylist():
        reasons[reason] = reasons.get(reason, 0) + 1
    assert reasons == {"invalid_utf8": 1, "no_match": 1, "line_too_long": 1}
    (too_long,) = [r for r in rejects.to_pylist() if r["reason"] == "line_too_long"]
    assert (too_long["byte_offset"], too_long["line_bytes"]) == (big.offset, BIG_LINE_BYTES)
    assert access.num_rows == len(good) + 1 + len(logs.healthy)  # the CRLF line parses
    assert access.num_rows + rejects.num_rows == len(staged)
    metastore.close()


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(300)
def test_a_5_mb_line_between_normal_lines_lands_as_one_line_too_long_reject(
    tmp_path: Path, metastore_url: str, spark: SparkSession, logs: Logs
) -> None:
    config_path = write_config(tmp_path, metastore_url, pattern="logs/*.log")
    config = load_pipeline_config(config_path)
    assert config.collector.max_line_bytes == MiB
    before, after = logs.lines(300), logs.lines(300)
    long_line = before[0][:40] + b"q" * (5 * 1000 * 1000)
    append(logs.folder / "access.log", *before, long_line, *after)
    metastore = Metastore.open(metastore_url)

    collect_once(config, metastore)
    land_and_commit_sealed(spark, config_path)

    access = lake_table(lake_location(config), "access")
    rejects = lake_table(lake_location(config), "_rejects")
    assert access is not None and rejects is not None
    assert sorted(nginx_lines(access).cast(pa.binary()).to_pylist()) == sorted(before + after)
    assert len(set(access["event_id"].to_pylist())) == access.num_rows
    (reject,) = rejects.to_pylist()
    (fingerprint,) = set(access["file_fingerprint"].to_pylist())
    offset = sum(len(line) + 1 for line in before)
    assert reject["event_id"] == f"{fingerprint}:{offset}"
    assert (reject["reason"], reject["line_bytes"]) == ("line_too_long", len(long_line))
    assert reject["raw_line"] == long_line[:LONG_LINE_PREFIX_BYTES].decode()
    metastore.close()


# -- files that change under the collector ------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kept_lines", [0, 390], ids=["rewritten", "head-kept"])
def test_a_file_truncated_below_its_checkpoint_between_runs_is_read_from_the_cut(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    logs: Logs,
    fault_seed: FaultSeed,
    kept_lines: int,
) -> None:
    """Cut below what was sealed while no collector ran, then appended to: the lines it kept
    were read already (not again), what was appended after the cut is read once, under a new
    name. Rewritten from its start, it is a new file. The metastore keeps the last lines
    sealed as CRC-32s, so a restarted collector finds a cut among them to the line."""
    config = pipeline(tmp_path, metastore_url)
    log = logs.folder / "access.log"
    old = logs.lines(400)
    append(log, *old)
    logs.write_healthy()
    collect_once(config, metastore)
    kept = old[:kept_lines]
    os.truncate(log, sum(len(line) + 1 for line in kept))
    new = logs.lines(50)
    append(log, *new)
    logs.write_healthy()

    collect_once(config, metastore)

    by_file = staged_by_fingerprint(config)
    assert old in by_file.values()  # sealed before the truncation, under the first name
    assert new in by_file.values(), fault_seed.note(
        f"lines per file after the cut: {[len(v) for v in by_file.values()]}"
    )
    assert_healthy_staged_once(config, logs, fault_seed)


@pytest.mark.timeout(60)
def test_a_file_cut_far_below_its_checkpoint_between_runs_reads_nothing_twice_and_says_so(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    logs: Logs,
    fault_seed: FaultSeed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Cut to a quarter while no collector ran: further back than the lines the metastore
    keeps to compare with. The kept bytes are taken as read (never read twice), lines appended
    after the file's size at the restart are read, and a warning names the bytes taken on
    trust."""
    config = pipeline(tmp_path, metastore_url)
    log = logs.folder / "access.log"
    old = logs.lines(400)
    append(log, *old)
    logs.write_healthy()
    collect_once(config, metastore)
    cut = sum(len(line) + 1 for line in old[:100])
    os.truncate(log, cut)

    collect_once(config, metastore)
    later = logs.lines(30)
    append(log, *later)
    logs.write_healthy()
    collect_once(config, metastore)

    by_file = staged_by_fingerprint(config)
    assert old in by_file.values()
    assert later in by_file.values()
    assert f"bytes [0, {cut}) are taken as the ones already read" in caplog.text
    assert_healthy_staged_once(config, logs, fault_seed)


@pytest.mark.timeout(60)
def test_a_file_deleted_while_open_is_read_to_its_end(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Logs, fault_seed: FaultSeed
) -> None:
    config = pipeline(tmp_path, metastore_url, rotated_grace_s=30.0, discovery_interval_s=0.1)
    log = logs.folder / "access.log"
    before, after = logs.lines(300), logs.lines(200)
    logs.write_healthy()
    with open(log, "ab") as writer:
        writer.write(b"".join(line + b"\n" for line in before))
        writer.flush()
        with RunningCollector(config, metastore) as running:
            # the log read: the collector holds it open (once it serves the pipeline: its
            # start may come after the block's)
            wait_until(
                lambda: any(
                    file.path == str(log) and file.read_offset > 0
                    for metrics in running.collector.metrics()
                    for file in metrics.files
                ),
                30,
                "the log read",
            )
            log.unlink()
            writer.write(b"".join(line + b"\n" for line in after))  # a writer unaware of it
            writer.flush()
            time.sleep(0.5)
    running.raise_error()

    assert sorted(before + after) in [sorted(v) for v in staged_by_fingerprint(config).values()]
    assert_healthy_staged_once(config, logs, fault_seed)


@pytest.mark.timeout(60)
def test_an_unreadable_file_is_skipped_with_a_warning_and_read_once_it_can_be(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    logs: Logs,
    fault_seed: FaultSeed,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = pipeline(tmp_path, metastore_url)
    secret = logs.folder / "secret.log"
    hidden = logs.lines(100)
    append(secret, *hidden)
    logs.write_healthy()
    restore = deny_reading(secret, monkeypatch)

    with caplog.at_level(logging.WARNING, logger="pipeline_core.source"):
        collect_once(config, metastore)

    assert any(str(secret) in r.getMessage() for r in caplog.records), caplog.text
    assert [s.line for s in staged_lines(config)] == logs.healthy
    restore()
    logs.write_healthy()
    collect_once(config, metastore)
    assert sorted(staged_by_fingerprint(config).values()) == sorted([logs.healthy, hidden])
    assert_healthy_staged_once(config, logs, fault_seed)


def deny_reading(path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Make ``path`` unreadable to this process; returns how to undo it. Root reads any file
    whatever its mode, so as root the open itself is made to fail with EACCES."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0)
        return lambda: path.chmod(mode)
    real_open = os.open
    denied = [True]

    def open_denied(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if denied[0] and os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_denied)
    return lambda: denied.__setitem__(0, False)


@pytest.mark.timeout(60)
def test_a_file_replaced_by_another_with_the_same_inode_is_read_as_a_new_file(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Logs, fault_seed: FaultSeed
) -> None:
    config = pipeline(tmp_path, metastore_url)
    log = logs.folder / "access.log"
    old, new = logs.lines(300), logs.lines(120)
    append(log, *old)
    logs.write_healthy()
    collect_once(config, metastore)
    inode = log.stat().st_ino
    log.unlink()
    append(log, *new)
    if log.stat().st_ino != inode:  # the file system did not reuse it: rewrite in place
        log.unlink()
        append(log, *old)
        inode = log.stat().st_ino
        collect_once(config, metastore)
        with open(log, "r+b") as handle:
            handle.truncate(0)
            handle.write(b"".join(line + b"\n" for line in new))
    assert log.stat().st_ino == inode
    logs.write_healthy()

    collect_once(config, metastore)

    by_file = staged_by_fingerprint(config)
    assert new in by_file.values(), fault_seed.note("the replacement was not read from 0")
    assert old in by_file.values()
    assert_healthy_staged_once(config, logs, fault_seed)


# -- file names ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("logs/*.log", b"good.log", NOT_UTF8),
        ("logs/access.log*", b"access.log", b"access.log.bad\xff"),
    ],
    ids=["star-log", "access-log-star"],
)
def test_a_file_name_that_is_not_utf8_is_collected_beside_the_others_and_sealed(
    tmp_path: Path,
    metastore_url: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
    pattern: str,
    good: bytes,
    bad: bytes,
) -> None:
    """Any bytes name a file: the one whose name is not UTF-8 is read, sealed and recorded
    like its neighbour, and a restarted collector finds it again at its recorded offset."""
    config_path = write_config(tmp_path, metastore_url, pattern=pattern)
    config = load_pipeline_config(config_path)
    good_path, bad_path = named(logs.folder, good), named(logs.folder, bad)
    good_lines, bad_lines, later = logs.lines(40), logs.lines(30), logs.lines(5)
    append(good_path, *good_lines)
    append(bad_path, *bad_lines)

    first = main(["collect", str(config_path), "--once"])
    assert first == ExitCode.OK, capsys.readouterr().err
    append(bad_path, *later)
    assert main(["collect", str(config_path), "--once"]) == ExitCode.OK, capsys.readouterr().err

    by_file = staged_by_fingerprint(config)
    assert sorted(by_file.values()) == sorted([good_lines, bad_lines + later])
    metastore = Metastore.open(metastore_url)
    try:
        states = [metastore.checkpoint(n).state for n in (1, 2)]
        paths = sorted(f.path for f in metastore.files(config.name, "test-host"))
    finally:
        metastore.close()
    assert states == [CheckpointState.SEALED, CheckpointState.SEALED]
    assert paths == sorted([str(good_path), str(bad_path)])
    manifests = sorted(staging_folder(config).glob(f"*/*/{MANIFEST_NAME}"))
    ranges = [r for m in manifests for r in read_manifest(m.parent).ranges]
    assert sorted({restored_path(r.path) for r in ranges}) == paths
    for r in ranges:
        r.path.encode("utf-8")  # the manifest holds text any JSON reader (and the lake) takes


# -- the glob -----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_symlink_loops_on_a_recursive_glob_end_the_scan_and_count_each_file_once(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Logs, fault_seed: FaultSeed
) -> None:
    config = pipeline(tmp_path, metastore_url, "logs/**/*.log")
    nested = logs.folder / "a" / "b" / "deep.log"
    deep = logs.lines(50)
    append(nested, *deep)
    logs.write_healthy()
    for name, target in [("up", ".."), ("self", "."), ("top", "../..")]:
        (nested.parent / name).symlink_to(target, target_is_directory=True)
    (logs.folder / "loop.log").symlink_to("loop.log")  # a link to itself, on the glob

    started = time.monotonic()
    collect_once(config, metastore)

    assert time.monotonic() - started < 30
    assert sorted(staged_by_fingerprint(config).values()) == sorted([logs.healthy, deep])
    assert_healthy_staged_once(config, logs, fault_seed)


@pytest.mark.timeout(60)
def test_a_folder_where_a_log_file_was_expected_is_passed_over(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Logs, fault_seed: FaultSeed
) -> None:
    config = pipeline(tmp_path, metastore_url)
    (logs.folder / "access.log.1").mkdir(parents=True)
    (logs.folder / "access.log.1" / "inside.log").write_bytes(b"not on the glob\n")
    rotated = logs.folder / "access.log.2"
    append(rotated, *logs.lines(30))
    logs.write_healthy()
    collect_once(config, metastore)
    rotated.unlink()
    rotated.mkdir()  # a file on the glob became a folder
    logs.write_healthy()

    collect_once(config, metastore)

    assert len(staged_by_fingerprint(config)) == 2
    assert_healthy_staged_once(config, logs, fault_seed)
