"""PipelineOperations, the facade the CLI and Airflow call; no Spark (what a landing job
commits is appended to the lake tables here, and spark-submit is replaced where it is called)."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import time
import zipfile
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.errors import CheckpointError, CollectorBusyError, LandingError
from pipeline_core.lake import REJECTS_TABLE, LandingMode, lake_location
from pipeline_core.landing import LANDING_APPLICATION
from pipeline_core.metastore import BatchRecord, CheckpointFailedError, Metastore, MetastoreView
from pipeline_core.operations import (
    CheckpointInfo,
    CheckpointState,
    PipelineOperations,
    open_pipeline,
)
from pipeline_core.staging_contract import LAKE_SQL_CONF, MANIFEST_NAME
from pipeline_core.testing import append, lines, table_rows
from tests.support.lake import append_rows
from tests.support.lease_holders import HolderProcess
from tests.support.object_store import S3Bucket
from tests.support.pipelines import write_config

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


def sealed_checkpoint(operations: PipelineOperations, log: Path, count: int) -> CheckpointInfo:
    append(log, *lines("sealed", count))
    (info,) = operations.collect_once().sealed
    return info


def land_rows(
    operations: PipelineOperations,
    checkpoint_id: int,
    rows: int,
    rejects: dict[str, int] | None = None,
) -> dict[str, int | None]:
    """Commit ``rows`` rows of ``checkpoint_id`` into the ``access`` table and ``rejects``
    (lines per reason) into ``_rejects``, as its landing job would; each table's snapshot."""
    lake = lake_location(operations.config)
    fingerprint = f"{checkpoint_id:016x}"
    when = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    common = {"file_fingerprint": fingerprint, "host": "test-host", "checkpoint_id": checkpoint_id}
    snapshots = {}
    if rows:
        snapshots["access"] = append_rows(
            lake,
            "access",
            [
                {**common, "event_id": f"{fingerprint}:{i}", "byte_offset": i, "event_time": when}
                for i in range(rows)
            ],
            "nginx_combined",
        )
    reasons = [reason for reason, count in (rejects or {}).items() for _ in range(count)]
    if reasons:
        snapshots[REJECTS_TABLE] = append_rows(
            lake,
            REJECTS_TABLE,
            [
                {**common, "event_id": f"{fingerprint}:{rows + i}", "byte_offset": rows + i,
                 "source": "access", "raw_line": "?", "reason": reason, "sealed_at": when}
                for i, reason in enumerate(reasons)
            ],
        )  # fmt: skip
    return snapshots


def commit_landed(operations: PipelineOperations, info: CheckpointInfo) -> CheckpointInfo:
    """Land every line of ``info`` as a row and commit it."""
    land_rows(operations, info.checkpoint_id, info.line_count)
    (committed,) = operations.commit([info.checkpoint_id])
    return committed


# -- checkpoints -------------------------------------------------------------------------------


def test_should_return_the_same_checkpoint_for_a_retried_run(
    operations: PipelineOperations,
) -> None:
    interval = (
        datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc),
        datetime(2026, 11, 22, 10, 5, tzinfo=timezone.utc),
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


def test_should_hold_one_metastore_for_a_block_and_close_it_on_leaving(
    tmp_path: Path, metastore_url: str
) -> None:
    with open_pipeline(write_config(tmp_path, metastore_url)) as pipeline:
        with pipeline.context.metastore() as first, pipeline.context.metastore() as second:
            assert first is second
        requested = pipeline.request_checkpoint("run-1")
        assert pipeline.checkpoint(requested.checkpoint_id) == requested
        with pipeline.context.metastore() as again:
            assert again is first
    with pipeline.context.metastore() as outside:
        assert outside is not first  # a metastore of its own, per call, after the block
    assert pipeline.checkpoint(requested.checkpoint_id) == requested


