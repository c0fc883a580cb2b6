"""Object store credentials from an Airflow connection (``aws_default``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import Connection
from airflow.sdk.exceptions import AirflowFailException
from sluice_airflow.hooks.sluice import SluiceHook
from sluice_airflow.hooks.store_credentials import STORE_CONN_ID, store_environment

from pipeline_core.metastore import CheckpointState
from pipeline_core.testing import access_lines, append
from tests.support.object_store import S3Bucket, manifests_in
from tests.support.pipelines import write_config

AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)


def aws_connection(**fields: Any) -> Connection:
    return Connection(conn_id=STORE_CONN_ID, conn_type="aws", **fields)


def test_an_aws_connection_gives_the_keys_region_endpoint_and_token() -> None:
    connection = aws_connection(
        login="AKID",
        password="SECRET",
        extra=json.dumps(
            {
                "region_name": "eu-west-1",
                "endpoint_url": "http://s3.internal:9000",
                "aws_session_token": "TOKEN",
            }
        ),
    )

    assert store_environment(connection) == {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": "SECRET",
        "AWS_SESSION_TOKEN": "TOKEN",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://s3.internal:9000",
    }


def test_empty_fields_are_left_to_the_environment_and_the_standard_chain() -> None:
    assert store_environment(aws_connection(extra=json.dumps({"region_name": ""}))) == {}


def test_a_connection_of_another_type_is_refused_naming_it() -> None:
    connection = Connection(conn_id="store", conn_type="postgres", login="x")

    with pytest.raises(AirflowFailException, match="'store' is of type 'postgres'"):
        store_environment(connection)


@pytest.mark.timeout(120)
def test_a_task_stages_into_the_store_with_credentials_only_in_the_connection(
    tmp_path: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    environment = s3_bucket.server.environment
    for name in AWS_VARIABLES:  # the task's process knows nothing of the store
        monkeypatch.setenv(name, "unset")
        monkeypatch.delenv(name)
    monkeypatch.delenv("SLUICE_METASTORE_URL", raising=False)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{STORE_CONN_ID.upper()}",
        json.dumps(
            {
                "conn_type": "aws",
                "login": environment["AWS_ACCESS_KEY_ID"],
                "password": environment["AWS_SECRET_ACCESS_KEY"],
                "extra": {
                    "region_name": environment["AWS_REGION"],
                    "endpoint_url": environment["AWS_ENDPOINT_URL"],
                },
            }
        ),
    )
    config = write_config(
        tmp_path,
        f"sqlite:///{tmp_path / 'sluice.db'}",
        handoff={"staging": s3_bucket.url("staging")},
    )
    append(tmp_path / "logs" / "access.log", *access_lines(500, seed=3))
    hook = SluiceHook(config_path=config)

    requested = hook.operations.request_checkpoint("run-1")
    hook.operations.collect_once()

    assert hook.operations.checkpoint(requested.checkpoint_id).state is CheckpointState.SEALED
    assert len(manifests_in(s3_bucket)) == 1
