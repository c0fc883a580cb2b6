"""The collector with staging in an object store (moto's S3 server on loopback): batches seal
into the local spool, upload (parts, then the manifest), and are recorded only once stored."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.collector import Collector, UploadMetrics
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import StorageError
from pipeline_core.mailbox import ReportedThrowableError
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import FaultPoint, append, lines, raising_at, wait_until
from tests.pipeline_core.collector.support import Tailing
from tests.support.object_store import S3Bucket, manifests_in, recorded_remote_lines
from tests.support.pipelines import load

# make test runs these once, on SQLite: the metastore is not what they test, and its part in
# them runs on PostgreSQL too, in tests/pipeline_core/metastore and the system tests.
pytestmark = pytest.mark.sqlite_pass

SPOOL_BOUND = 1024 * 1024


def remote_config(
    folder: Path, metastore_url: str, bucket: S3Bucket, **handoff: Any
) -> PipelineConfig:
    return load(
        folder,
        metastore_url,
        handoff={"staging": bucket.url("staging"), "max_part_bytes": 256 * 1024, **handoff},
        collector={"host": "test-host", "read_chunk_bytes": 64 * 1024},
    )


def spooled_files(config: PipelineConfig) -> list[Path]:
    return sorted(p for p in config.seal_dir.rglob("*") if p.is_file())


def uploads(collector: Collector) -> UploadMetrics:
    """The pipeline's spool and upload metrics (staging is in an object store)."""
    metrics = collector.metrics()[0].uploads
    assert metrics is not None
    return metrics


def wait_sealed(metastore: Metastore, checkpoint_id: int) -> None:
    wait_until(
        lambda: metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED, timeout=60
    )


def line_texts(metastore_url: str) -> list[bytes]:
    return [line.data for line in recorded_remote_lines(metastore_url, "web_access")]


@pytest.mark.timeout(120)
def test_should_upload_each_sealed_batch_and_record_where_it_is_stored(
    tmp_path: Path, metastore_url: str, metastore: Metastore, s3_bucket: S3Bucket
) -> None:
    config = remote_config(tmp_path, metastore_url, s3_bucket)
    written = lines("a", 150_000)  # ~2 MB: several parts
    append(tmp_path / "logs" / "access.log", *written)

    result = Collector(config, metastore).run_once()

    (sealed,) = result.sealed
    assert (
        sealed.staging_path
        == f"{s3_bucket.url('staging')}/web_access/{sealed.checkpoint_id:08d}/test-host"
    )
    (batch,) = metastore.batches(sealed.checkpoint_id)
    assert batch.staging_path == sealed.staging_path and batch.part_count >= 2
    assert metastore.checkpoint(sealed.checkpoint_id).state is CheckpointState.SEALED
    assert line_texts(metastore_url) == written
    assert spooled_files(config) == []  # the local copy is gone once recorded


@pytest.mark.timeout(120)
def test_should_pick_up_only_new_lines_across_runs(
    tmp_path: Path, metastore_url: str, metastore: Metastore, s3_bucket: S3Bucket
) -> None:
    config = remote_config(tmp_path, metastore_url, s3_bucket)
    log = tmp_path / "logs" / "access.log"
    append(log, *lines("a", 1000))
    Collector(config, metastore).run_once()
    append(log, *lines("b", 1000))
    Collector(config, metastore).run_once()
    assert line_texts(metastore_url) == lines("a", 1000) + lines("b", 1000)
    assert len(manifests_in(s3_bucket)) == 2


class _Interrupted(Exception):
    """Stands for the process dying in the middle of an upload."""


@pytest.mark.timeout(120)
def test_should_finish_an_upload_interrupted_between_parts_when_restarted(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    s3_bucket: S3Bucket,
) -> None:
    config = remote_config(tmp_path, metastore_url, s3_bucket)
    log = tmp_path / "logs" / "access.log"
    append(log, *lines("a", 150_000))
    with (
        raising_at(FaultPoint.PART_UPLOADED, _Interrupted("the collector died here")),
        pytest.raises(Exception, match="the collector died here"),
    ):
        Collector(config, metastore).run_once()
    # What a crash between the parts leaves: one part stored, no manifest (not visible), the
    # batch and its seal record in the spool, nothing recorded.
    assert manifests_in(s3_bucket) == [] and len(s3_bucket.keys("staging")) == 1
    assert any(p.name == "_seal_record.json" for p in spooled_files(config))
    assert metastore.checkpoint(1).state is CheckpointState.REQUESTED

    append(log, *lines("b", 500))
    result = Collector(config, metastore).run_once()

    assert metastore.checkpoint(1).state is CheckpointState.SEALED  # recovered at start
    assert [s.checkpoint_id for s in result.sealed] == [2]  # then the new lines
    assert line_texts(metastore_url) == lines("a", 150_000) + lines("b", 500)
    assert spooled_files(config) == []


