"""The environment variables an object store's client reads its endpoint and credentials from."""

from __future__ import annotations

import os
from collections.abc import Mapping

STORE_ENVIRONMENT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CA_BUNDLE",
    "AWS_EC2_METADATA_DISABLED",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
)
"""What the S3, Azure and GCS clients of ``pyarrow.fs`` read from the environment (endpoint,
region, credentials): a process reading a store on behalf of another (a Spark executor for the
landing job's driver) needs the same values."""


def store_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``STORE_ENVIRONMENT`` variables set (non-empty) in ``environ`` (default: this
    process's environment). Values may be secrets: never log or print them."""
    source = os.environ if environ is None else environ
    return {name: source[name] for name in STORE_ENVIRONMENT if source.get(name)}
