"""Storage locations: URLs and paths parsed, credentials refused, filesystems opened."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from pipeline_core.errors import LocationError
from pipeline_core.storage import StorageLocation, StorageScheme, location_filesystem
from tests.support.object_store import S3Bucket


@pytest.mark.parametrize(
    ("text", "scheme"),
    [
        ("/var/lib/sluice/staging", StorageScheme.LOCAL),
        ("relative/staging", StorageScheme.LOCAL),
        ("file:///var/lib/sluice/staging", StorageScheme.LOCAL),
        ("s3://bucket/prefix", StorageScheme.S3),
        ("gs://bucket/prefix", StorageScheme.GCS),
        ("abfs://container@account.dfs.core.windows.net/prefix", StorageScheme.ABFS),
        ("abfss://container@account.dfs.core.windows.net/prefix", StorageScheme.ABFS),
    ],
)
def test_should_tell_the_store_by_the_scheme(text: str, scheme: StorageScheme) -> None:
    assert StorageLocation.parse(text).scheme is scheme


def test_should_keep_a_plain_path_as_written() -> None:
    location = StorageLocation.parse("/data/stag%20ing")
    assert location.is_local
    assert location.local_path == Path("/data/stag%20ing")  # never %-decoded


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("s3://AKIAEXAMPLE:wJalrSECRET@bucket/prefix", "password"),
        ("s3://bucket/prefix?secret_key=wJalrSECRET", "secret_key"),
        ("s3://bucket/prefix?region=eu-west-1&session_token=abc", "session_token"),
        ("abfs://c@a.dfs.core.windows.net/p?account_key=abc", "account_key"),
    ],
)
def test_should_refuse_a_credential_in_the_url_without_quoting_it(text: str, named: str) -> None:
    with pytest.raises(LocationError, match=named) as raised:
        StorageLocation.parse(text)
    assert "SECRET" not in str(raised.value) and "abc" not in str(raised.value)


@pytest.mark.parametrize("text", ["ftp://host/path", "hdfs://namenode/path"])
def test_should_refuse_an_unsupported_scheme(text: str) -> None:
    with pytest.raises(LocationError, match="unsupported scheme"):
        StorageLocation.parse(text)


def test_should_refuse_an_object_store_url_without_a_bucket() -> None:
    with pytest.raises(LocationError, match="no bucket"):
        StorageLocation.parse("s3:///prefix")


def test_should_join_children_with_slashes_keeping_the_options() -> None:
    location = StorageLocation.parse("s3://bucket/staging/?region=eu-west-1")
    assert (
        location.child("web", "00000001").url == "s3://bucket/staging/web/00000001?region=eu-west-1"
    )
    assert StorageLocation.parse("/data/staging").child("web").url == "/data/staging/web"


def test_should_open_a_local_folder_without_decoding_it(tmp_path: Path) -> None:
    filesystem, path = location_filesystem(f"file://{tmp_path}/a%20b")
    assert isinstance(filesystem, pafs.LocalFileSystem)
    assert path == f"{tmp_path}/a%20b"


def test_should_reach_an_s3_server_named_by_the_environment(s3_bucket: S3Bucket) -> None:
    filesystem, root = StorageLocation.parse(s3_bucket.url("staging")).filesystem()
    with filesystem.open_output_stream(f"{root}/object") as stream:
        stream.write(b"stored")
    assert s3_bucket.read(f"{s3_bucket.name}/staging/object") == b"stored"


def test_should_prefer_the_s3_specific_endpoint_variable(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_bucket.server.endpoint)
    filesystem, root = StorageLocation.parse(s3_bucket.url("x")).filesystem()
    with filesystem.open_output_stream(f"{root}/object") as stream:
        stream.write(b"via the s3 endpoint")
    assert s3_bucket.keys("x") == [f"{s3_bucket.name}/x/object"]
