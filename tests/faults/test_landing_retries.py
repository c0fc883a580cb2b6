"""Spark job failure and retry, a checkpoint landed twice, a backfill of committed intervals: the
lake holds every line exactly once whatever the landing job went through, and nothing half-landed
is ever committed.

Each landing here is the one a DAG run's land task submits (``PipelineOperations.landing_job``,
its arguments read back as ``spark_jobs/land.py`` reads them), run in this process on the test's
Spark session; its landing id is the run's id, so a retried task passes the same one. make
test runs them in its PostgreSQL pass (the metastore a shared deployment commits to).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError
from pyiceberg.table import Table
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipeline_core.errors import LandingError
from pipeline_core.lake import REJECTS_TABLE, LandingMode, commit_files
from pipeline_core.metastore import CheckpointState
from spark_jobs import landing
from tests.support.faults import FaultSeed, land_and_commit_sealed
from tests.support.landing_pipeline import LandingPipeline as Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

SPARK_FAILURES = (PySparkException, Py4JJavaError, LandingError)
"""What a failed landing job raises: Spark's errors, or the job's own."""


@pytest.fixture
def pipeline(tmp_path: Path, metastore_url: str, fault_seed: FaultSeed) -> Pipeline:
    return Pipeline(tmp_path, metastore_url, fault_seed)


def of_checkpoint(summary: dict[str, Any], checkpoint_id: int) -> dict[str, Any]:
    """One checkpoint's part of a landing summary."""
    (found,) = [c for c in summary["checkpoints"] if c["checkpoint_id"] == checkpoint_id]
    return dict(found)


def ids(value: str | None) -> list[int]:
    """The checkpoint ids a snapshot names (``sluice.checkpoint-ids``)."""
    return [int(part) for part in (value or "").split(",") if part]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", list(LandingMode), ids=str)
def test_landing_a_committed_checkpoint_again_leaves_one_copy_of_each_line(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed, mode: LandingMode
) -> None:
    first, second = pipeline.seal(), pipeline.seal()
    summaries = land_and_commit_sealed(spark, pipeline.config_path)
    before = pipeline.snapshots()

    again = pipeline.land_and_commit(spark, first, mode=mode)

    assert of_checkpoint(again, first) == summaries[0]
    assert pipeline.info(first).state is CheckpointState.COMMITTED
    added = pipeline.snapshots()[len(before) :]
    if mode is LandingMode.APPEND:  # the table holds it: left out, nothing committed
        assert again["tables"]["access"]["already_committed"] == [first]
        assert added == []
    else:  # its rows replaced by the same rows, in one commit naming it alone
        assert again["tables"]["access"]["committed"] == [first]
        assert added and all(ids(named) == [first] for _, named in added)
    assert pipeline.rows_of(first) == summaries[0]["input_lines"]
    assert pipeline.rows_of(second) == summaries[1]["input_lines"]
    pipeline.assert_exactly_once(fault_seed)


