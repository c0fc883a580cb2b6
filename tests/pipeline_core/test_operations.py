"""PipelineOperations, the facade the CLI and Airflow call; no Spark (summaries written here)."""

from __future__ import annotations

import json
import shutil
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.errors import CheckpointError, CollectorBusyError, LandingError
from pipeline_core.landing import LANDING_APPLICATION, landing_summary_path
from pipeline_core.metastore import CheckpointFailedError, Metastore
from pipeline_core.operations import CheckpointInfo, CheckpointState, PipelineOperations
from pipeline_core.staging_contract import MANIFEST_NAME
from tests.support.lease_holders import HolderProcess
from tests.support.pipelines import append, write_config

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


@pytest.fixture
def operations(tmp_path: Path, metastore_url: str) -> PipelineOperations:
    return PipelineOperations(write_config(tmp_path, metastore_url))


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "access.log"


def lines(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix} line {i:04d}".encode() for i in range(count)]


def sealed_checkpoint(operations: PipelineOperations, log: Path, count: int) -> CheckpointInfo:
    append(log, *lines("sealed", count))
    (info,) = operations.collect_once().sealed
    return info


def write_summary(operations: PipelineOperations, checkpoint_id: int, summary: Any) -> Path:
    path = landing_summary_path(operations.config, checkpoint_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary))
    return path


# -- checkpoints -------------------------------------------------------------------------------


def test_should_return_the_same_checkpoint_for_a_retried_run(
    operations: PipelineOperations,
) -> None:
    interval = (
        datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
        datetime(2026, 11, 22, 10, 5, tzinfo=UTC),
    )

    first = operations.request_checkpoint("scheduled__2026-11-22T10:00", interval)
    retried = operations.request_checkpoint("scheduled__2026-11-22T10:00", interval)
    other = operations.request_checkpoint("scheduled__2026-11-22T10:05")

    assert retried == first
    assert first.state is CheckpointState.REQUESTED
    assert first.run_id == "scheduled__2026-11-22T10:00"
    assert other.checkpoint_id != first.checkpoint_id
    assert first.staging_dir == operations.config.staging_dir / "web_access" / (
        f"{first.checkpoint_id:08d}"
    )
    assert (first.line_count, first.byte_count, first.batch_ids) == (0, 0, ())


def test_should_raise_for_an_unknown_checkpoint(operations: PipelineOperations) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint 4242"):
        operations.checkpoint(4242)


def test_should_refuse_a_checkpoint_of_another_pipeline(
    tmp_path: Path, metastore_url: str, operations: PipelineOperations
) -> None:
    other = PipelineOperations(write_config(tmp_path, metastore_url, name="other_pipeline"))
    foreign = other.request_checkpoint("run-1").checkpoint_id

    with pytest.raises(CheckpointError, match="belongs to pipeline 'other_pipeline'"):
        operations.checkpoint(foreign)
    assert other.checkpoint(foreign).pipeline == "other_pipeline"


# -- collecting --------------------------------------------------------------------------------


def test_should_collect_once_and_report_the_sealed_checkpoint(
    operations: PipelineOperations, log: Path
) -> None:
    append(log, *lines("a", 25))

    report = operations.collect_once()

    (info,) = report.sealed
    assert info.state is CheckpointState.SEALED
    assert info.line_count == 25
    assert info.byte_count == log.stat().st_size
    assert len(info.batch_ids) == 1
    assert info.sealed_at is not None
    assert (report.files, report.lines, report.bytes) == (1, 25, log.stat().st_size)
    assert operations.checkpoint(info.checkpoint_id) == info


def test_should_seal_the_requested_checkpoint_on_collect(
    operations: PipelineOperations, log: Path
) -> None:
    requested = operations.request_checkpoint("run-1")
    append(log, *lines("a", 3))

    (info,) = operations.collect_once().sealed

    assert info.checkpoint_id == requested.checkpoint_id
    assert info.run_id == "run-1"
    assert info.line_count == 3


def test_should_refuse_to_collect_while_a_collector_holds_the_lease(
    operations: PipelineOperations, metastore: Metastore
) -> None:
    config = operations.config
    metastore.acquire_lease(config.name, config.collector.host, "someone-else", 60)

    assert operations.worker_is_live()
    with pytest.raises(CollectorBusyError, match="someone-else"):
        operations.collect_once()


@pytest.mark.timeout(120)
def test_should_collect_at_once_when_the_lease_holder_was_killed_on_this_machine(
    operations: PipelineOperations, metastore_url: str, log: Path
) -> None:
    config = operations.config
    with HolderProcess(config.collector.host, metastore_url, config.name) as collector:
        assert operations.worker_is_live()

        collector.kill()

        assert not operations.worker_is_live()
        append(log, *lines("after the kill", 3))
        (info,) = operations.collect_once().sealed
    assert info.line_count == 3


def test_should_list_sealed_checkpoints_as_pending_landings(
    operations: PipelineOperations, log: Path
) -> None:
    first = sealed_checkpoint(operations, log, 2)
    second = sealed_checkpoint(operations, log, 3)
    operations.request_checkpoint("still-requested")

    pending = operations.pending_landings()

    assert [p.checkpoint_id for p in pending] == [first.checkpoint_id, second.checkpoint_id]


# -- landing -----------------------------------------------------------------------------------


def test_should_refuse_a_landing_job_for_a_requested_checkpoint(
    operations: PipelineOperations,
) -> None:
    requested = operations.request_checkpoint("run-1")

    with pytest.raises(CheckpointError, match="only sealed"):
        operations.landing_job(requested.checkpoint_id)


