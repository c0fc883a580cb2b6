"""SluiceHook: one pipeline's ``PipelineOperations``, opened on first use, and its run plans."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from sluice_airflow.hooks.store_credentials import (
    STORE_CONN_ID,
    apply_store_environment,
    store_environment,
)

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from pipeline_core.lake import LandingMode
    from pipeline_core.operations import PipelineOperations, SparkJobSpec

METASTORE_CONN_ID = "sluice_metastore"
"""Airflow connection naming the metastore when a pipeline config does not."""
LAKE_CONN_ID = "sluice_lake"
"""Airflow connection naming the lake root (extra ``path`` or ``uri``) when a config does not."""
CONN_TYPE = "sluice"
"""The provider's connection type: extra ``sqlalchemy_url`` (the metastore) and ``lake_path``."""

_SQLALCHEMY_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "sqlite": "sqlite",
}


class SluiceHook(BaseHook):
    """Talk to one Sluice pipeline, named by its config file.

    A pipeline is configured by its YAML file: the file names the metastore, staging and lake.
    Two Airflow connections fill in what a file leaves out (the file always wins):

    * ``sluice_metastore``: the metastore. Its ``extra`` may hold ``{"sqlalchemy_url": ...}``;
      otherwise the URL is built from the connection (``postgres`` ->
      ``postgresql+psycopg://login:password@host:port/schema``, ``sqlite`` -> the file in
      ``host``). Used when the config has no ``metastore.url`` and ``$SLUICE_METASTORE_URL``
      is unset. A connection of the provider's own type ``sluice`` holds both the metastore
      (extra ``sqlalchemy_url``) and the lake root (extra ``lake_path``).
    * ``sluice_lake``: the lake root, from ``extra`` ``{"path": "/data/lake"}`` or
      ``{"uri": "file:///data/lake"}`` (a filesystem the Spark driver and executors share), or
      an object store's ``{"uri": "s3://bucket/lake"}`` (``gs://``, ``abfs://``; credentials
      never in the URI). Used when the config has no ``lake.warehouse`` nor ``lake.path``.

    The hook owns what is Airflow's (the connections) and decides nothing: a DAG run's
    request step has it carry out the plan ``pipeline_core.runs.plan_run`` made
    (:meth:`execute_plan`); the other tasks call the few facade methods below.

    The hook does no I/O when it is created; connections are looked up and the facade
    (``pipeline_core.operations.PipelineOperations``) is imported and built on the first call,
    so creating a hook at DAG-parse time or in an operator costs nothing.

    :param config_path: path of the pipeline's config file (``pipelines/<name>.yaml``).
    :param metastore_conn_id: connection consulted for the metastore URL; ``None`` to skip.
    :param lake_conn_id: connection consulted for the lake root; ``None`` to skip.
    :param host: collect as this host instead of the config's ``collector.host`` (the worker
        task of one of the config's ``worker.hosts``).
    """

    conn_name_attr = "metastore_conn_id"
    default_conn_name = METASTORE_CONN_ID
    conn_type = CONN_TYPE
    hook_name = "Sluice pipeline"

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The ``sluice`` connection's form: no widgets of its own (see ``get_provider_info``)."""
        return {}

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The ``sluice`` connection keeps everything in its two extra fields."""
        return {
            "hidden-fields": ["host", "schema", "login", "password", "port"],
            "relabeling": {},
        }

    def __init__(
        self,
        *,
        config_path: str | os.PathLike[str],
        metastore_conn_id: str | None = METASTORE_CONN_ID,
        lake_conn_id: str | None = LAKE_CONN_ID,
        store_conn_id: str | None = STORE_CONN_ID,
        host: str | None = None,
        logger_name: str | None = None,
    ):
        super().__init__(logger_name=logger_name)
        self.config_path = os.fspath(config_path)
        self.metastore_conn_id = metastore_conn_id
        self.lake_conn_id = lake_conn_id
        self.store_conn_id = store_conn_id
        self.host = host
        self._operations: PipelineOperations | None = None

    def get_conn(self) -> PipelineOperations:
        """Return the pipeline's facade, creating it on first use."""
        if self._operations is None:
            # Imported here so parsing a DAG file never pays for pipeline_core's imports.
            from pipeline_core.operations import PipelineOperations

            self.apply_store_credentials()
            self._operations = PipelineOperations(
                self.config_path, host=self.host, **self.connection_defaults()
            )
        return self._operations

    @property
    def operations(self) -> PipelineOperations:
        return self.get_conn()

    def connection_defaults(self) -> dict[str, Any]:
        """``metastore_url``/``lake_dir`` from the Airflow connections that exist (else none)."""
        defaults: dict[str, Any] = {}
        metastore = self._optional_connection(self.metastore_conn_id)
        if metastore is not None:
            defaults["metastore_url"] = sqlalchemy_url(metastore)
            if (metastore.conn_type or "").lower() == CONN_TYPE and _extra(metastore).get(
                "lake_path"
            ):
                defaults["lake_dir"] = str(_extra(metastore)["lake_path"])
        lake = self._optional_connection(self.lake_conn_id)
        if lake is not None:
            defaults["lake_dir"] = lake_path(lake)
        return defaults

    def apply_store_credentials(self) -> list[str]:
        """Lay the object store's credentials of the ``store_conn_id`` connection, when it
        exists, over this process's environment, where the store's clients (and the landing
        job this task starts) read them; returns the variables' names (none without it)."""
        connection = self._optional_connection(self.store_conn_id)
        if connection is None:
            return []
        variables = store_environment(connection)
        apply_store_environment(variables)
        return sorted(variables)

    def _optional_connection(self, conn_id: str | None) -> Connection | None:
        if conn_id is None:
            return None
        try:
            connection = self.get_connection(conn_id)
        except AirflowNotFoundException:
            return None
        self.log.info("Using Airflow connection %r for what the config leaves out", conn_id)
        return connection

    def landing_job(
        self, checkpoint_ids: Sequence[int], landing_id: str, mode: LandingMode
    ) -> SparkJobSpec | None:
        """The spark-submit spec of one job landing ``checkpoint_ids`` (None: nothing is left
        to land).

        :raises AirflowFailException: a checkpoint is FAILED, or was found unable to land and
            marked so (a batch gone from staging): retrying cannot help, so the task fails at
            once with the checkpoint's error.
        """
        from pipeline_core.config import mask_url_passwords
        from pipeline_core.metastore import CheckpointFailedError

        try:
            return self.operations.landing_job(checkpoint_ids, landing_id, mode)
        except CheckpointFailedError as exc:
            raise AirflowFailException(mask_url_passwords(str(exc))) from exc

    def spark_connect_url(self, spark_conn_id: str) -> str | None:
        """The ``sc://`` URL of the Spark connection ``spark_conn_id`` when it is of type
        ``spark_connect`` (the provider's ``SparkConnectHook`` builds it, with its user id,
        token and SSL setting): the landing then runs on that Spark Connect server. None when
        the connection is of another type, or missing: the landing is a spark-submit."""
        from pipeline_core.landing import SPARK_CONNECT_CONN_TYPE

        try:
            connection = self.get_connection(spark_conn_id)
        except AirflowNotFoundException:
            return None
        if (connection.conn_type or "").lower() != SPARK_CONNECT_CONN_TYPE:
            return None
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        return SparkConnectHook(conn_id=spark_conn_id).get_connection_url()


