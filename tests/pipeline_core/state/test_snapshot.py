"""The pipeline snapshot against a real metastore, filled by real collections."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pipeline_core.collector import (
    Collector,
    FileMetrics,
    PipelineMetrics,
    QueueMetrics,
    metrics_file,
)
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.metastore import (
    AckerTreeRecord,
    Metastore,
    ReadProgressRecord,
    SinkStateRecord,
)
from pipeline_core.queues import QueueStats
from pipeline_core.source import FileRecord
from pipeline_core.state import (
    ACKER_TREES_NOT_STORED,
    QUEUE_DEPTHS_NOT_REPORTED,
    READ_PROGRESS_NOT_STORED,
    DagRunSnapshot,
    FileStatus,
    PipelineSnapshot,
    PipelineSummary,
    checkpoint_of_run,
    find_pipeline,
    pipeline_configs,
    take_snapshot,
    take_snapshots,
)
from pipeline_core.state._files import _signature_matches as signature_matches
from pipeline_core.testing import append, lines
from tests.support.file_names import FORGING, FORGING_SHOWN, NOT_UTF8, NOT_UTF8_SHOWN, named
from tests.support.pipelines import write_config

HOST = "test-host"  # what tests.support.pipelines configures


def size(written: list[bytes]) -> int:
    """Bytes ``append`` writes for ``written`` (a newline after each line)."""
    return sum(len(line) + 1 for line in written)


@pytest.fixture
def config_path(tmp_path: Path, metastore_url: str) -> Path:
    return write_config(tmp_path, metastore_url)


@pytest.fixture
def config(config_path: Path) -> PipelineConfig:
    return load_pipeline_config(config_path)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def collect(config: PipelineConfig) -> list[int]:
    metastore = Metastore.open(config.metastore_url)
    try:
        return [s.checkpoint_id for s in Collector(config, metastore).run_once().sealed]
    finally:
        metastore.close()


def by_path(snapshot: PipelineSnapshot) -> dict[str, tuple[FileStatus, int | None]]:
    return {f.path: (f.state, f.unread_bytes) for f in snapshot.files}


@pytest.mark.timeout(60)
def test_should_count_the_bytes_appended_since_the_last_seal_as_unread(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 50))
    append(logs / "access.log.1", *lines("b", 30))
    collect(config)
    sealed = take_snapshot(config_path)
    assert {f.unread_bytes for f in sealed.files} == {0}

    append(logs / "access.log", b"one more line", b"and another")

    snapshot = take_snapshot(config_path)
    assert by_path(snapshot) == {
        str(logs / "access.log"): (FileStatus.LIVE, len(b"one more line\nand another\n")),
        str(logs / "access.log.1"): (FileStatus.LIVE, 0),
    }
    assert snapshot.unread_bytes == 26
    assert snapshot.unmeasured_files == 0
    access = next(f for f in snapshot.files if f.path.endswith("access.log"))
    assert access.size == (logs / "access.log").stat().st_size
    assert access.sealed_offset == access.size - 26
    assert access.fingerprint is not None and access.host == HOST


@pytest.mark.timeout(60)
def test_should_list_files_never_sealed_as_untracked_with_all_their_bytes_unread(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 10))

    before = take_snapshot(config_path)

    assert before.error is None
    assert by_path(before) == {
        str(logs / "access.log"): (FileStatus.UNTRACKED, size(lines("a", 10)))
    }
    assert before.checkpoints == []
    assert before.notes[0] == "metastore: not created yet (the pipeline has not run)"

    collect(config)
    append(logs / "access.log.1", *lines("new", 2))

    assert by_path(take_snapshot(config_path)) == {
        str(logs / "access.log"): (FileStatus.LIVE, 0),
        str(logs / "access.log.1"): (FileStatus.UNTRACKED, size(lines("new", 2))),
    }


def test_should_never_create_a_sqlite_metastore(tmp_path: Path) -> None:
    database = tmp_path / "state" / "sluice.db"
    config_path = write_config(tmp_path, f"sqlite:///{database}")

    snapshot = take_snapshot(config_path)

    assert snapshot.error is None
    assert not database.exists() and not database.parent.exists()


@pytest.mark.timeout(60)
def test_should_follow_a_rotated_file_to_its_new_name(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 10))
    collect(config)
    os.rename(logs / "access.log", logs / "access.log.1")
    append(logs / "access.log.1", b"written after the rename")

    (rotated,) = take_snapshot(config_path).files

    assert rotated.path == str(logs / "access.log")
    assert rotated.current_path == str(logs / "access.log.1")
    assert rotated.unread_bytes == len(b"written after the rename\n")


@pytest.mark.timeout(60)
def test_should_not_measure_an_inode_that_now_holds_other_content(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 10))
    collect(config)
    with open(logs / "access.log", "r+b") as handle:  # same inode, first bytes rewritten
        handle.write(b"X")

    (rewritten,) = [f for f in take_snapshot(config_path).files if f.fingerprint]

    assert rewritten.unread_bytes is None and rewritten.size is None
    assert rewritten.note is not None and "other content" in rewritten.note


@pytest.mark.timeout(60)
def test_should_not_measure_files_of_another_collector_host(
    tmp_path: Path, metastore_url: str, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 10))
    collect(config)
    elsewhere = write_config(
        tmp_path / "elsewhere",
        metastore_url,
        pattern="../logs/access.log*",
        collector={"host": "other-host"},
    )

    snapshot = take_snapshot(elsewhere)

    tracked = [f for f in snapshot.files if f.host == HOST]
    assert [(f.unread_bytes, f.note) for f in tracked] == [
        (None, "on host test-host: not measured here")
    ]
    assert snapshot.unmeasured_files == 1


def two_checkpoints(config: PipelineConfig, logs: Path) -> tuple[int, int]:
    """Two checkpoints collected and sealed: 10 lines, then 4."""
    append(logs / "access.log", *lines("a", 10))
    (first,) = collect(config)
    append(logs / "access.log", *lines("b", 4))
    (second,) = collect(config)
    return first, second


@pytest.mark.timeout(60)
def test_should_show_checkpoints_newest_first_with_batches_and_landing_counts(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    first, second = two_checkpoints(config, logs)
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.commit_checkpoint(
            first,
            {
                "rows": {"access": 9},
                "rejects": {"no_match": 1},
                "snapshots": {"access": 41, "_rejects": None},
            },
        )
    finally:
        metastore.close()

    snapshot = take_snapshot(config_path)

    assert [c.checkpoint_id for c in snapshot.checkpoints] == [second, first]
    newest, oldest = snapshot.checkpoints
    assert (newest.state, newest.lines, newest.landing_rows) == ("sealed", 4, None)
    assert (oldest.state, oldest.lines, oldest.bytes) == ("committed", 10, size(lines("a", 10)))
    assert (oldest.landing_rows, oldest.landing_rejects) == (9, 1)
    assert oldest.landing_snapshots == {"access": 41, "_rejects": None}
    assert newest.landing_snapshots == {}
    assert oldest.committed_at is not None and oldest.committed_at.tzinfo is not None
    (batch,) = oldest.batches
    assert (batch.host, batch.lines, batch.bytes) == (HOST, 10, size(lines("a", 10)))
    assert [c.checkpoint_id for c in take_snapshot(config_path, limit=1).checkpoints] == [second]


@pytest.mark.timeout(60)
def test_should_join_each_checkpoint_to_the_dag_run_that_requested_it(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.request_checkpoint(config.name, run_id="manual__1")
    finally:
        metastore.close()
    append(logs / "access.log", *lines("a", 3))
    (sealed,) = collect(config)
    asked: list[tuple[str, list[str]]] = []

    def dag_runs(dag_id: str, run_ids: Sequence[str]) -> Mapping[str, DagRunSnapshot]:
        asked.append((dag_id, list(run_ids)))
        return {"manual__1": DagRunSnapshot(dag_id=dag_id, run_id="manual__1", state="failed")}

    (checkpoint,) = take_snapshot(config_path, dag_runs=dag_runs).checkpoints

    assert asked == [("sluice_web_access", ["manual__1"])]
    assert checkpoint.checkpoint_id == sealed and checkpoint.run_id == "manual__1"
    assert checkpoint.dag_run is not None and checkpoint.dag_run.state == "failed"
    found = checkpoint_of_run(config, "manual__1")
    assert found is not None and found.checkpoint_id == sealed and found.lines == 3
    assert checkpoint_of_run(config, "manual__2") is None


@pytest.mark.timeout(60)
def test_should_say_so_when_the_dag_runs_cannot_be_read(
    config_path: Path, config: PipelineConfig
) -> None:
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.request_checkpoint(config.name, run_id="manual__1")
    finally:
        metastore.close()

    def broken(dag_id: str, run_ids: Sequence[str]) -> Mapping[str, DagRunSnapshot]:
        raise RuntimeError("no airflow database here")

    snapshot = take_snapshot(config_path, dag_runs=broken)

    assert snapshot.checkpoints[0].dag_run is None
    assert "DAG runs: could not be read from Airflow (no airflow database here)" in snapshot.notes


def test_should_show_each_sinks_stored_penalty(config_path: Path, config: PipelineConfig) -> None:
    now = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.save_sink_states(
            config.name,
            HOST,
            [
                SinkStateRecord(
                    "lake", "lake", 3, now.timestamp() + 20, now.timestamp() - 1, "boom"
                ),
                SinkStateRecord("gone", "old_http", 1, 0.0, now.timestamp() - 60, "refused"),
            ],
        )
    finally:
        metastore.close()

    groups = {g.name: g for g in take_snapshot(config_path, now=now).sink_groups}

    (lake,) = groups["lake"].sinks
    assert groups["lake"].processor == "default"
    assert (lake.type, lake.host, lake.consecutive_failures, lake.last_error) == (
        "handoff",
        HOST,
        3,
        "boom",
    )
    assert lake.penalty_remaining_s == pytest.approx(20)
    assert lake.excluded_until is not None and lake.excluded_until.timestamp() == pytest.approx(
        now.timestamp() + 20
    )
    (old,) = groups["gone"].sinks
    assert groups["gone"].processor is None and old.type is None
    assert (old.excluded_until, old.penalty_remaining_s) == (None, 0.0)


def test_should_show_a_sink_without_stored_state_as_healthy(config_path: Path) -> None:
    (group,) = take_snapshot(config_path).sink_groups

    (sink,) = group.sinks
    assert (sink.name, sink.host, sink.consecutive_failures, sink.excluded_until) == (
        "lake",
        None,
        0,
        None,
    )


def test_should_show_leases_and_whether_they_are_live(
    config_path: Path, config: PipelineConfig
) -> None:
    metastore = Metastore.open(config.metastore_url)
    try:
        assert metastore.acquire_lease(config.name, HOST, "worker-1", ttl=60)
        assert metastore.acquire_lease(config.name, "old-host", "worker-0", ttl=0.01)
    finally:
        metastore.close()
    time.sleep(0.05)

    leases = {lease.host: lease for lease in take_snapshot(config_path).leases}

    assert (leases[HOST].holder, leases[HOST].live) == ("worker-1", True)
    assert (leases["old-host"].holder, leases["old-host"].live) == ("worker-0", False)
    summary = PipelineSummary.of(take_snapshot(config_path))
    assert summary.live_leases == 1


def test_should_sum_the_saved_acker_trees_per_host(
    config_path: Path, config: PipelineConfig
) -> None:
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.save_acker_trees(
            config.name,
            HOST,
            [
                AckerTreeRecord(1, 7, "access", "f1", 0, 100, 4),
                AckerTreeRecord(2, 9, "access", "f1", 100, 150, 2),
            ],
        )
    finally:
        metastore.close()

    snapshot = take_snapshot(config_path)

    (trees,) = snapshot.acker_trees
    assert (trees.host, trees.trees, trees.lines, trees.bytes) == (HOST, 2, 6, 150)
    assert ACKER_TREES_NOT_STORED not in snapshot.notes


@pytest.mark.timeout(60)
def test_should_time_each_checkpoint_from_request_to_seal_to_commit(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    first, second = two_checkpoints(config, logs)
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.commit_checkpoint(first, {"rows": {"access": 10}, "rejects": {}})
        requested = metastore.request_checkpoint(config.name)
    finally:
        metastore.close()

    newest, sealed, committed = take_snapshot(config_path).checkpoints

    assert committed.sealed_at is not None and committed.committed_at is not None
    assert (
        committed.seal_latency_s == (committed.sealed_at - committed.requested_at).total_seconds()
    )
    assert (
        committed.commit_latency_s == (committed.committed_at - committed.sealed_at).total_seconds()
    )
    assert committed.seal_latency_s >= 0 and committed.commit_latency_s > 0
    assert sealed.checkpoint_id == second and sealed.seal_latency_s is not None
    assert sealed.commit_latency_s is None
    assert newest.checkpoint_id == requested.checkpoint_id
    assert (newest.seal_latency_s, newest.commit_latency_s) == (None, None)
    assert newest.to_dict()["seal_latency_s"] is None
    assert committed.to_dict()["commit_latency_s"] == committed.commit_latency_s


@pytest.mark.timeout(60)
def test_should_show_the_read_progress_of_the_window_asked_for(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 40))
    collect(config)
    metastore = Metastore.open(config.metastore_url)
    try:
        metastore.record_read_progress(
            config.name,
            ReadProgressRecord(
                "web-2", datetime.now(timezone.utc) - timedelta(hours=3), 30.0, 600, 6, 10
            ),
        )
    finally:
        metastore.close()

    day = take_snapshot(config_path)
    hour = take_snapshot(config_path, progress_window=timedelta(hours=1))

    assert {s.host for s in day.read_progress} == {HOST, "web-2"}
    assert {s.host for s in hour.read_progress} == {HOST}
    assert sum(s.bytes_read for s in hour.read_progress) == size(lines("a", 40))
    assert hour.read_progress[-1].unread_bytes == 0
    assert hour.read_progress_since == hour.taken_at - timedelta(hours=1)
    web_2 = next(s for s in day.read_progress if s.host == "web-2")
    assert web_2.bytes_per_s == 20.0
    assert READ_PROGRESS_NOT_STORED not in day.notes


def test_should_report_queue_depths_only_when_a_running_collector_gives_them(
    config_path: Path,
) -> None:
    unreported = take_snapshot(config_path)
    assert [
        (q.name, q.high_watermark, q.low_watermark, q.depth) for q in unreported.stage_queues
    ] == [
        ("process", 4, 2, None),
        ("send", 4, 2, None),
    ]
    assert QUEUE_DEPTHS_NOT_REPORTED in unreported.notes

    stats = {
        "process": QueueStats(
            size=5,
            high=16,
            low=10,
            writable=True,
            pushes=9,
            urgent_pushes=0,
            refusals=0,
            pops=4,
            feedbacks=0,
        ),
    }
    reported = take_snapshot(config_path, stage_stats=stats)

    assert [q.depth for q in reported.stage_queues] == [5, None]
    assert QUEUE_DEPTHS_NOT_REPORTED not in reported.notes


@pytest.mark.timeout(60)
def test_should_serialise_to_plain_json(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 3))
    collect(config)

    document = json.loads(json.dumps(take_snapshot(config_path).to_dict()))

    assert document["name"] == "web_access" and document["dag_id"] == "sluice_web_access"
    assert document["files"][0]["state"] == "live"
    assert isinstance(document["checkpoints"][0]["requested_at"], str)


@pytest.mark.timeout(60)
def test_should_show_file_names_escaped_and_serialise_them_to_json(
    tmp_path: Path, metastore_url: str
) -> None:
    """A name that is not UTF-8, or that holds control characters, is shown escaped: in the
    snapshot and in its JSON form, untracked and tracked alike."""
    config_path = write_config(tmp_path, metastore_url, pattern="logs/*.log")
    logs = tmp_path / "logs"
    append(named(logs, NOT_UTF8), *lines("a", 3))
    append(named(logs, FORGING), *lines("b", 2))
    bad, forging = str(logs / NOT_UTF8_SHOWN), str(logs / FORGING_SHOWN)

    before = take_snapshot(config_path)
    before_json = json.loads(before.model_dump_json())  # as the state page's JSON API sends it
    collect(load_pipeline_config(config_path))
    append(named(logs, NOT_UTF8), *lines("c", 1))
    after = take_snapshot(config_path)
    after_json = json.loads(after.model_dump_json())

    assert by_path(before) == {
        bad: (FileStatus.UNTRACKED, size(lines("a", 3))),
        forging: (FileStatus.UNTRACKED, size(lines("b", 2))),
    }
    assert by_path(after) == {
        bad: (FileStatus.LIVE, size(lines("c", 1))),
        forging: (FileStatus.LIVE, 0),
    }
    assert {f.current_path for f in after.files} == {bad, forging}
    for document in (before_json, after_json):
        assert sorted(f["path"] for f in document["files"]) == sorted([bad, forging])


def test_should_report_a_broken_config_instead_of_raising(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\nsources: 3\n")

    snapshot = take_snapshot(broken)

    assert snapshot.name == "broken" and snapshot.dag_id == "sluice_broken"
    assert snapshot.error is not None and "sources" in snapshot.error


def test_should_report_an_unreachable_metastore_instead_of_raising(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, "postgresql+psycopg://nobody@127.0.0.1:9/none")

    snapshot = take_snapshot(config_path)

    assert snapshot.error is not None and snapshot.error.startswith("cannot read the metastore")
    assert snapshot.checkpoints == [] and snapshot.stage_queues


def test_should_find_the_pipelines_the_dag_factory_finds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sluice.db'}"
    write_config(tmp_path, url, name="web_access")
    write_config(tmp_path, url, name="app_events")
    (tmp_path / "Not-A-Pipeline.yaml").write_text("name: x\n")
    renamed = write_config(tmp_path, url, name="declared")
    renamed.rename(tmp_path / "file_name.yaml")

    assert [p.name for p in pipeline_configs(tmp_path)] == [
        "app_events.yaml",
        "file_name.yaml",
        "web_access.yaml",
    ]
    assert find_pipeline("declared", tmp_path) == tmp_path / "file_name.yaml"
    assert find_pipeline("file_name", tmp_path) is None
    snapshots = take_snapshots(tmp_path, names=["web_access", "declared"])
    assert [s.name for s in snapshots] == ["declared", "web_access"]
    assert pipeline_configs(tmp_path / "missing") == []


def test_should_read_the_pipelines_folder_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, f"sqlite:///{tmp_path / 'sluice.db'}")
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(tmp_path))

    assert [s.name for s in take_snapshots()] == ["web_access"]


@pytest.mark.timeout(60)
def test_should_show_what_a_running_collector_last_reported_while_it_is_fresh(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 10))
    collect(config)
    append(logs / "access.log", *lines("b", 5))
    (tracked,) = take_snapshot(config_path).files
    assert tracked.fingerprint is not None
    report = PipelineMetrics(
        pipeline=config.name,
        host=HOST,
        state="running",
        priority=0,
        lines_read=13,
        bytes_read=tracked.sealed_offset + 20,
        bytes_sent=tracked.sealed_offset,
        blocked_seconds=0.5,
        trees_in_flight=2,
        trees_replayed=1,
        truncated_unread_bytes=0,
        queues={
            "process": QueueMetrics(3, 16, 10, True, 0),
            "send": QueueMetrics(16, 16, 10, False, 4),
        },
        sink_groups=(),
        files=(
            FileMetrics(
                path=tracked.path,
                fingerprint=tracked.fingerprint,
                state="live",
                size=tracked.size or 0,
                read_offset=tracked.sealed_offset + 20,
                sealed_offset=tracked.sealed_offset,
                committed_offset=None,
            ),
        ),
    )
    report_file = metrics_file(config.data_dir, config.name)
    report_file.parent.mkdir(parents=True)
    report_file.write_text(json.dumps(report.to_dict()))

    live = take_snapshot(config_path)

    assert live.collector is not None
    assert (live.collector.state, live.collector.trees_in_flight) == ("running", 2)
    assert [(q.name, q.depth) for q in live.stage_queues] == [("process", 3), ("send", 16)]
    assert live.files[0].read_offset == tracked.sealed_offset + 20
    assert live.files[0].unread_bytes == tracked.unread_bytes  # still what no batch covers
    assert QUEUE_DEPTHS_NOT_REPORTED not in live.notes

    an_hour_ago = time.time() - 3600
    os.utime(report_file, (an_hour_ago, an_hour_ago))
    stale = take_snapshot(config_path)

    assert stale.collector is None and stale.files[0].read_offset is None
    assert [q.depth for q in stale.stage_queues] == [None, None]
    assert QUEUE_DEPTHS_NOT_REPORTED in stale.notes


@pytest.mark.timeout(30)
def test_should_neither_block_on_nor_read_a_fifo_swapped_in_at_a_files_path(
    config_path: Path, config: PipelineConfig, logs: Path
) -> None:
    """A FIFO put in a tracked file's place between its ``stat`` and its opening (the race
    the page cannot close) is refused at once: it never holds a request of the page."""
    append(logs / "access.log", *lines("a", 10))
    collect(config)
    (row,) = _file_rows(config)
    os.unlink(logs / "access.log")
    os.mkfifo(logs / "access.log")
    answers: list[bool] = []

    looking = threading.Thread(target=lambda: answers.append(signature_matches(row.path, row)))
    looking.start()
    looking.join(timeout=10)

    assert not looking.is_alive(), "opening the FIFO blocked"
    assert answers == [False]


def _file_rows(config: PipelineConfig) -> list[FileRecord]:
    metastore = Metastore.open(config.metastore_url)
    try:
        return metastore.files(config.name, HOST)
    finally:
        metastore.close()
