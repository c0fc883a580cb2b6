"""The FileIO properties of a warehouse in an object store: endpoint and region from the URL
or the environment, never a credential."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.errors import LocationError
from pipeline_core.lake import LakeLocation, store_properties, warehouse_uri

ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "key-id",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_SESSION_TOKEN": "token",
    "AWS_REGION": "eu-west-3",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
}


def test_an_s3_warehouse_takes_its_endpoint_and_region_from_the_environment() -> None:
    assert store_properties("s3://bucket/lake", ENVIRONMENT) == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.region": "eu-west-3",
    }
    specific = {**ENVIRONMENT, "AWS_ENDPOINT_URL_S3": "http://s3.local:9000"}
    assert store_properties("s3://bucket/lake", specific)["s3.endpoint"] == "http://s3.local:9000"


def test_the_url_options_win_over_the_environment_and_no_credential_is_a_property() -> None:
    properties = store_properties(
        "s3://bucket/lake?endpoint_override=minio:9000&scheme=http&region=us-east-2", ENVIRONMENT
    )

    assert properties == {"s3.endpoint": "http://minio:9000", "s3.region": "us-east-2"}
    assert not set(properties.values()) & {"key-id", "secret", "token"}


def test_a_folder_has_no_properties_and_a_file_uri_of_its_absolute_path(tmp_path: Path) -> None:
    assert store_properties(tmp_path, ENVIRONMENT) == {}
    assert store_properties(f"file://{tmp_path}", ENVIRONMENT) == {}
    assert warehouse_uri(tmp_path) == f"file://{tmp_path}"
    assert warehouse_uri("s3://bucket/lake/?region=us-east-2") == "s3://bucket/lake"


def test_an_azure_warehouse_names_its_account() -> None:
    url = "abfs://lake@account1.dfs.core.windows.net/prefix"
    assert store_properties(url, {}) == {"adls.account-name": "account1"}


def test_a_credential_in_the_warehouse_url_is_refused() -> None:
    location = LakeLocation("sqlite://", "s3://bucket/lake?secret_key=abc", "ns")

    with pytest.raises(LocationError, match="secret_key"):
        _ = location.storage
    with pytest.raises(LocationError, match="secret_key"):
        store_properties(location.warehouse)
