"""Uploading a locally sealed batch to the S3 test server: parts checked, the manifest last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline_core.errors import CorruptBatchError
from pipeline_core.sinks import ReadBack, upload_sealed_batch, verify_local_batch
from pipeline_core.staging_contract import MANIFEST_NAME, read_manifest
from pipeline_core.storage import StorageLocation
from tests.support.object_store import S3Bucket, sealed_batch


def target(bucket: S3Bucket) -> StorageLocation:
    return StorageLocation.parse(bucket.url("staging/web/00000001/host-a"))


def stored(bucket: S3Bucket) -> list[str]:
    return [key.rsplit("/", 1)[1] for key in bucket.keys("staging/web/00000001/host-a")]


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    return sealed_batch(tmp_path / "spool", parts=3, part_bytes=256 * 1024)


def test_should_store_every_part_byte_for_byte_and_the_manifest(
    batch: Path, s3_bucket: S3Bucket
) -> None:
    uploaded = upload_sealed_batch(batch, target(s3_bucket))
    manifest = read_manifest(batch)
    assert stored(s3_bucket) == sorted([MANIFEST_NAME, *(p.name for p in manifest.parts)])
    for part in manifest.parts:
        key = f"{s3_bucket.name}/staging/web/00000001/host-a/{part.name}"
        assert s3_bucket.read(key) == (batch / part.name).read_bytes()
    assert uploaded.bytes == sum(p.bytes for p in manifest.parts) > 0
    remote = s3_bucket.read(f"{s3_bucket.name}/staging/web/00000001/host-a/{MANIFEST_NAME}")
    assert json.loads(remote) == manifest.to_json()


def test_should_send_a_large_part_as_a_multipart_upload(
    tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    batch = sealed_batch(tmp_path / "spool", parts=1, part_bytes=24 * 1024 * 1024)
    upload_sealed_batch(batch, target(s3_bucket), read_back=ReadBack.VERIFY)
    part = read_manifest(batch).parts[0]
    key = f"{s3_bucket.name}/staging/web/00000001/host-a/{part.name}"
    assert s3_bucket.read(key) == (batch / part.name).read_bytes()
    log = s3_bucket.server.log.read_text(errors="replace")
    assert f"{part.name}?uploads" in log and "partNumber=2" in log


def test_should_refuse_a_part_whose_crc_is_not_the_manifests_and_write_no_manifest(
    batch: Path, s3_bucket: S3Bucket
) -> None:
    part = read_manifest(batch).parts[1]
    data = bytearray((batch / part.name).read_bytes())
    data[100] ^= 0xFF  # same size, other bytes
    (batch / part.name).write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match=f"{part.name}.*CRC-32"):
        upload_sealed_batch(batch, target(s3_bucket))
    assert MANIFEST_NAME not in stored(s3_bucket)  # never visible as a batch
    with pytest.raises(CorruptBatchError):
        verify_local_batch(batch)


def test_should_hide_an_earlier_upload_until_the_new_one_is_complete(
    batch: Path, s3_bucket: S3Bucket
) -> None:
    upload_sealed_batch(batch, target(s3_bucket))
    part = read_manifest(batch).parts[2]
    (batch / part.name).unlink()  # the next attempt fails after the first parts
    with pytest.raises(CorruptBatchError, match="cannot read part"):
        upload_sealed_batch(batch, target(s3_bucket))
    assert MANIFEST_NAME not in stored(s3_bucket)


def test_should_remove_objects_an_earlier_attempt_left_that_the_manifest_does_not_list(
    batch: Path, s3_bucket: S3Bucket
) -> None:
    filesystem, root = target(s3_bucket).filesystem()
    with filesystem.open_output_stream(f"{root}/part-access-00009.lines") as stream:
        stream.write(b"left by an attempt whose batch had more parts\n")
    upload_sealed_batch(batch, target(s3_bucket))
    assert "part-access-00009.lines" not in stored(s3_bucket)


def test_should_upload_the_same_batch_again_to_the_same_objects(
    batch: Path, s3_bucket: S3Bucket
) -> None:
    upload_sealed_batch(batch, target(s3_bucket))
    first = {key: s3_bucket.read(key) for key in s3_bucket.keys("staging")}
    upload_sealed_batch(batch, target(s3_bucket), read_back=ReadBack.SIZE_ONLY)
    assert {key: s3_bucket.read(key) for key in s3_bucket.keys("staging")} == first


def test_should_refuse_a_folder_that_holds_no_sealed_batch(
    tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    with pytest.raises(CorruptBatchError, match="not sealed"):
        upload_sealed_batch(tmp_path, target(s3_bucket))
