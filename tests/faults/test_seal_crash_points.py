"""Crash points in sealing: a collector SIGKILLed between any two steps of a seal (parts,
manifest, rename, mail, metastore transaction) leaves nothing that is landed or counted, and the
next run seals, lands and commits every line exactly once."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.staging_contract import checkpoint_dir
from pipeline_core.testing import UniqueAccessLines, append, check_exactly_once, staged_lines
from tests.support.crash_points import (
    SealCrashPoint,
    assert_not_landable,
    crash_a_collection,
    crash_while_sealing,
)
from tests.support.faults import (
    FaultSeed,
    land_and_commit_sealed,
    recorded_staging,
    wait_for_free_lease,
)
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

LEASE_SECONDS = 1.0


@pytest.mark.timeout(180)
@pytest.mark.parametrize("point", list(SealCrashPoint), ids=str)
def test_a_crash_while_sealing_leaves_no_orphan_and_the_next_run_lands_every_line_once(
    tmp_path: Path,
    metastore_url: str,
    spark: SparkSession,
    fault_seed: FaultSeed,
    point: SealCrashPoint,
) -> None:
    config_path = write_config(tmp_path, metastore_url, collector={"lease_seconds": LEASE_SECONDS})
    config = load_pipeline_config(config_path)
    operations = PipelineOperations(config_path)
    metastore = Metastore.open(config.metastore_url)
    try:
        run = crash_a_collection(config_path, metastore, fault_seed, point, (50, 2000))
        before, crashed, after, crashed_id = run.before, run.crashed, run.after, run.crashed_id
        record = metastore.checkpoint(crashed_id)
        folder = checkpoint_dir(config.staging_dir, config.name, crashed_id) / config.collector.host
        if point.recorded:
            assert record.state is CheckpointState.SEALED
            assert [b.line_count for b in metastore.batches(crashed_id)] == [len(crashed)]
        else:
            assert record.state is CheckpointState.REQUESTED
            assert metastore.batches(crashed_id) == []
            assert folder.is_dir() == point.folder_in_place
            assert_not_landable(operations, crashed_id)  # a batch folder, not recorded
        append(tmp_path / "logs" / "access.log", *after)
        wait_for_free_lease(metastore, config, timeout=10 * LEASE_SECONDS)

        operations.collect_once()

        landed = land_and_commit_sealed(spark, config_path)
        expected = before + crashed + after
        staged = staged_lines(config)  # every batch folder on disk, recorded or not
        assert sorted(s.line for s in staged) == sorted(expected), fault_seed.note(
            f"staging folders after a crash at {point} hold {len(staged)} lines, "
            f"expected {len(expected)}"
        )
        assert not (config.staging_dir / config.name / "_inflight" / config.collector.host).exists()
        outcome = check_exactly_once(
            lake_location(config), crashed + after, recorded_staging(metastore, config.name)
        )
        assert outcome.holds, fault_seed.note(f"crash at {point}: {outcome.describe()}")
        assert [s["checkpoint_id"] for s in landed] == (
            [crashed_id, crashed_id + 1] if point.recorded else [crashed_id]
        )
    finally:
        metastore.close()


@pytest.mark.timeout(180)
def test_a_batch_folder_left_by_another_hosts_crash_is_not_landed(
    tmp_path: Path, metastore_url: str, spark: SparkSession, fault_seed: FaultSeed
) -> None:
    paths = {
        host: write_config(
            tmp_path / host,
            metastore_url,
            collector={"host": host, "lease_seconds": LEASE_SECONDS},
            handoff={"staging_dir": str(tmp_path / "staging")},
            lake={"path": str(tmp_path / "lake")},
        )
        for host in ("web-1", "web-2")
    }
    source = UniqueAccessLines(fault_seed.value)
    lines = {"web-1": source.lines(0, 300), "web-2": source.lines(300, 200)}
    for host, path in paths.items():
        append(path.parent / "logs" / "access.log", *lines[host])
    operations = PipelineOperations(paths["web-1"])
    shared_id = operations.request_checkpoint("shared-run").checkpoint_id

    crash = crash_while_sealing(paths["web-2"], SealCrashPoint.RENAMED)
    assert crash.returncode == -signal.SIGKILL, crash.stderr[-3000:]
    operations.collect_once()  # web-1 seals the shared checkpoint
    metastore = Metastore.open(operations.config.metastore_url)
    try:
        wait_for_free_lease(metastore, load_pipeline_config(paths["web-2"]), timeout=10)
        PipelineOperations(paths["web-2"]).collect_once()  # web-2 reads its lines again
    finally:
        metastore.close()

    land_and_commit_sealed(spark, paths["web-1"])
    assert operations.checkpoint(shared_id).state is CheckpointState.COMMITTED
    outcome = check_exactly_once(lake_location(operations.config), lines["web-1"] + lines["web-2"])
    assert outcome.holds, fault_seed.note(outcome.describe())