def sqlalchemy_url(connection: Connection) -> str:
    """The SQLAlchemy URL of an Airflow connection to the metastore database.

    ``extra`` ``{"sqlalchemy_url": ...}`` wins; otherwise the URL is built from the
    connection's fields, with the driver Sluice installs for its type (``postgres`` ->
    ``postgresql+psycopg``; ``sqlite`` -> the database file in ``host``).
    """
    import sqlalchemy as sa

    explicit = _extra(connection).get("sqlalchemy_url")
    if explicit:
        return str(explicit)
    conn_type = (connection.conn_type or "").lower()
    if conn_type == CONN_TYPE:
        raise ValueError(
            f"connection {connection.conn_id!r} of type {CONN_TYPE!r} has no extra "
            '"sqlalchemy_url": set it to the metastore database URL'
        )
    driver = _SQLALCHEMY_DRIVERS.get(conn_type, conn_type)
    if not driver:
        raise ValueError(f"connection {connection.conn_id!r} has no type: cannot build a URL")
    if driver == "sqlite":
        database = connection.host or connection.schema
        return sa.URL.create("sqlite", database=database or None).render_as_string(
            hide_password=False
        )
    url = sa.URL.create(
        driver,
        username=connection.login or None,
        password=connection.password or None,
        host=connection.host or None,
        port=connection.port or None,
        database=connection.schema or None,
    )
    return url.render_as_string(hide_password=False)


def lake_path(connection: Connection) -> str:
    """The lake root an Airflow connection names: extra ``path``, or extra ``uri`` (a
    ``file:`` URI's path, or an object store's URL as written).

    :raises ValueError: neither is set, or the URI's scheme is not one Sluice writes, or it
        holds a credential.
    """
    extra = _extra(connection)
    if extra.get("path"):
        return str(extra["path"])
    uri = extra.get("uri") or connection.host
    if not uri:
        raise ValueError(
            f"connection {connection.conn_id!r} names no lake: set extra "
            '{"path": "/data/lake"} or {"uri": "file:///data/lake"}'
        )
    parts = urlsplit(str(uri))
    if parts.scheme in ("", "file"):
        return unquote(parts.path) if parts.scheme else str(uri)
    from pipeline_core.errors import LocationError
    from pipeline_core.storage import StorageLocation

    try:
        return StorageLocation.parse(str(uri)).url
    except LocationError as exc:
        raise ValueError(f"connection {connection.conn_id!r}: {exc}") from None


def _extra(connection: Connection) -> dict[str, Any]:
    raw = connection.extra
    if not raw:
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return dict(value) if isinstance(value, dict) else {}
