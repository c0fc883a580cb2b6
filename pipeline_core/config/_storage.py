"""Where a pipeline keeps what it collects: the ``handoff`` section (the staging of sealed
batches), the ``lake`` section (the Iceberg warehouse) and the ``metastore`` section."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from pipeline_core._compat import StrEnum
from pipeline_core._metastore_pooling import MetastorePooling
from pipeline_core.config._base import _Strict
from pipeline_core.storage import StorageLocation


def _valid_location(value: str | None) -> str | None:
    """A location key's value, checked (``LocationError`` is a ``ValueError``: pydantic names
    the key)."""
    if value is not None:
        StorageLocation.parse(value)
    return value


def _at_most_one(first: object, second: object, first_key: str, second_key: str) -> None:
    if first is not None and second is not None:
        raise ValueError(f"give {first_key} or {second_key}, not both")


class StagingAccess(StrEnum):
    """Who may read the batches sealed into a local staging folder."""

    OWNER = "owner"
    """The collector's user alone: files 0600 in folders 0700."""
    GROUP = "group"
    """Also the collector's group: files 0640 in folders 2750 (setgid: what is made in them
    keeps their group), for a landing that runs as another user of that group."""


class HandoffConfig(_Strict):
    """The handoff sink: where sealed batches are staged for Spark."""

    retain_hours: Annotated[float, Field(ge=0)] = 24
    """A committed checkpoint's staging batches are deleted once they are this old (by seal
    time); until then the checkpoint can be reprocessed from them."""

    staging: str | None = None
    """Where sealed batches are staged for the landing: a folder (a path, relative to the
    file's folder, or a ``file://`` URL) or an object store prefix (``s3://bucket/prefix``,
    ``gs://bucket/prefix``, ``abfs://container@account.dfs.core.windows.net/prefix``).
    Credentials are never written here: they come from the environment and the store's
    standard chain; an S3-compatible server's endpoint from ``AWS_ENDPOINT_URL_S3`` or
    ``AWS_ENDPOINT_URL``. With an object store the collector seals each batch into
    ``spool_dir`` first, then uploads it. Default: ``staging_dir``."""
    staging_dir: Path | None = None
    """A local staging folder (the older spelling of ``staging`` with a path; give one of
    the two). Default: ``<data_dir>/staging``."""
    spool_dir: Path | None = None
    """With ``staging`` in an object store: where batches are sealed before they are
    uploaded, and kept until the upload is recorded. Default: ``<data_dir>/spool``."""
    max_spool_bytes: Annotated[int, Field(ge=1024 * 1024)] = 4 * 1024 * 1024 * 1024
    """With ``staging`` in an object store: the most bytes the spool holds (the batch being
    written plus sealed batches waiting for their upload). At this bound reading pauses until
    uploads free space; nothing is dropped."""
    upload_retry_s: Annotated[float, Field(gt=0)] = 300.0
    """With ``staging`` in an object store: how long a failing upload is retried (jittered
    exponential waits up to 30 s) before the collector stops with the error; the batch stays
    in the spool and the next start uploads it."""
    upload_read_back: bool = True
    """With ``staging`` in an object store: read every uploaded part back and check its CRC-32
    against the manifest's (twice the traffic). The bytes sent are always checked, and the
    stored object's size; false skips the read-back."""
    max_part_bytes: Annotated[int, Field(gt=0)] = 128 * 1024 * 1024
    """A part file is closed and a new one started past this many line bytes."""
    staging_access: StagingAccess = StagingAccess.OWNER
    """Who may read what is sealed into a local staging folder: ``owner`` (files 0600 in
    folders 0700, whatever the umask) or ``group`` (0640 in 2750: the Spark landing runs as
    another user of the collector's group, on a shared folder). The spool, the metastore and
    everything else under ``data_dir`` stay the owner's alone."""

    _staging_location = field_validator("staging")(_valid_location)

    @model_validator(mode="after")
    def _one_staging(self) -> HandoffConfig:
        _at_most_one(self.staging, self.staging_dir, "handoff.staging", "handoff.staging_dir")
        return self


class LakeConfig(_Strict):
    """The lake: Iceberg tables in a SQL catalog kept in the metastore's database."""

    warehouse: str | None = None
    """The warehouse: table data and metadata live in ``<warehouse>/<namespace>/<table>/``.
    A folder (a path, relative to the file's folder, or a ``file://`` URL) or an object store
    prefix (``s3://bucket/prefix``, ``gs://bucket/prefix``,
    ``abfs://container@account.dfs.core.windows.net/prefix``). Credentials are never written
    here: they come from the environment and the store's standard chain, as for
    ``handoff.staging``. Default: ``path``."""
    path: Path | None = None
    """A local warehouse folder (the older spelling of ``warehouse`` with a path; give one of
    the two). Default: ``<data_dir>/lake``."""
    namespace: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")] | None = None
    """The catalog namespace of the pipeline's tables. Default: the pipeline's name."""

    _warehouse_location = field_validator("warehouse")(_valid_location)

    @model_validator(mode="after")
    def _one_warehouse(self) -> LakeConfig:
        _at_most_one(self.warehouse, self.path, "lake.warehouse", "lake.path")
        return self


class MetastoreConfig(_Strict):
    url: str | None = None
    """SQLAlchemy URL. Default: SQLite file ``<data_dir>/sluice.db``. The environment variable
    ``SLUICE_METASTORE_URL`` overrides it."""
    pooling: MetastorePooling = MetastorePooling.NONE
    """What sits between Sluice and a PostgreSQL metastore: ``none`` (connections go to the
    server, or through a session-mode pooler) or ``transaction`` (a transaction-mode pooler,
    PgBouncer's ``pool_mode = transaction``, which gives a connection a server connection for
    one transaction only). With ``transaction`` no statement is prepared on the server, and a
    collector looks for checkpoint requests with a small query twice a second instead of
    ``LISTEN`` (which a transaction-mode pooler does not carry); with ``none`` through such a
    pooler, statements fail ("prepared statement ... does not exist") and requests wait for
    the collector's 15-second look. SQLite ignores it. The environment variable
    ``SLUICE_METASTORE_POOLING`` overrides it."""
    retain_days: Annotated[float, Field(gt=0)] = 30
    """Maintenance forgets a committed checkpoint this many days after its commit (and never
    before its staging is removed, ``handoff.retain_hours``): its rows, its batches' and their
    byte ranges are deleted. Its lake rows stay; it can no longer be reprocessed (its staging
    is gone already), and a DAG run of its interval cleared after that lands a new
    checkpoint."""