def test_should_keep_the_outer_blocks_metastore_through_a_nested_block(
    tmp_path: Path, metastore_url: str
) -> None:
    with open_pipeline(write_config(tmp_path, metastore_url)) as pipeline:
        with pipeline.context.metastore() as outer:
            pass
        with pipeline, pipeline.context.metastore() as inner:
            assert inner is outer
        with pipeline.context.metastore() as after_inner:
            assert after_inner is outer  # still held: the outer block has not ended
        assert pipeline.request_checkpoint("run-1").state is CheckpointState.REQUESTED
    with pipeline.context.metastore() as outside:
        assert outside is not outer


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


# -- landing jobs ------------------------------------------------------------------------------


def test_should_refuse_a_landing_job_for_a_requested_checkpoint(
    operations: PipelineOperations,
) -> None:
    requested = operations.request_checkpoint("run-1")

    with pytest.raises(CheckpointError, match="only sealed"):
        operations.landing_job([requested.checkpoint_id], "run-1")


def test_should_point_the_landing_job_at_the_checkpoint_and_the_lake(
    operations: PipelineOperations, log: Path, metastore_url: str
) -> None:
    info = sealed_checkpoint(operations, log, 2)

    spec = operations.landing_job([info.checkpoint_id], "scheduled__1")

    assert spec is not None
    assert spec.application == str(LANDING_APPLICATION)
    assert spec.application_args == [
        "--checkpoint",
        f"{info.staging_dir}=test-host",
        "--lake",
        str(operations.config.lake_dir),
        "--namespace",
        "web_access",
        "--landing-id",
        "scheduled__1",
        "--mode",
        "append",
    ]
    assert info.staging_dir.is_dir()
    assert spec.name == f"sluice-land-web_access-{info.checkpoint_id}"
    assert LAKE_SQL_CONF.items() <= spec.conf.items()
    assert spec.env_vars["SLUICE_METASTORE_URL"] == metastore_url
    assert METASTORE_URL_ENV not in spec.application_args
    assert spec.py_files is not None
    with zipfile.ZipFile(spec.py_files) as archive:
        assert {
            "spark_jobs/land.py",
            "spark_jobs/staging.py",
            "pipeline_core/lake/_commits.py",
            "pipeline_core/staging_contract/_layout.py",
        } <= set(archive.namelist())


def test_should_land_several_checkpoints_in_one_job(
    operations: PipelineOperations, log: Path
) -> None:
    first = sealed_checkpoint(operations, log, 2)
    second = sealed_checkpoint(operations, log, 3)
    commit_landed(operations, first)

    spec = operations.landing_job(
        [second.checkpoint_id, first.checkpoint_id, second.checkpoint_id],
        "manual__reprocess",
        LandingMode.REPLACE,
    )

    assert spec is not None
    options = spec.application_args[4:]
    arguments = dict(zip(options[::2], options[1::2], strict=True))
    assert spec.application_args[:4] == [
        "--checkpoint",
        f"{second.staging_dir}=test-host",
        "--checkpoint",
        f"{first.staging_dir}=test-host",
    ]
    assert (arguments["--landing-id"], arguments["--mode"]) == ("manual__reprocess", "replace")
    assert spec.name == f"sluice-land-web_access-{first.checkpoint_id}-{second.checkpoint_id}"


def test_should_have_no_landing_job_for_no_checkpoint(operations: PipelineOperations) -> None:
    assert operations.landing_job([], "run-1") is None


def test_should_fail_a_sealed_checkpoint_whose_batch_left_staging(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 3)
    shutil.rmtree(info.staging_dir / "test-host")

    with pytest.raises(CheckpointFailedError, match="recorded batches missing under") as raised:
        operations.landing_job([info.checkpoint_id], "run-1")

    failed = operations.checkpoint(info.checkpoint_id)
    assert failed.state is CheckpointState.FAILED
    assert failed.error == raised.value.error
    assert failed.error is not None and "test-host" in failed.error
    assert operations.pending_landings() == []
    with pytest.raises(CheckpointFailedError, match="recorded batches missing under"):
        operations.landable(info.checkpoint_id)


