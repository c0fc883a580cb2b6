"""The write probe of a storage location."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.errors import StorageError
from pipeline_core.storage import StorageLocation, probe_writable
from tests.support.object_store import S3Bucket


def test_should_write_and_delete_a_probe_object(s3_bucket: S3Bucket) -> None:
    probe_writable(StorageLocation.parse(s3_bucket.url("staging")))
    assert s3_bucket.keys() == []  # nothing left behind


def test_should_fail_naming_the_location_when_the_bucket_is_missing(s3_bucket: S3Bucket) -> None:
    location = StorageLocation.parse(f"s3://{s3_bucket.name}-missing/staging")
    with pytest.raises(
        StorageError, match=rf"cannot write a probe object in s3://{s3_bucket.name}-missing/staging"
    ):
        probe_writable(location)


def test_should_fail_when_the_server_cannot_be_reached(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with pytest.raises(StorageError, match="cannot write a probe object"):
        probe_writable(StorageLocation.parse(s3_bucket.url()))


def test_should_create_a_local_folder_and_leave_it_empty(tmp_path: Path) -> None:
    folder = tmp_path / "staging" / "deep"
    probe_writable(StorageLocation.parse(str(folder)))
    assert folder.is_dir() and list(folder.iterdir()) == []