def fail_after_the_files_are_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The executors are lost once the first table's data files are written (uncommitted), as
    the landing reconciles the rows its write job counted (``landed_lines``)."""

    def executor_lost(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected: executor lost")

    monkeypatch.setattr(landing, "landed_lines", executor_lost)


def fail_between_the_table_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver dies after committing the source table, before committing the rejects."""

    def commit_but_the_rejects(table: Table, commit: Any) -> Any:
        if table.name()[-1] == REJECTS_TABLE:
            raise RuntimeError("injected: driver lost before committing the rejects")
        return commit_files(table, commit)

    monkeypatch.setattr(landing, "commit_files", commit_but_the_rejects)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "failure",
    [fail_after_the_files_are_written, fail_between_the_table_commits],
    ids=["after-the-files-are-written", "between-the-table-commits"],
)
def test_a_landing_failing_midway_commits_nothing_and_its_retry_lands_exactly_once(
    spark: SparkSession,
    pipeline: Pipeline,
    fault_seed: FaultSeed,
    monkeypatch: pytest.MonkeyPatch,
    failure: Any,
) -> None:
    committed = pipeline.seal()
    land_and_commit_sealed(spark, pipeline.config_path)
    failing = pipeline.seal("scheduled__2", malformed=3)

    with monkeypatch.context() as patch:
        failure(patch)
        with pytest.raises(RuntimeError, match="injected"):
            pipeline.land(spark, failing, landing_id="scheduled__2")
    landed_rows = pipeline.rows_of(failing)
    if failure is fail_after_the_files_are_written:
        assert landed_rows == 0  # files written, never committed: no reader sees them
    else:
        assert landed_rows > 0  # the source table holds it, the rejects table does not
    assert pipeline.rows_of(failing, REJECTS_TABLE) == 0
    with pytest.raises(LandingError, match=f"hold {landed_rows} rows and 0 rejects"):
        pipeline.operations.commit([failing])
    assert pipeline.info(failing).state is CheckpointState.SEALED

    retry = pipeline.land_and_commit(spark, failing, landing_id="scheduled__2")

    if failure is fail_between_the_table_commits:
        assert retry["tables"]["access"]["already_committed"] == [failing]
    assert retry["tables"][REJECTS_TABLE]["committed"] == [failing]
    assert pipeline.info(failing).state is CheckpointState.COMMITTED
    assert pipeline.info(failing).landing["rejects"] == {"no_match": 3}
    assert pipeline.info(committed).state is CheckpointState.COMMITTED
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(300)
def test_a_landing_whose_commit_step_never_ran_is_committed_by_its_retry(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    """The job committed every table, then the task died before the metastore's commit: the
    retried task's job leaves every table as it is and the commit step finds it all there."""
    checkpoint = pipeline.seal("scheduled__1", malformed=2)
    pipeline.land(spark, checkpoint, landing_id="scheduled__1")
    assert pipeline.info(checkpoint).state is CheckpointState.SEALED
    before = {table: pipeline.snapshots(table) for table in ("access", REJECTS_TABLE)}

    retry = pipeline.land_and_commit(spark, checkpoint, landing_id="scheduled__1")

    assert {name: table["already_committed"] for name, table in retry["tables"].items()} == {
        "access": [checkpoint],
        REJECTS_TABLE: [checkpoint],
    }
    assert {table: pipeline.snapshots(table) for table in before} == before
    assert pipeline.info(checkpoint).state is CheckpointState.COMMITTED
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(300)
def test_an_unreadable_part_fails_the_landing_before_the_lake_changes(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    landed = pipeline.seal()
    summary = pipeline.land_and_commit(spark, landed)
    part = next(pipeline.info(landed).staging_dir.glob("*/part-*.lines"))
    intact = part.read_bytes()
    part.write_bytes(b"\0" * len(intact))  # a disk error: same size, unreadable
    before = pipeline.snapshots()

    with pytest.raises(SPARK_FAILURES):
        pipeline.land(spark, landed, mode=LandingMode.REPLACE)  # a reprocess of it

    assert pipeline.snapshots() == before  # the earlier landing is intact
    assert pipeline.rows_of(landed) == of_checkpoint(summary, landed)["input_lines"]
    pipeline.assert_exactly_once(fault_seed)
    part.write_bytes(intact)
    again = pipeline.land_and_commit(spark, landed, mode=LandingMode.REPLACE)
    assert of_checkpoint(again, landed) == of_checkpoint(summary, landed)
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(300)
def test_a_backfill_of_committed_intervals_lands_no_line_twice(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    step = timedelta(minutes=5)
    intervals = [(start + i * step, start + (i + 1) * step) for i in range(2)]
    runs = [f"scheduled__{interval[0].isoformat()}" for interval in intervals]
    checkpoints = [
        pipeline.seal(run, interval) for run, interval in zip(runs, intervals, strict=True)
    ]
    for run, checkpoint in zip(runs, checkpoints, strict=True):
        pipeline.land_and_commit(spark, checkpoint, landing_id=run)
    landed = pipeline.snapshots()

    # A cleared and re-run DAG run gets its committed checkpoint back and lands it again, as
    # the same landing: the table holds it, so nothing changes.
    rerun = pipeline.operations.request_checkpoint(runs[0], intervals[0])
    assert (rerun.checkpoint_id, rerun.state) == (checkpoints[0], CheckpointState.COMMITTED)
    pipeline.land_and_commit(spark, rerun.checkpoint_id, landing_id=runs[0])
    assert pipeline.snapshots() == landed
    # A backfill of both intervals re-lands the checkpoints sealed then, and only those, in
    # one job replacing their rows; its retried task replaces nothing again.
    backfilled = pipeline.operations.checkpoints_in_interval(intervals[0][0], intervals[-1][1])
    assert [info.checkpoint_id for info in backfilled] == checkpoints
    backfill = "backfill__2026-01-01"
    pipeline.land_and_commit(spark, *checkpoints, landing_id=backfill, mode=LandingMode.REPLACE)
    replaced = pipeline.snapshots()
    assert replaced[len(landed) :]
    assert all(ids(named) == checkpoints for _, named in replaced[len(landed) :])
    retried = pipeline.land_and_commit(
        spark, *checkpoints, landing_id=backfill, mode=LandingMode.REPLACE
    )
    assert retried["tables"]["access"]["already_committed"] == checkpoints
    assert pipeline.snapshots() == replaced

    assert [c.checkpoint_id for c in pipeline.operations.checkpoints.newest(limit=100)] == (
        checkpoints
    )
    pipeline.assert_exactly_once(fault_seed)