def test_should_leave_out_a_committed_checkpoint_whose_staging_was_removed(
    operations: PipelineOperations, log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    committed = commit_landed(operations, sealed_checkpoint(operations, log, 3))
    sealed = sealed_checkpoint(operations, log, 2)
    shutil.rmtree(committed.staging_dir)

    with caplog.at_level(logging.WARNING, logger="pipeline_core.landing._pipeline_landing"):
        alone = operations.landing_job(
            [committed.checkpoint_id], "reprocess-1", LandingMode.REPLACE
        )
        both = operations.landing_job([committed.checkpoint_id, sealed.checkpoint_id], "run-2")

    assert alone is None
    assert both is not None
    assert both.application_args[:2] == ["--checkpoint", f"{sealed.staging_dir}=test-host"]
    assert "--checkpoint" not in both.application_args[2:]
    assert both.name == f"sluice-land-web_access-{sealed.checkpoint_id}"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(
        f"checkpoint {committed.checkpoint_id} is not landed again: recorded batches missing"
        in warning
        for warning in warnings
    )
    after = operations.checkpoint(committed.checkpoint_id)
    assert (after.state, after.landing) == (CheckpointState.COMMITTED, committed.landing)


def test_should_fail_a_sealed_checkpoint_with_a_missing_batch_beside_a_committed_one(
    operations: PipelineOperations, log: Path
) -> None:
    committed = commit_landed(operations, sealed_checkpoint(operations, log, 3))
    broken = sealed_checkpoint(operations, log, 2)
    shutil.rmtree(committed.staging_dir)
    (broken.staging_dir / "test-host" / MANIFEST_NAME).unlink()

    with pytest.raises(CheckpointFailedError, match="recorded batches missing under"):
        operations.landing_job([committed.checkpoint_id, broken.checkpoint_id], "run-2")

    assert operations.checkpoint(broken.checkpoint_id).state is CheckpointState.FAILED
    assert operations.checkpoint(committed.checkpoint_id).state is CheckpointState.COMMITTED


def test_should_fail_nothing_while_the_staging_folder_cannot_be_seen(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 3)
    info.staging_dir.parent.rename(info.staging_dir.parent.with_name("elsewhere"))

    spec = operations.landing_job([info.checkpoint_id], "run-1")  # the job says what is wrong

    assert spec is not None
    assert spec.application_args[1] == f"{info.staging_dir}=test-host"
    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED


# -- committing ----------------------------------------------------------------------------------


def test_should_refuse_to_commit_what_the_lake_does_not_hold(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 4)

    with pytest.raises(LandingError, match=r"sealed 4 lines .* hold 0 rows and 0 rejects"):
        operations.commit([info.checkpoint_id])

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED


def test_should_refuse_to_commit_counts_that_do_not_add_up(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 10)
    land_rows(operations, info.checkpoint_id, 8, {"no_match": 1})

    with pytest.raises(LandingError, match=r"sealed 10 lines .* 8 rows and 1 rejects"):
        operations.commit([info.checkpoint_id])

    after = operations.checkpoint(info.checkpoint_id)
    assert after.state is CheckpointState.SEALED
    assert after.landing == {}


def test_should_refuse_to_commit_a_checkpoint_landed_into_some_tables_only(
    operations: PipelineOperations, log: Path
) -> None:
    """A landing that committed its rows but died before committing its rejects."""
    info = sealed_checkpoint(operations, log, 10)
    land_rows(operations, info.checkpoint_id, 7)

    with pytest.raises(LandingError, match=r"sealed 10 lines .* 7 rows and 0 rejects"):
        operations.commit([info.checkpoint_id])

    land_rows(operations, info.checkpoint_id, 0, {"no_match": 3})
    (committed,) = operations.commit([info.checkpoint_id])
    assert committed.state is CheckpointState.COMMITTED


def test_should_commit_a_landed_checkpoint_with_what_the_lake_holds_of_it(
    operations: PipelineOperations, log: Path
) -> None:
    info = sealed_checkpoint(operations, log, 10)
    snapshots = land_rows(operations, info.checkpoint_id, 7, {"no_match": 2, "invalid_utf8": 1})

    (committed,) = operations.commit([info.checkpoint_id])

    expected = {
        "checkpoint_id": info.checkpoint_id,
        "rows": {"access": 7},
        "rejects": {"no_match": 2, "invalid_utf8": 1},
        "snapshots": snapshots,
        "input_lines": 10,
    }
    assert committed.state is CheckpointState.COMMITTED
    assert committed.committed_at is not None
    assert committed.landing == expected
    assert (committed.landed.rows, committed.landed.rejects) == (7, 3)
    assert operations.checkpoint(info.checkpoint_id).landing == expected
    assert operations.pending_landings() == []


def test_should_commit_several_checkpoints_or_none_of_them(
    operations: PipelineOperations, log: Path
) -> None:
    first = sealed_checkpoint(operations, log, 3)
    second = sealed_checkpoint(operations, log, 4)
    third = sealed_checkpoint(operations, log, 5)
    land_rows(operations, first.checkpoint_id, 3)
    land_rows(operations, second.checkpoint_id, 4)

    with pytest.raises(LandingError, match=f"checkpoint {third.checkpoint_id} sealed 5 lines"):
        operations.commit([first.checkpoint_id, second.checkpoint_id, third.checkpoint_id])
    assert [info.state for info in operations.pending_landings()] == [CheckpointState.SEALED] * 3

    committed = operations.commit([second.checkpoint_id, first.checkpoint_id, second.checkpoint_id])

    assert [(info.checkpoint_id, info.state) for info in committed] == [
        (second.checkpoint_id, CheckpointState.COMMITTED),
        (first.checkpoint_id, CheckpointState.COMMITTED),
    ]
    assert [info.landing["rows"] for info in committed] == [{"access": 4}, {"access": 3}]
    assert [info.checkpoint_id for info in operations.pending_landings()] == [third.checkpoint_id]


def test_should_commit_a_landed_checkpoint_again(operations: PipelineOperations, log: Path) -> None:
    info = sealed_checkpoint(operations, log, 3)
    first = commit_landed(operations, info)

    (again,) = operations.commit([info.checkpoint_id])

    assert again.state is CheckpointState.COMMITTED
    assert again.landing == first.landing


# -- land: spark-submit and commit ---------------------------------------------------------------


@pytest.fixture
def spark_submits(
    monkeypatch: pytest.MonkeyPatch, operations: PipelineOperations
) -> list[dict[str, Any]]:
    """spark-submit replaced by a job that lands every line of each checkpoint it is given as
    a row; what it was given, one entry per submit."""
    submitted: list[dict[str, Any]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        arguments = list(self._application_args or [])
        folders = [value for flag, value in itertools.pairwise(arguments) if flag == "--checkpoint"]
        submitted.append({"application": application, "arguments": arguments})
        for folder in folders:
            info = operations.checkpoint(int(Path(folder.partition("=")[0]).name))
            land_rows(operations, info.checkpoint_id, info.line_count)

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return submitted


def test_should_land_checkpoints_in_one_spark_submit_and_commit_them(
    operations: PipelineOperations, log: Path, spark_submits: list[dict[str, Any]]
) -> None:
    first = sealed_checkpoint(operations, log, 3)
    second = sealed_checkpoint(operations, log, 4)

    landed = operations.land([first.checkpoint_id, second.checkpoint_id], landing_id="run-9")

    [job] = spark_submits
    assert job["application"] == str(LANDING_APPLICATION)
    assert job["arguments"][-4:] == ["--landing-id", "run-9", "--mode", "append"]
    assert [(info.checkpoint_id, info.state) for info in landed] == [
        (first.checkpoint_id, CheckpointState.COMMITTED),
        (second.checkpoint_id, CheckpointState.COMMITTED),
    ]
    assert [info.landing["rows"] for info in landed] == [{"access": 3}, {"access": 4}]
    assert table_rows(lake_location(operations.config), "access").num_rows == 7


def test_should_commit_nothing_when_the_landing_job_fails(
    operations: PipelineOperations, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = sealed_checkpoint(operations, log, 3)

    def fail(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        raise RuntimeError("spark-submit exited with 1")

    monkeypatch.setattr(SparkSubmitHook, "submit", fail)

    with pytest.raises(LandingError, match=r"landing checkpoints \[\d+\] failed: spark-submit"):
        operations.land([info.checkpoint_id], mode=LandingMode.REPLACE)

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED


def test_should_submit_nothing_when_nothing_is_left_to_land(
    operations: PipelineOperations, log: Path, spark_submits: list[dict[str, Any]]
) -> None:
    committed = commit_landed(operations, sealed_checkpoint(operations, log, 3))
    shutil.rmtree(committed.staging_dir)

    (again,) = operations.land([committed.checkpoint_id], mode=LandingMode.REPLACE)

    assert spark_submits == []
    assert (again.state, again.landing) == (CheckpointState.COMMITTED, committed.landing)


def test_should_commit_an_empty_checkpoint_without_a_spark_job(
    operations: PipelineOperations, log: Path, spark_submits: list[dict[str, Any]]
) -> None:
    """A run of an idle schedule seals no line: it starts no Spark application for it."""
    empty = sealed_checkpoint(operations, log, 0)
    full = sealed_checkpoint(operations, log, 2)
    assert (empty.line_count, full.line_count) == (0, 2)

    assert operations.landing_job([empty.checkpoint_id], "run-1") is None
    (alone,) = operations.land([empty.checkpoint_id])
    assert spark_submits == []
    assert alone.state is CheckpointState.COMMITTED
    assert (alone.landing["rows"], alone.landing["input_lines"]) == ({"access": 0}, 0)

    operations.land([empty.checkpoint_id, full.checkpoint_id], mode=LandingMode.REPLACE)
    [job] = spark_submits
    pairs = itertools.pairwise(job["arguments"])
    named = [value.partition("=")[0] for flag, value in pairs if flag == "--checkpoint"]
    assert [int(Path(folder).name) for folder in named] == [full.checkpoint_id]


# -- staging retention ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retain_days", "retain_hours", "kept"),
    [(30, 24, timedelta(days=30)), (0.5, 36, timedelta(hours=36))],
    ids=["days", "never-before-the-staging"],
)
def test_should_forget_committed_checkpoints_past_the_metastores_retention(
    tmp_path: Path,
    metastore_url: str,
    log: Path,
    retain_days: float,
    retain_hours: float,
    kept: timedelta,
) -> None:
    config = write_config(tmp_path, metastore_url, handoff={"retain_hours": retain_hours})
    document = yaml.safe_load(config.read_text())
    document["metastore"]["retain_days"] = retain_days
    config.write_text(yaml.safe_dump(document))
    operations = PipelineOperations(config)
    old = commit_landed(operations, sealed_checkpoint(operations, log, 2))
    sealed = sealed_checkpoint(operations, log, 3)
    committed_at = old.committed_at
    assert committed_at is not None

    assert (
        operations.retention.forget_old_checkpoints(now=committed_at + kept - timedelta(minutes=1))
        == []
    )
    forgotten = operations.retention.forget_old_checkpoints(
        now=committed_at + kept + timedelta(minutes=1)
    )

    assert forgotten == [old.checkpoint_id]
    assert [c.checkpoint_id for c in operations.checkpoints.newest()] == [sealed.checkpoint_id]


def test_should_remove_the_staging_of_committed_checkpoints_past_their_retention(
    operations: PipelineOperations, log: Path
) -> None:
    old = commit_landed(operations, sealed_checkpoint(operations, log, 2))
    time.sleep(0.01)
    recent = commit_landed(operations, sealed_checkpoint(operations, log, 3))
    old_but_sealed = sealed_checkpoint(operations, log, 4)
    assert old.sealed_at is not None and recent.sealed_at is not None
    retention = timedelta(hours=operations.config.handoff.retain_hours)
    between = old.sealed_at + (recent.sealed_at - old.sealed_at) / 2

    removed = operations.retention.remove_committed_staging(now=between + retention)

    assert removed == [old.checkpoint_id]
    assert not old.staging_dir.exists()
    assert recent.staging_dir.is_dir()
    assert old_but_sealed.staging_dir.is_dir()
    assert operations.retention.remove_committed_staging(now=between + retention) == []
    much_later = datetime.now(timezone.utc) + retention + timedelta(days=1)
    assert operations.retention.remove_committed_staging(now=much_later) == [recent.checkpoint_id]
    assert old_but_sealed.staging_dir.is_dir()
    assert operations.checkpoint(old_but_sealed.checkpoint_id).state is CheckpointState.SEALED
    assert (old.state, recent.state) == (CheckpointState.COMMITTED, CheckpointState.COMMITTED)


def test_should_keep_the_staging_of_a_commit_within_its_retention(
    operations: PipelineOperations, log: Path
) -> None:
    assert operations.config.handoff.retain_hours == 24

    committed = commit_landed(operations, sealed_checkpoint(operations, log, 2))

    assert committed.staging_dir.is_dir()
    assert operations.landing_job([committed.checkpoint_id], "reprocess-1") is not None


def test_should_remove_the_staging_at_commit_without_retention(
    tmp_path: Path, metastore_url: str, log: Path
) -> None:
    operations = PipelineOperations(
        write_config(tmp_path, metastore_url, handoff={"retain_hours": 0})
    )
    committed = commit_landed(operations, sealed_checkpoint(operations, log, 2))
    pending = sealed_checkpoint(operations, log, 3)

    assert not committed.staging_dir.exists()
    assert pending.staging_dir.is_dir()
    assert operations.landing_job([committed.checkpoint_id], "reprocess-1") is None
    assert operations.checkpoint(committed.checkpoint_id).state is CheckpointState.COMMITTED


# -- views ------------------------------------------------------------------------------------


def test_should_read_the_batches_of_the_checkpoints_it_lists_in_one_query(
    operations: PipelineOperations, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for count in (2, 3, 4):
        sealed_checkpoint(operations, log, count)
    queries: list[list[int]] = []
    batches = MetastoreView.batches

    def counted(view: MetastoreView, checkpoint_ids: Sequence[int]) -> list[BatchRecord]:
        queries.append(list(checkpoint_ids))
        return batches(view, checkpoint_ids)

    monkeypatch.setattr(MetastoreView, "batches", counted)

    listed = operations.checkpoints.newest()

    assert [info.line_count for info in listed] == [2, 3, 4]
    assert queries == [[info.checkpoint_id for info in listed]]


def test_should_share_one_metastore_between_the_reads_of_one_call(
    operations: PipelineOperations, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed = sealed_checkpoint(operations, log, 2)
    opened: list[Metastore] = []
    open_metastore = Metastore.open

    def counted(url: str, **options: Any) -> Metastore:
        opened.append(open_metastore(url, **options))
        return opened[-1]

    monkeypatch.setattr(Metastore, "open", counted)

    assert operations.checkpoint(sealed.checkpoint_id) == sealed
    assert len(opened) == 1


def waiting_for_a_dead_host(
    operations: PipelineOperations, metastore_url: str, log: Path
) -> CheckpointInfo:
    """A checkpoint requested while ``dead-host`` held a lease, which has lapsed since."""
    metastore = Metastore.open(metastore_url)
    try:
        assert metastore.acquire_lease(operations.config.name, "dead-host", "dead:1", 1.0)
    finally:
        metastore.close()
    append(log, *lines("a", 10))
    info = operations.request_checkpoint("run-1")
    time.sleep(1.1)  # the dead host's lease lapses
    return info


def test_should_stop_waiting_for_a_host_whose_collector_lease_lapsed(
    operations: PipelineOperations, metastore_url: str, log: Path
) -> None:
    info = waiting_for_a_dead_host(operations, metastore_url, log)

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.REQUESTED
    assert operations.excuse_lapsed_hosts(info.checkpoint_id) == ("dead-host",)
    assert operations.excuse_lapsed_hosts(info.checkpoint_id) == ()
    operations.collect_once()  # no longer waiting for the dead host: this host seals it

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.SEALED
    assert operations.excuse_lapsed_hosts(info.checkpoint_id) == ()


def test_reading_a_checkpoint_excuses_no_host(
    operations: PipelineOperations, metastore_url: str, log: Path
) -> None:
    info = waiting_for_a_dead_host(operations, metastore_url, log)

    operations.checkpoint(info.checkpoint_id)
    operations.collect_once()  # seals a checkpoint of its own: this one waits for dead-host

    assert operations.checkpoint(info.checkpoint_id).state is CheckpointState.REQUESTED


# -- staging in an object store ----------------------------------------------------------------


@pytest.mark.timeout(120)
def test_should_tell_where_a_checkpoint_is_stored_and_remove_its_staging_once_committed(
    tmp_path: Path, metastore_url: str, log: Path, s3_bucket: S3Bucket
) -> None:
    operations = PipelineOperations(
        write_config(tmp_path, metastore_url, handoff={"staging": s3_bucket.url("staging")})
    )
    sealed = sealed_checkpoint(operations, log, 20)
    folder = f"staging/web_access/{sealed.checkpoint_id:08d}"
    assert sealed.staging == f"{s3_bucket.url('staging')}/web_access/{sealed.checkpoint_id:08d}"
    assert operations.checkpoints.newest()[-1].staging == sealed.staging
    assert (
        operations.config.staging_area.missing_batches(sealed.checkpoint_id, sealed.hosts) is None
    )
    assert s3_bucket.keys(folder)
    committed = commit_landed(operations, sealed)
    assert committed.sealed_at is not None
    later = datetime.now(timezone.utc) + timedelta(hours=operations.config.handoff.retain_hours + 1)

    assert operations.retention.remove_committed_staging(now=later) == [sealed.checkpoint_id]

    assert s3_bucket.keys(folder) == []
    assert operations.retention.remove_committed_staging(now=later) == []


@pytest.mark.timeout(120)
def test_should_point_the_landing_job_at_the_checkpoint_in_the_store(
    tmp_path: Path, metastore_url: str, log: Path, s3_bucket: S3Bucket
) -> None:
    operations = PipelineOperations(
        write_config(tmp_path, metastore_url, handoff={"staging": s3_bucket.url("staging")})
    )
    sealed = sealed_checkpoint(operations, log, 4)

    spec = operations.landing_job([sealed.checkpoint_id], "scheduled__1")

    assert spec is not None
    assert spec.application_args[:2] == ["--checkpoint", f"{sealed.staging_url}=test-host"]
    assert spec.application_args[2:4] == ["--lake", str(operations.config.lake_dir)]
    command = operations.landing.command(spec)
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"):  # the store's credentials
        assert os.environ[name] not in command
        assert name not in spec.env_vars
    assert not any(os.environ["AWS_SECRET_ACCESS_KEY"] in v for v in spec.conf.values())


@pytest.mark.timeout(120)
def test_should_fail_a_sealed_checkpoint_whose_batch_left_the_store(
    tmp_path: Path, metastore_url: str, log: Path, s3_bucket: S3Bucket
) -> None:
    operations = PipelineOperations(
        write_config(tmp_path, metastore_url, handoff={"staging": s3_bucket.url("staging")})
    )
    first = sealed_checkpoint(operations, log, 3)
    second = sealed_checkpoint(operations, log, 3)
    s3_bucket.server.filesystem().delete_file(
        f"{s3_bucket.name}/staging/web_access/{second.checkpoint_id:08d}/test-host/{MANIFEST_NAME}"
    )

    assert operations.landing_job([first.checkpoint_id], "run-1") is not None
    with pytest.raises(CheckpointFailedError, match="recorded batches missing under s3://"):
        operations.landing_job([second.checkpoint_id], "run-1")

    failed = operations.checkpoint(second.checkpoint_id)
    assert failed.state is CheckpointState.FAILED
    assert failed.error is not None and "test-host" in failed.error