def test_should_point_the_landing_job_at_the_checkpoint_and_the_lake(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 2)

    spec = operations.landing_job(info.checkpoint_id)

    assert spec.application == str(LANDING_APPLICATION)
    assert spec.application_args == [
        "--checkpoint-dir",
        str(info.staging_dir),
        "--lake",
        str(operations.config.lake_dir),
        "--hosts",
        operations.config.collector.host,
    ]
    assert info.staging_dir.is_dir()
    assert spec.name == f"sluice-land-web_access-{info.checkpoint_id}"
    assert spec.conf["spark.sql.sources.partitionOverwriteMode"] == "dynamic"
    assert spec.conf["spark.sql.session.timeZone"] == "UTC"
    assert spec.py_files is not None
    with zipfile.ZipFile(spec.py_files) as archive:
        assert {"spark_jobs/land_checkpoint.py", "spark_jobs/staging.py"} <= set(archive.namelist())


def test_should_fail_a_sealed_checkpoint_whose_batch_left_staging(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 3)
    shutil.rmtree(info.staging_dir / "test-host")

    with pytest.raises(CheckpointFailedError, match="recorded batches missing under") as raised:
        operations.landing_job(info.checkpoint_id)

    failed = operations.checkpoint(info.checkpoint_id)
    assert failed.state is CheckpointState.FAILED
    assert failed.error == raised.value.error
    assert failed.error is not None and "test-host" in failed.error
    assert operations.pending_landings() == []
    with pytest.raises(CheckpointFailedError, match="recorded batches missing under"):
        operations.landable(info.checkpoint_id)


def test_should_keep_a_committed_checkpoint_whose_batch_left_staging(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 3)
    write_summary(operations, info.checkpoint_id, {"rows": {"access": 3}, "rejects": {}})
    operations.commit(info.checkpoint_id)
    (info.staging_dir / "test-host" / MANIFEST_NAME).unlink()

    with pytest.raises(LandingError, match="cannot be landed again: recorded batches missing"):
        operations.landing_job(info.checkpoint_id)

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.COMMITTED


def test_should_fail_nothing_while_the_staging_folder_cannot_be_seen(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 3)
    info.staging_dir.parent.rename(info.staging_dir.parent.with_name("elsewhere"))

    spec = operations.landing_job(info.checkpoint_id)  # the landing job says what is wrong

    assert spec.application_args[1] == str(info.staging_dir)
    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED


def test_should_refuse_to_commit_without_a_landing_summary(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 4)

    with pytest.raises(LandingError, match="no landing summary"):
        operations.commit(info.checkpoint_id)

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED


def test_should_refuse_to_commit_an_unreadable_landing_summary(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 4)
    path = landing_summary_path(operations.config, info.checkpoint_id)
    path.parent.mkdir(parents=True)
    path.write_text("{ half written")

    with pytest.raises(LandingError):
        operations.commit(info.checkpoint_id)


def test_should_refuse_to_commit_counts_that_do_not_add_up(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 10)
    write_summary(
        operations, info.checkpoint_id, {"rows": {"access": 8}, "rejects": {"no_match": 1}}
    )

    with pytest.raises(LandingError, match=r"sealed 10 lines .* 8 rows and 1 rejects"):
        operations.commit(info.checkpoint_id)

    after = operations.checkpoint(info.checkpoint_id)
    assert after.state is CheckpointState.SEALED
    assert after.landing == {}


def test_should_commit_a_landed_checkpoint_and_keep_its_counts(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 10)
    summary = {
        "checkpoint_id": info.checkpoint_id,
        "rows": {"access": 7},
        "rejects": {"no_match": 2, "invalid_utf8": 1},
    }
    write_summary(operations, info.checkpoint_id, summary)

    committed = operations.commit(info.checkpoint_id)

    assert committed.state is CheckpointState.COMMITTED
    assert committed.committed_at is not None
    assert committed.landing == summary
    assert operations.checkpoint(info.checkpoint_id).landing == summary
    assert operations.pending_landings() == []


def test_should_commit_a_landed_checkpoint_again(operations: PipelineOperations, log: Path) -> None:
    info = sealed_checkpoint(operations, log, 3)
    write_summary(operations, info.checkpoint_id, {"rows": {"access": 3}, "rejects": {}})
    operations.commit(info.checkpoint_id)

    again = operations.commit(info.checkpoint_id)

    assert again.state is CheckpointState.COMMITTED


# -- status ------------------------------------------------------------------------------------


def test_should_report_files_checkpoints_and_the_lease(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 5)

    status = operations.status()

    assert (status.pipeline, status.host, status.lease_holder) == ("web_access", "test-host", None)
    (record,) = status.files
    assert record.path == str(log)
    assert record.sealed_offset == log.stat().st_size
    assert [c.checkpoint_id for c in status.checkpoints] == [info.checkpoint_id]


def test_should_stop_waiting_for_a_host_whose_collector_lease_lapsed(
    operations: PipelineOperations, metastore_url: str, log: Path
) -> None:
    name = operations.config.name
    metastore = Metastore.open(metastore_url)
    try:
        assert metastore.acquire_lease(name, "dead-host", "dead:1", 0.2)
    finally:
        metastore.close()
    append(log, *lines("a", 10))
    info = operations.request_checkpoint("run-1")
    time.sleep(0.3)  # the dead host's lease lapses

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.REQUESTED
    operations.collect_once()  # no longer waiting for the dead host: this host seals it

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED
