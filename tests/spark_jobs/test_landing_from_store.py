"""Landing checkpoints whose staging is in an object store (moto's S3 server on loopback): the
manifests and parts are read through Arrow filesystems, the segments by ranged reads, with the
same checks as local staging."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.lake import LakeLocation, LandingMode
from pipeline_core.staging_contract import ManifestError
from pipeline_core.testing import table_rows
from spark_jobs.checkpoint import read_checkpoint
from spark_jobs.landing import CheckpointInput, land
from spark_jobs.verification import PartChecksumError, PartSizeError
from tests.spark_jobs.support import (
    LINES_PER_HOST,
    PIPELINE,
    checkpoint_summary,
    landing,
    stage,
)
from tests.support.lake import assert_exactly_once, snapshot_operations
from tests.support.object_store import S3Bucket

# The metastore is only the lake's catalog here (see tests/spark_jobs/test_landing.py).
pytestmark = [pytest.mark.timeout(300), pytest.mark.sqlite_pass]

TABLES = ("access", "app", "misc", "_rejects")


def stage_in_store(bucket: S3Bucket, tmp_path: Path, checkpoint_id: int) -> str:
    """``stage``'s checkpoint (hosts ``web-1`` and ``web-2``), copied into the bucket as a
    collector uploads it; returns its URL ``s3://<bucket>/staging/<pipeline>/<N:08d>``."""
    folder = stage(tmp_path / "local-staging", checkpoint_id)
    return bucket.upload(folder, f"staging/{PIPELINE}/{checkpoint_id:08d}")


def test_a_checkpoint_is_read_from_its_url_as_from_its_folder(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = stage_in_store(s3_bucket, tmp_path, 4)
    local = read_checkpoint(tmp_path / "local-staging" / PIPELINE / "00000004")

    stored = read_checkpoint(url, ["web-1", "web-2"])

    assert (stored.checkpoint_id, stored.batches) == (4, 2)
    assert stored.sources == local.sources
    assert [p.entry for p in stored.parts] == [p.entry for p in local.parts]
    assert [p.path for p in stored.parts] == [
        f"{url}/{Path(p.path).parent.name}/{p.entry.name}" for p in local.parts
    ]


def test_a_recorded_batch_missing_from_the_store_is_refused(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = stage_in_store(s3_bucket, tmp_path, 4)

    with pytest.raises(ManifestError, match=r"recorded batches missing under .*: web-3"):
        read_checkpoint(url, ["web-1", "web-3"])
    with pytest.raises(ManifestError, match="checkpoint directory does not exist"):
        read_checkpoint(f"s3://{s3_bucket.name}/staging/{PIPELINE}/00000009")


def test_a_batch_without_its_manifest_in_the_store_is_unsealed(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = stage_in_store(s3_bucket, tmp_path, 4)
    s3_bucket.server.filesystem().delete_file(
        f"{s3_bucket.name}/staging/{PIPELINE}/00000004/web-2/_manifest.json"
    )

    with pytest.raises(ManifestError, match=r"batch is not sealed \(no _manifest.json\)"):
        read_checkpoint(url)


@pytest.mark.slow
@pytest.mark.spark
def test_a_checkpoint_in_the_store_lands_every_line_exactly_once(
    spark: SparkSession, lake: LakeLocation, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = stage_in_store(s3_bucket, tmp_path, 5)

    summary = land(spark, landing(lake, CheckpointInput(url, ("web-1", "web-2"))))

    found = checkpoint_summary(summary, 5)
    assert found["input_lines"] == 2 * LINES_PER_HOST
    assert sum(found["rows"].values()) + sum(found["rejects"].values()) == 2 * LINES_PER_HOST
    assert found["rows"] == {"access": 6, "app": 4, "misc": 4}
    assert found["batches"] == 2
    for table in ("access", "app", "misc"):
        assert assert_exactly_once(lake, table, 5) == found["rows"][table]
    assert table_rows(lake, "_rejects", 5).num_rows == sum(found["rejects"].values())


@pytest.mark.slow
@pytest.mark.spark
def test_a_part_corrupted_in_the_store_fails_the_landing_and_leaves_the_earlier_one(
    spark: SparkSession, lake: LakeLocation, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = stage_in_store(s3_bucket, tmp_path, 6)
    summary = land(spark, landing(lake, CheckpointInput(url)))
    key = f"{s3_bucket.name}/staging/{PIPELINE}/00000006/web-1/part-access-00000.lines"
    intact = s3_bucket.read(key)
    s3_bucket.write(key, b"\0" * len(intact))  # same size, other bytes

    with pytest.raises(PartChecksumError, match=r"part-access-00000\.lines: manifest says CRC-32"):
        land(spark, landing(lake, CheckpointInput(url), mode=LandingMode.REPLACE))
    s3_bucket.write(key, intact[:-1])
    with pytest.raises(PartSizeError, match=r"part-access-00000\.lines: manifest says \d+ bytes"):
        land(spark, landing(lake, CheckpointInput(url), mode=LandingMode.REPLACE))

    assert (
        assert_exactly_once(lake, "access", 6) == checkpoint_summary(summary, 6)["rows"]["access"]
    )
    for table in TABLES:
        assert snapshot_operations(lake, table) == [("append", "6")]
