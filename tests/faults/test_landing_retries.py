"""Spark job failure and retry, a batch landed twice, a backfill of committed intervals: the lake
holds every line exactly once whatever the landing job went through, and nothing half-landed
is ever committed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipeline_core.errors import LandingError
from pipeline_core.metastore import CheckpointState
from pipeline_core.operations import CheckpointInfo, PipelineOperations
from spark_jobs import landing
from spark_jobs.landing import land
from tests.support.faults import (
    FaultLines,
    FaultSeed,
    check_exactly_once,
    lake_table,
    land_and_commit_sealed,
)
from tests.support.pipelines import append, write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SPARK_FAILURES = (PySparkException, Py4JJavaError, LandingError)
"""What a failed landing job raises: Spark's errors, or the job's own."""


class Pipeline:
    """A pipeline whose collector runs in this process, writing unique lines."""

    def __init__(self, folder: Path, metastore_url: str, seed: FaultSeed) -> None:
        self.config_path = write_config(folder, metastore_url)
        self.operations = PipelineOperations(self.config_path)
        self.config = self.operations.config
        self.log = folder / "logs" / "access.log"
        self._source = FaultLines(seed.value)
        self._rng = seed.rng
        self.written: list[bytes] = []

    def write(self) -> list[bytes]:
        lines = self._source.lines(len(self.written), self._rng.randint(100, 1500))
        append(self.log, *lines)
        self.written += lines
        return lines

    def seal(
        self, run_id: str | None = None, interval: tuple[datetime, datetime] | None = None
    ) -> int:
        """Write lines and seal them into a checkpoint, as a DAG run's request task does."""
        self.write()
        if run_id is not None:
            requested = self.operations.request_checkpoint(run_id, interval).checkpoint_id
        (sealed,) = self.operations.collect_once().sealed
        if run_id is not None:
            assert sealed.checkpoint_id == requested
        return sealed.checkpoint_id

    def info(self, checkpoint_id: int) -> CheckpointInfo:
        return self.operations.checkpoint(checkpoint_id)

    def land(self, spark: SparkSession, checkpoint_id: int) -> dict[str, Any]:
        return land(spark, self.info(checkpoint_id).staging_dir, self.config.lake_dir)

    def land_and_commit(self, spark: SparkSession, checkpoint_id: int) -> dict[str, Any]:
        summary = self.land(spark, checkpoint_id)
        self.operations.commit(checkpoint_id)
        return summary

    def assert_exactly_once(self, seed: FaultSeed) -> None:
        outcome = check_exactly_once(self.config.lake_dir, self.written)
        assert outcome.holds, seed.note(outcome.describe())

    def rows_of(self, checkpoint_id: int) -> int:
        table = lake_table(self.config.lake_dir, "access")
        if table is None:
            return 0
        return int(sum(1 for value in table["checkpoint_id"].to_pylist() if value == checkpoint_id))


@pytest.fixture
def pipeline(tmp_path: Path, metastore_url: str, fault_seed: FaultSeed) -> Pipeline:
    return Pipeline(tmp_path, metastore_url, fault_seed)


def without_time(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key != "landed_at"}


@pytest.mark.timeout(240)
def test_landing_a_committed_checkpoint_again_leaves_one_copy_of_each_line(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    first, second = pipeline.seal(), pipeline.seal()
    summaries = land_and_commit_sealed(spark, pipeline.config_path)

    again = pipeline.land_and_commit(spark, first)

    assert without_time(again) == without_time(summaries[0])
    assert pipeline.info(first).state is CheckpointState.COMMITTED
    assert pipeline.rows_of(second) == summaries[1]["input_lines"]
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "failing_step",
    ["landed_lines", "write_summary"],
    ids=["after-the-rows-are-written", "before-the-summary"],
)
def test_a_landing_failing_midway_commits_nothing_and_its_retry_lands_exactly_once(
    spark: SparkSession,
    pipeline: Pipeline,
    fault_seed: FaultSeed,
    monkeypatch: pytest.MonkeyPatch,
    failing_step: str,
) -> None:
    committed = pipeline.seal()
    land_and_commit_sealed(spark, pipeline.config_path)
    failing = pipeline.seal()

    def executor_lost(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected: executor lost")

    with monkeypatch.context() as patch:
        patch.setattr(landing, failing_step, executor_lost)
        with pytest.raises(RuntimeError, match="injected"):
            pipeline.land(spark, failing)
    assert pipeline.rows_of(failing) > 0  # it did fail midway: rows without a summary
    with pytest.raises(LandingError, match="no landing summary"):
        pipeline.operations.commit(failing)
    assert pipeline.info(failing).state is CheckpointState.SEALED

    land_and_commit_sealed(spark, pipeline.config_path)

    assert pipeline.info(failing).state is CheckpointState.COMMITTED
    assert pipeline.info(committed).state is CheckpointState.COMMITTED
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(240)
def test_an_unreadable_part_fails_the_landing_before_the_lake_changes(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    landed = pipeline.seal()
    summary = pipeline.land_and_commit(spark, landed)
    part = next(pipeline.info(landed).staging_dir.glob("*/part-*.lines"))
    intact = part.read_bytes()
    part.write_bytes(b"\0" * len(intact))  # a disk error: same size, unreadable

    with pytest.raises(SPARK_FAILURES):
        pipeline.land(spark, landed)  # a re-run of the committed checkpoint

    assert pipeline.rows_of(landed) == summary["input_lines"]  # the earlier landing is intact
    pipeline.assert_exactly_once(fault_seed)
    part.write_bytes(intact)
    again = pipeline.land_and_commit(spark, landed)
    assert without_time(again) == without_time(summary)
    pipeline.assert_exactly_once(fault_seed)


@pytest.mark.timeout(240)
def test_a_backfill_of_committed_intervals_lands_no_line_twice(
    spark: SparkSession, pipeline: Pipeline, fault_seed: FaultSeed
) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(minutes=5)
    intervals = [(start + i * step, start + (i + 1) * step) for i in range(2)]
    runs = [f"scheduled__{interval[0].isoformat()}" for interval in intervals]
    checkpoints = [
        pipeline.seal(run, interval) for run, interval in zip(runs, intervals, strict=True)
    ]
    land_and_commit_sealed(spark, pipeline.config_path)

    # A cleared and re-run DAG run gets its committed checkpoint back and lands it again.
    rerun = pipeline.operations.request_checkpoint(runs[0], intervals[0])
    assert (rerun.checkpoint_id, rerun.state) == (checkpoints[0], CheckpointState.COMMITTED)
    pipeline.land_and_commit(spark, rerun.checkpoint_id)
    # A backfill of both intervals re-lands the checkpoints sealed then, and only those.
    backfilled = pipeline.operations.checkpoints_in_interval(intervals[0][0], intervals[-1][1])
    assert [info.checkpoint_id for info in backfilled] == checkpoints
    for info in backfilled:
        pipeline.land_and_commit(spark, info.checkpoint_id)

    assert [c.checkpoint_id for c in pipeline.operations.status(limit=100).checkpoints] == (
        checkpoints
    )
    pipeline.assert_exactly_once(fault_seed)
