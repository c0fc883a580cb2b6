"""A tailing collector's cost at rest and its descriptors: files beyond ``max_open_files`` or idle
for ``close_idle_after_s`` are closed and read on where they were when written (woken by their
file event), and a pipeline at rest is neither globbed nor snapshotted again and again.

Real files, real inotify; descriptors are counted in ``/proc/self/fd``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from pipeline_core.collector import Collector
from pipeline_core.metastore import Metastore
from pipeline_core.source import FileWatcher, TrackedFile
from pipeline_core.testing import RecordingSink, append, lines, staged_payloads, wait_until
from tests.pipeline_core.collector.support import Tailing, delivered, with_stub_group
from tests.support.descriptors import open_under

# make test runs these once, on SQLite: the metastore is not what they test, and its part in
# them runs on PostgreSQL too, in tests/pipeline_core/metastore and the system tests.
pytestmark = pytest.mark.sqlite_pass

PROMPT = 1.0
"""What "promptly" means here (a line's write -> its sink; the periodic looks are 30 s)."""


class MostOpen:
    """Samples :func:`open_under` every few milliseconds on a thread of its own."""

    def __init__(self, folder: Path) -> None:
        self.most = 0
        self._folder = folder
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.most = max(self.most, open_under(self._folder))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.most


def tail(collector: Collector) -> Tailing:
    return Tailing(collector.run, collector.stop)


@pytest.mark.timeout(90)
def test_should_hold_at_most_max_open_files_and_read_every_line_once(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    """12 files, 4 descriptors: each file is read once its turn comes, and read on where it
    was when written again; no line is read twice."""
    config = with_stub_group(
        tmp_path,
        metastore_url,
        pattern="logs/*.log",
        collector={
            "max_open_files": 4,
            "discovery_interval_s": 0.05,
            # Not the fallback look: events hand the written files their descriptors (an open
            # file written a moment ago once gave its own up and waited for that look).
            "file_events_fallback_s": 120.0,
        },
    )
    logs = tmp_path / "logs"
    written: list[bytes] = []
    for index in range(12):
        written += lines(f"f{index:02d}", 30)
        append(logs / f"f{index:02d}.log", *lines(f"f{index:02d}", 30))
    sink = RecordingSink("stub")
    sampler = MostOpen(logs)
    tailing = tail(Collector(config, metastore, sinks={"stub": sink}))
    try:
        wait_until(lambda: set(written) <= set(delivered(sink)), 30)
        for index in range(12):
            more = lines(f"f{index:02d} again", 10)
            written += more
            append(logs / f"f{index:02d}.log", *more)
        wait_until(lambda: set(written) <= set(delivered(sink)), 30)
    finally:
        tailing.stop()
        most = sampler.stop()

    # The bound, and one more while a scan looks at a file found new.
    assert most <= 4 + 1
    staged = staged_payloads(config)
    assert sorted(staged) == sorted(written)


@pytest.mark.timeout(60)
def test_should_read_a_line_written_to_a_closed_file_promptly(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = with_stub_group(
        tmp_path,
        metastore_url,
        pattern="logs/*.log",
        collector={
            "discovery_interval_s": 30.0,
            "file_events_fallback_s": 30.0,
            "close_idle_after_s": 0.2,
        },
    )
    logs = tmp_path / "logs"
    written: list[bytes] = []
    for index in range(5):
        written += lines(f"f{index}", 5)
        append(logs / f"f{index}.log", *lines(f"f{index}", 5))
    sink = RecordingSink("stub")
    tailing = tail(Collector(config, metastore, sinks={"stub": sink}))
    try:
        wait_until(lambda: set(written) <= set(delivered(sink)), 20)
        # Scans that events ask for: the first sees the files read, the next sees them idle.
        for poke in range(2):
            time.sleep(0.5)
            (logs / f"poke{poke}.log").touch()
        wait_until(lambda: open_under(logs) == 0, 10)
        time.sleep(0.3)

        started = time.monotonic()
        append(logs / "f3.log", b"woken")
        wait_until(lambda: b"woken" in delivered(sink), 10)
        elapsed = time.monotonic() - started
    finally:
        tailing.stop()

    assert elapsed < PROMPT
    assert sorted(staged_payloads(config)) == sorted([*written, b"woken"])


@pytest.mark.timeout(60)
def test_should_not_glob_a_pipeline_covered_by_file_events_at_every_discovery_interval(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events announce what comes, moves and goes in watched folders: the periodic glob is a
    safety net, run every ``file_events_fallback_s`` (30 s by default) instead of every
    ``discovery_interval_s``; a file appearing is still found at once."""
    scans: list[float] = []
    scan = FileWatcher.scan

    def counted(self: FileWatcher, within: Iterable[str] | None = None) -> None:
        if within is None:  # a whole scan: the glob of every path
            scans.append(time.monotonic())
        scan(self, within)

    monkeypatch.setattr(FileWatcher, "scan", counted)
    config = with_stub_group(tmp_path, metastore_url, collector={"discovery_interval_s": 0.05})
    logs = tmp_path / "logs"
    append(logs / "access.log", b"first")
    sink = RecordingSink("stub")
    tailing = tail(Collector(config, metastore, sinks={"stub": sink}))
    try:
        wait_until(lambda: b"first" in delivered(sink), 20)
        time.sleep(0.5)
        before = len(scans)
        time.sleep(2.0)
        at_rest = len(scans) - before
        started = time.monotonic()
        append(logs / "access.log.1", b"new file")
        wait_until(lambda: b"new file" in delivered(sink), 10)
        elapsed = time.monotonic() - started
    finally:
        tailing.stop()

    assert at_rest <= 1  # 40 at 0.05 s
    assert elapsed < PROMPT


@pytest.mark.timeout(60)
def test_should_not_save_the_same_empty_acker_snapshot_again_and_again(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    saves: list[int] = []
    save = Metastore.save_acker_trees_many

    def counted(self: Metastore, saved: list[tuple[str, str, list[object]]]) -> None:
        saved = [(pipeline, host, list(trees)) for pipeline, host, trees in saved]
        saves.extend(len(trees) for _, _, trees in saved)
        save(self, saved)  # type: ignore[arg-type]

    monkeypatch.setattr(Metastore, "save_acker_trees_many", counted)
    config = with_stub_group(tmp_path, metastore_url, collector={"acker_snapshot_s": 0.1})
    append(tmp_path / "logs" / "access.log", *lines("first", 20))
    sink = RecordingSink("stub")
    tailing = tail(Collector(config, metastore, sinks={"stub": sink}))
    try:
        wait_until(lambda: set(lines("first", 20)) <= set(delivered(sink)), 20)
        time.sleep(0.5)
        before = len(saves)
        time.sleep(2.0)
        at_rest = len(saves) - before
        append(tmp_path / "logs" / "access.log", *lines("second", 20))
        wait_until(lambda: set(lines("second", 20)) <= set(delivered(sink)), 20)
        time.sleep(0.5)
    finally:
        tailing.stop()

    assert at_rest <= 1  # 20 at 0.1 s
    assert len(saves) - before > at_rest  # reading again snapshots again


@pytest.mark.timeout(60)
def test_should_save_the_acker_snapshots_of_many_pipelines_in_one_transaction(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit wakes every collector watching the metastore for requests: a hundred
    pipelines' snapshots after their backlog, one transaction each, were a hundred."""
    transactions: list[list[str]] = []
    save = Metastore.save_acker_trees_many

    def counted(self: Metastore, saved: list[tuple[str, str, list[object]]]) -> None:
        transactions.append([pipeline for pipeline, _, _ in saved])
        save(self, saved)  # type: ignore[arg-type]

    monkeypatch.setattr(Metastore, "save_acker_trees_many", counted)
    configs = [
        with_stub_group(
            tmp_path / name, metastore_url, name=name, collector={"acker_snapshot_s": 0.2}
        )
        for name in ("one", "two", "three", "four")
    ]
    for config in configs:
        append(tmp_path / config.name / "logs" / "access.log", *lines(config.name, 20))
    sinks = [RecordingSink("stub") for _ in configs]
    collector = Collector()
    for config, sink in zip(configs, sinks, strict=True):
        collector.add_pipeline(config, metastore, sinks={"stub": sink})
    tailing = tail(collector)
    try:
        wait_until(lambda: all(len(delivered(sink)) >= 20 for sink in sinks), 20)
        wait_until(lambda: any(len(names) == 4 for names in transactions), 10)
    finally:
        tailing.stop()


@pytest.mark.timeout(60)
def test_should_not_look_at_the_files_of_a_pipeline_at_rest_for_each_metrics_snapshot(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot reuses what the last one showed of a pipeline's files while nothing they
    show moved (no size asked of any file); bytes written while at rest show at once."""
    sized: list[str] = []
    size = TrackedFile.size

    def counted(self: TrackedFile) -> int:
        sized.append(self.path)
        return size(self)

    monkeypatch.setattr(TrackedFile, "size", counted)
    config = with_stub_group(tmp_path, metastore_url, pattern="logs/*.log")
    logs = tmp_path / "logs"
    for index in range(5):
        append(logs / f"f{index}.log", *lines(f"f{index}", 5))
    sink = RecordingSink("stub")
    collector = Collector(config, metastore, sinks={"stub": sink})
    tailing = tail(collector)
    try:
        wait_until(lambda: sum(m.lines_read for m in collector.metrics()) == 25, 20)
        time.sleep(0.5)
        collector.metrics()
        before = len(sized)
        for _ in range(10):
            (shown,) = collector.metrics()
        at_rest = len(sized) - before
        append(logs / "f2.log", b"later")
        wait_until(lambda: collector.metrics()[0].lines_read == 26, 10)
        (after,) = collector.metrics()
    finally:
        tailing.stop()

    assert at_rest == 0  # 50 without
    assert shown.unread_bytes == 0 and len(shown.files) == 5
    sizes = {file.path: file.size for file in after.files}
    assert sizes[str(logs / "f2.log")] == (logs / "f2.log").stat().st_size
