"""An object store's credentials from an Airflow connection, as the environment variables the
store's clients read.

Sluice's staging and lake reach an object store through Arrow filesystems and pyiceberg's
FileIO, which take their credentials from the environment or the standard chains. In Airflow
they may come from a connection instead (``aws_default``): :func:`store_environment` turns an
AWS connection (type ``aws``; the Amazon provider's fields, the provider itself not needed)
into those variables, and :func:`apply_store_environment` lays them over the task's process,
whose children (spark-submit, a Spark Connect driver) inherit them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowFailException

if TYPE_CHECKING:
    from airflow.sdk import Connection

STORE_CONN_ID = "aws_default"
AWS_CONN_TYPES = frozenset({"aws", "s3"})

_EXTRA_VARIABLES = {
    "aws_session_token": "AWS_SESSION_TOKEN",
    "region_name": "AWS_REGION",
    "endpoint_url": "AWS_ENDPOINT_URL",
}


def store_environment(connection: Connection) -> dict[str, str]:
    """The AWS variables of ``connection``: its login and password as the access key id and
    secret, ``region_name``, ``endpoint_url`` and ``aws_session_token`` from its extra (empty
    fields left out; a region also as ``AWS_DEFAULT_REGION``).

    Raises:
        AirflowFailException: the connection is not an AWS one.
    """
    conn_type = (connection.conn_type or "").lower()
    if conn_type not in AWS_CONN_TYPES:
        raise AirflowFailException(
            f"connection {connection.conn_id!r} is of type {conn_type!r}: Sluice reads object "
            f"store credentials from an AWS connection ({', '.join(sorted(AWS_CONN_TYPES))})"
        )
    variables = {
        "AWS_ACCESS_KEY_ID": connection.login or "",
        "AWS_SECRET_ACCESS_KEY": connection.password or "",
    }
    extra = _extra(connection)
    for key, variable in _EXTRA_VARIABLES.items():
        variables[variable] = str(extra.get(key) or "")
    if variables["AWS_REGION"]:
        variables["AWS_DEFAULT_REGION"] = variables["AWS_REGION"]
    return {name: value for name, value in variables.items() if value}


def apply_store_environment(variables: Mapping[str, str]) -> None:
    """Lay ``variables`` over this process's environment (the connection, configured on
    purpose, wins over what the process inherited)."""
    os.environ.update(variables)


def _extra(connection: Connection) -> dict[str, Any]:
    extra = connection.extra_dejson
    return extra if isinstance(extra, dict) else {}
