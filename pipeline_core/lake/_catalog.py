"""The lake's Iceberg catalog: a SQL catalog in the metastore's own database.

The catalog tables (``iceberg_tables``, ``iceberg_namespace_properties``) are the layout
Iceberg's JDBC catalog uses, created by the metastore's migrations; pyiceberg's ``SqlCatalog``
reads and commits through them, and any engine with an Iceberg JDBC catalog (Spark with the
Iceberg runtime, Trino, Flink) or pyiceberg (DuckDB over its scans) reads the same tables.
Table data and metadata live under the warehouse, ``<lake>/<namespace>/<table>/``: a local
folder, whose locations are ``file://`` + the path as written (not %-encoded), as Spark and
pyiceberg both read them; or an object store's URL (``s3://bucket/prefix``, ``gs://``,
``abfs://``), read and written through the tables' FileIO (pyiceberg's ``PyArrowFileIO``). The
FileIO's endpoint and region come from this process's environment (``AWS_ENDPOINT_URL_S3``,
``AWS_ENDPOINT_URL``, ``AWS_REGION``...: :func:`store_properties`), its credentials from the
store's standard chain; they are catalog properties of this process only, never written into
the catalog's database nor into a table's metadata.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import sqlalchemy as sa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.name_mapping import NameMapping
from pyiceberg.types import (
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StructType,
)

from pipeline_core._metastore_pooling import MetastorePooling, apply_pooling
from pipeline_core.errors import LakeError, SchemaEvolutionError
from pipeline_core.formats import ColumnType
from pipeline_core.lake._schemas import (
    MANAGED_PROPERTIES,
    REJECTS_SCHEMA,
    REJECTS_TABLE,
    partition_spec,
    source_schema,
    table_properties,
)
from pipeline_core.storage import S3_ENDPOINT_ENV, StorageLocation, StorageScheme

CATALOG_NAME = "sluice"
"""The catalog's name in the catalog tables (an engine's JDBC catalog must use the same)."""
CATALOG_TABLE = "iceberg_tables"
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
SQLITE_BUSY_SECONDS = "30"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LakeLocation:
    """Where a pipeline's lake tables are: the catalog's database, the warehouse (a folder or
    an object store's URL) and the namespace (the pipeline's name unless configured)."""

    catalog_url: str
    """SQLAlchemy URL of the metastore database, which holds the catalog tables."""
    warehouse: Path | str
    """A local folder (a path, or a ``file://`` URL), or an object store's URL
    (``s3://bucket/prefix``...)."""
    namespace: str
    catalog_pooling: MetastorePooling = MetastorePooling.NONE
    """What sits between the catalog's connections and the database (``metastore.pooling``)."""

    def identifier(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    @property
    def storage(self) -> StorageLocation:
        """The warehouse as a :class:`StorageLocation`.

        Raises:
            LocationError: the warehouse's URL is not supported or holds a credential.
        """
        return StorageLocation.parse(self.warehouse)


class LakeCatalog:
    """The lake tables of one namespace. Open with :meth:`open`; close when done."""

    def __init__(self, catalog: SqlCatalog, location: LakeLocation) -> None:
        self.catalog = catalog
        self.location = location

    @classmethod
    def open(cls, location: LakeLocation) -> LakeCatalog:
        """Connect to the catalog of ``location`` (whose metastore must be migrated).

        :raises LakeError: the database cannot be reached or holds no catalog tables.
        """
        where = sa.make_url(location.catalog_url).render_as_string(hide_password=True)
        try:
            storage = location.storage
            warehouse: Path | str
            if storage.is_local:
                warehouse = Path(os.path.abspath(storage.local_path))
                warehouse.mkdir(parents=True, exist_ok=True)
            else:
                warehouse = storage.url
            catalog = SqlCatalog(
                CATALOG_NAME,
                uri=catalog_url(location.catalog_url),
                warehouse=warehouse_uri(warehouse),
                init_catalog_tables="false",
                **store_properties(warehouse),
            )
            apply_pooling(catalog.engine, location.catalog_pooling)
            with catalog.engine.connect() as connection:
                migrated = sa.inspect(connection).has_table(CATALOG_TABLE)
        except Exception as exc:
            raise LakeError(f"cannot open the lake catalog in {where}: {exc}") from exc
        if not migrated:
            catalog.engine.dispose()
            raise LakeError(
                f"the metastore {where} holds no lake catalog yet (table {CATALOG_TABLE}): "
                "it is created when the metastore is migrated (`sluice db upgrade CONFIG`)"
            )
        return cls(catalog, dataclasses.replace(location, warehouse=warehouse))

    def close(self) -> None:
        self.catalog.engine.dispose()

    def __enter__(self) -> LakeCatalog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def load(self, table: str) -> Table | None:
        """The table named ``table`` of the namespace, or None when it does not exist."""
        try:
            return self.catalog.load_table(self.location.identifier(table))
        except NoSuchTableError:
            return None

    def ensure_tables(
        self,
        formats: Mapping[str, str],
        declared: Mapping[str, Sequence[tuple[str, ColumnType]]] | None = None,
    ) -> dict[str, Table]:
        """Every source table of ``formats`` (``{table: format}``, with the columns each
        source declares: ``declared``) and the rejects table, created when missing and evolved
        to their declared schemas (:meth:`ensure_table`).

        Raises:
            SchemaEvolutionError: a table cannot take its declared schema; no table was
                changed.
        """
        self.catalog.create_namespace_if_not_exists(self.location.namespace)
        schemas = {
            name: source_schema(fmt, (declared or {}).get(name, ()))
            for name, fmt in formats.items()
        }
        for name, schema in schemas.items():
            existing = self.load(name)
            if existing is not None:
                check_evolution(name, existing.schema(), schema)
        tables = {
            name: self.ensure_table(name, schemas[name], fmt) for name, fmt in formats.items()
        }
        tables[REJECTS_TABLE] = self.ensure_table(REJECTS_TABLE, REJECTS_SCHEMA, REJECTS_TABLE)
        return tables

    def ensure_table(self, name: str, schema: Schema, fmt: str) -> Table:
        """Table ``name``: created with ``schema`` when missing; otherwise the columns of
        ``schema`` it lacks are added and those whose type ``schema`` widens are promoted (an
        Iceberg schema update: old files read an added column as null, nothing is rewritten).

        Raises:
            SchemaEvolutionError: a column's type changes in a way Iceberg cannot make.
        """
        identifier = self.location.identifier(name)
        properties = {**table_properties(fmt), NAME_MAPPING_PROPERTY: _name_mapping(schema)}
        table = self.catalog.create_table_if_not_exists(
            identifier,
            schema=schema,
            partition_spec=partition_spec(schema),
            properties=properties,
        )
        stale = {k: v for k, v in MANAGED_PROPERTIES.items() if table.properties.get(k) != v}
        if stale:
            with table.transaction() as transaction:
                transaction.set_properties(stale)
        check_evolution(name, table.schema(), schema)
        present = {field.name: type_shape(field.field_type) for field in table.schema().fields}
        missing = [
            field.name
            for field in schema.fields
            if present.get(field.name) != type_shape(field.field_type)
        ]
        if missing:
            log.info("Adding or widening columns %s of lake table %s", missing, identifier)
            with table.transaction() as transaction:
                with transaction.update_schema() as update:
                    update.union_by_name(schema)
                evolved = transaction.table_metadata.schema()
                transaction.set_properties({NAME_MAPPING_PROPERTY: _name_mapping(evolved)})
            table = self.catalog.load_table(identifier)
        return table


_PROMOTIONS = {(IntegerType(), LongType()), (FloatType(), DoubleType())}
"""The type changes Iceberg makes to a column in place (old files read as the new type)."""


def check_evolution(table: str, current: Schema, declared: Schema) -> None:
    """Whether table ``table`` of schema ``current`` can take ``declared``: columns may be
    added, and widened as Iceberg promotes (int to long, float to double); a column left out
    of ``declared`` stays (older rows keep it).

    Raises:
        SchemaEvolutionError: a column's type would change otherwise (narrowed, or another
            type), naming the table, the column and both types.
    """
    present = {field.name: field.field_type for field in current.fields}
    for field in declared.fields:
        before = present.get(field.name)
        if before is None or type_shape(before) == type_shape(field.field_type):
            continue
        if (before, field.field_type) not in _PROMOTIONS:
            raise SchemaEvolutionError(
                f"lake table {table}: column {field.name} is {type_shape(before)} and its "
                f"source now declares {type_shape(field.field_type)}; Iceberg changes a "
                "column's type only from int to long and float to double. Declare it as "
                "before, or land the source into a new table (another source name)"
            )


def type_shape(kind: IcebergType) -> str:
    """A type as its columns' names and types make it, without field ids: a nested column
    added to a table gets the table's next ids, not those of a table created with it, and is
    the same column all the same."""
    if isinstance(kind, StructType):
        fields = ", ".join(f"{f.name}: {type_shape(f.field_type)}" for f in kind.fields)
        return f"struct<{fields}>"
    if isinstance(kind, ListType):
        return f"list<{type_shape(kind.element_type)}>"
    if isinstance(kind, MapType):
        return f"map<{type_shape(kind.key_type)}, {type_shape(kind.value_type)}>"
    return str(kind)


def _name_mapping(schema: Schema) -> str:
    """How files written without Iceberg field ids (Spark's) map to the schema: by name."""
    mapping: NameMapping = schema.name_mapping
    return mapping.model_dump_json()


def warehouse_uri(warehouse: Path | str) -> str:
    """The catalog's ``warehouse`` property for a folder or an object store's URL: ``file://``
    + the absolute path, or the URL without its options (which are this process's, not the
    tables')."""
    storage = StorageLocation.parse(warehouse)
    if storage.is_local:
        return f"file://{os.path.abspath(storage.local_path)}"
    return storage.redacted.rstrip("/")


def store_properties(
    warehouse: Path | str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The FileIO properties of an object store's warehouse (none for a folder): for S3 the
    endpoint (the URL's ``endpoint_override`` option, else ``AWS_ENDPOINT_URL_S3`` or
    ``AWS_ENDPOINT_URL``) and region (the URL's ``region`` option, else ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION``); for Azure the account of the URL. No credential: pyarrow's
    clients take them from the store's standard chain (the environment first), so nothing
    secret is ever a catalog property.

    Raises:
        LocationError: the warehouse's URL is not supported or holds a credential.
    """
    env = os.environ if environ is None else environ
    storage = StorageLocation.parse(warehouse)
    parsed = urlparse(storage.url)
    options = dict(parse_qsl(parsed.query))
    properties: dict[str, str] = {}
    if storage.scheme is StorageScheme.S3:
        endpoint = options.get("endpoint_override") or next(
            (env[name] for name in S3_ENDPOINT_ENV if env.get(name)), None
        )
        if endpoint is not None:
            if "://" not in endpoint:
                endpoint = f"{options.get('scheme', 'https')}://{endpoint}"
            properties["s3.endpoint"] = endpoint
        region = options.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            properties["s3.region"] = region
    elif storage.scheme is StorageScheme.ABFS:
        host = parsed.netloc.rpartition("@")[2]
        account = options.get("account_name") or (host.split(".", 1)[0] if "." in host else "")
        account = account or env.get("AZURE_STORAGE_ACCOUNT_NAME", "")
        if account:
            properties["adls.account-name"] = account
    elif storage.scheme is StorageScheme.LOCAL:
        return {}
    return properties


def catalog_url(metastore_url: str) -> str:
    """The metastore URL as the catalog connects with it (SQLite waits for a busy database)."""
    url = sa.make_url(metastore_url)
    if url.get_backend_name() == "sqlite" and "timeout" not in url.query:
        url = url.update_query_dict({"timeout": SQLITE_BUSY_SECONDS})
    return url.render_as_string(hide_password=False)


@contextmanager
def open_lake(location: LakeLocation) -> Iterator[LakeCatalog]:
    """:meth:`LakeCatalog.open`, closed on exit."""
    catalog = LakeCatalog.open(location)
    try:
        yield catalog
    finally:
        catalog.close()
