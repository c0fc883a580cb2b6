"""Crash points in uploads: a collector staging into an object store (moto's S3 server),
SIGKILLed between any two steps of an upload (seal record, parts, manifest, metastore
transaction, deletion of the spooled copy), leaves no visible batch that is not recorded, and
the next run recovers its spool, then lands and commits every line exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.collector._spool import SEAL_RECORD_NAME
from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.staging_contract import MANIFEST_NAME, batch_key, read_manifest
from pipeline_core.testing import append, check_exactly_once
from tests.support.crash_points import UploadCrashPoint, assert_not_landable, crash_a_collection
from tests.support.faults import FaultSeed, land_and_commit_sealed, wait_for_free_lease
from tests.support.object_store import S3Bucket, manifests_in, recorded_remote_lines
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.sqlite_pass]

LEASE_SECONDS = 1.0
PART_BYTES = 16 * 1024
READ_BYTES = 8 * 1024
"""Small parts, closed at the end of small reads: the crashed batch has several, so a crash can
come between two of them."""


def recorded_manifests(metastore: Metastore, bucket: S3Bucket, pipeline: str) -> list[str]:
    """The store keys of the manifests of every batch the metastore records."""
    prefix = f"s3://{bucket.name}/"
    return sorted(
        f"{bucket.name}/{batch.staging_path.removeprefix(prefix)}/{MANIFEST_NAME}"
        for checkpoint in metastore.checkpoints(pipeline, limit=100_000)
        for batch in metastore.batches(checkpoint.checkpoint_id)
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("point", list(UploadCrashPoint), ids=str)
def test_a_crash_while_uploading_shows_no_partial_batch_and_the_next_run_lands_every_line_once(
    tmp_path: Path,
    metastore_url: str,
    spark: SparkSession,
    s3_bucket: S3Bucket,
    fault_seed: FaultSeed,
    point: UploadCrashPoint,
) -> None:
    config_path = write_config(
        tmp_path,
        metastore_url,
        collector={"lease_seconds": LEASE_SECONDS, "read_chunk_bytes": READ_BYTES},
        handoff={"staging": s3_bucket.url("staging"), "max_part_bytes": PART_BYTES},
    )
    config = load_pipeline_config(config_path)
    host = config.collector.host
    operations = PipelineOperations(config_path)
    metastore = Metastore.open(config.metastore_url)
    try:
        run = crash_a_collection(config_path, metastore, fault_seed, point, (250, 600))
        before, crashed, after, crashed_id = run.before, run.crashed, run.after, run.crashed_id
        key = batch_key(config.name, crashed_id, host)
        spooled = config.seal_dir / key
        parts = len(read_manifest(spooled).parts)  # the spool holds the sealed batch
        assert parts >= 2, fault_seed.note(f"{parts} part(s): no crash between two parts")
        assert (spooled / SEAL_RECORD_NAME).is_file() == point.record_saved
        stored = s3_bucket.keys(f"staging/{key}")
        manifest_key = f"{s3_bucket.name}/staging/{key}/{MANIFEST_NAME}"
        assert (manifest_key in stored) == point.manifest_stored, stored
        assert len([k for k in stored if k != manifest_key]) == point.parts_stored(parts)
        assert s3_bucket.incomplete_uploads() == []
        record = metastore.checkpoint(crashed_id)
        if point.recorded:
            assert record.state is CheckpointState.SEALED
            assert [b.line_count for b in metastore.batches(crashed_id)] == [len(crashed)]
        else:
            assert record.state is CheckpointState.REQUESTED
            assert metastore.batches(crashed_id) == []
            assert_not_landable(operations, crashed_id)  # stored, not recorded
        append(tmp_path / "logs" / "access.log", *after)
        wait_for_free_lease(metastore, config, timeout=10 * LEASE_SECONDS)

        operations.collect_once()  # recovers the spool first, then reads on

        assert not [p for p in config.seal_dir.rglob("*") if p.is_file()], point
        assert manifests_in(s3_bucket) == recorded_manifests(metastore, s3_bucket, config.name)
        staged = [line.data for line in recorded_remote_lines(metastore_url, config.name)]
        expected = before + crashed + after
        assert sorted(staged) == sorted(expected), fault_seed.note(
            f"recorded batches in the store after a crash at {point} hold {len(staged)} "
            f"lines, expected {len(expected)}"
        )
        landed = land_and_commit_sealed(spark, config_path)
        outcome = check_exactly_once(lake_location(config), crashed + after)
        assert outcome.holds, fault_seed.note(f"crash at {point}: {outcome.describe()}")
        # With its seal record the spooled batch is recorded as it was (the lines read after
        # the crash go to a new checkpoint); without it, its lines are read again.
        assert [s["checkpoint_id"] for s in landed] == (
            [crashed_id, crashed_id + 1] if point.record_saved else [crashed_id]
        )
        if point.record_saved:
            assert [b.line_count for b in metastore.batches(crashed_id)] == [len(crashed)]
        assert metastore.checkpoint(crashed_id).state is CheckpointState.COMMITTED
    finally:
        metastore.close()
