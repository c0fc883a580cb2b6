"""store_environment: the variables an object store's client reads, and nothing else."""

from __future__ import annotations

from pipeline_core.storage import STORE_ENVIRONMENT, store_environment


def test_only_the_stores_variables_that_are_set_are_taken() -> None:
    environ = {
        "AWS_ACCESS_KEY_ID": "key-id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_SESSION_TOKEN": "",
        "AZURE_STORAGE_ACCOUNT_KEY": "azure-key",
        "PATH": "/usr/bin",
        "SLUICE_METASTORE_URL": "postgresql://sluice:password@db/sluice",
    }

    assert store_environment(environ) == {
        "AWS_ACCESS_KEY_ID": "key-id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AZURE_STORAGE_ACCOUNT_KEY": "azure-key",
    }


def test_the_s3_endpoint_variables_are_among_them() -> None:
    assert {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION"} <= set(STORE_ENVIRONMENT)