@pytest.mark.timeout(120)
def test_should_read_again_a_batch_sealed_but_never_handed_to_the_upload(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    s3_bucket: S3Bucket,
) -> None:
    config = remote_config(tmp_path, metastore_url, s3_bucket)
    log = tmp_path / "logs" / "access.log"
    append(log, *lines("a", 2000))

    died = _Interrupted("the collector died before the seal record")
    with (
        raising_at(FaultPoint.SEAL_RECORD_SAVING, died),
        pytest.raises(Exception, match="before the seal record"),
    ):
        Collector(config, metastore).run_once()
    assert spooled_files(config) and s3_bucket.keys("staging") == []

    Collector(config, metastore).run_once()

    assert line_texts(metastore_url) == lines("a", 2000)  # read again, once
    assert spooled_files(config) == []


@pytest.mark.timeout(120)
def test_should_pause_reading_at_the_spool_bound_until_uploads_free_it(
    tmp_path: Path, metastore_url: str, metastore: Metastore, s3_bucket: S3Bucket
) -> None:
    bucket = S3Bucket(s3_bucket.server, f"{s3_bucket.name}-later")  # not created yet
    config = remote_config(tmp_path, metastore_url, bucket, max_spool_bytes=SPOOL_BOUND)
    # ~11 MB: ten times the bound, and well past what the queues and the ring hold (~2 MB)
    written = lines("a", 800_000)
    append(tmp_path / "logs" / "access.log", *written)
    collector = Collector(config, metastore)
    tailing = Tailing(collector.run, collector.stop)
    try:
        wait_until(lambda: uploads(collector).spool_full)
        metastore.request_checkpoint(config.name, "run-1")
        wait_until(lambda: uploads(collector).failures >= 1)  # no bucket yet
        read_while_full = collector.metrics()[0].bytes_read
        time.sleep(1.0)
        held, held_uploads = collector.metrics()[0], uploads(collector)
        assert held.bytes_read == read_while_full < sum(len(line) + 1 for line in written)
        assert held_uploads.spool_full and held_uploads.waiting == 1
        assert held_uploads.spool_bytes >= SPOOL_BOUND
        assert "bucket does not exist" in (held_uploads.last_error or "")
        assert held.blocked_seconds > 0

        bucket.server.filesystem().create_dir(bucket.name)  # the store is back
        wait_sealed(metastore, 1)
        wait_until(lambda: collector.metrics()[0].bytes_read > read_while_full, timeout=30)
        while collector.metrics()[0].unread_bytes > 0:  # checkpoints free the spool
            requested = metastore.request_checkpoint(config.name, f"run-{time.monotonic()}")
            wait_sealed(metastore, requested.checkpoint_id)
        assert uploads(collector).last_error is None
    finally:
        tailing.stop()
    assert line_texts(metastore_url) == written  # nothing dropped, nothing doubled
    assert spooled_files(config) == []


@pytest.mark.timeout(120)
def test_should_stop_with_the_stores_error_once_uploads_failed_for_upload_retry_s(
    tmp_path: Path, metastore_url: str, metastore: Metastore, s3_bucket: S3Bucket
) -> None:
    bucket = S3Bucket(s3_bucket.server, f"{s3_bucket.name}-later")  # not created yet
    config = remote_config(tmp_path, metastore_url, bucket, upload_retry_s=1.0)
    append(tmp_path / "logs" / "access.log", *lines("a", 1000))

    with pytest.raises(ReportedThrowableError) as failure:
        Collector(config, metastore).run_once()
    assert isinstance(failure.value.__cause__, StorageError)
    assert bucket.name in str(failure.value.__cause__)
    assert "bucket does not exist" in str(failure.value.__cause__)

    assert metastore.checkpoint(1).state is CheckpointState.REQUESTED  # nothing recorded
    assert any(p.name == "_seal_record.json" for p in spooled_files(config))  # kept
    bucket.server.filesystem().create_dir(bucket.name)
    Collector(config, metastore).run_once()  # the start uploads what the spool kept
    assert metastore.checkpoint(1).state is CheckpointState.SEALED
    assert line_texts(metastore_url) == lines("a", 1000)
