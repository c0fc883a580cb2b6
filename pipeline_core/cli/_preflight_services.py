"""The preflight's checks of what a pipeline connects to: the metastore (reachable, at which
migration), the lake's catalog in its database, and each sink that reaches something (HTTP
answers ``HEAD``, SQL ``SELECT 1``, a file sink's folder is writable). Nothing is created or
migrated."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from pipeline_core._metastore_pooling import MetastorePooling, apply_pooling
from pipeline_core.cli._check import Check, CheckStatus
from pipeline_core.cli._preflight_files import unwritable
from pipeline_core.config import PipelineConfig, mask_url_passwords
from pipeline_core.config._sinks import FileSinkConfig, HttpSinkConfig, SqlSinkConfig

METASTORE_DIALECTS = ("sqlite", "postgresql")
CONNECT_TIMEOUT_S = 5
"""How long a check waits for a database or a sink."""
UNAVAILABLE_STATUSES = (502, 503, 504)


# -- the metastore and the lake catalog ------------------------------------------------------------


def metastore_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be Sluice's metastore (not a URL, another database, no driver), or
    None. Nothing is connected to."""
    import sqlalchemy as sa

    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        shown = mask_url_passwords(url)  # masked before repr escapes it
        return f"not a database URL (got {shown!r}; e.g. sqlite:///data/sluice.db)"
    backend = parsed.get_backend_name()
    if backend not in METASTORE_DIALECTS:
        return f"{backend!r} is not supported ({', '.join(METASTORE_DIALECTS)})"
    try:
        parsed.get_dialect().import_dbapi()
    except ImportError as exc:
        return f"no database driver for {parsed.drivername!r} is installed ({exc})"
    except Exception as exc:  # an unknown driver name
        return f"no database driver for {parsed.drivername!r} ({exc})"
    return None


def check_metastore(url: str, pooling: MetastorePooling = MetastorePooling.NONE) -> Check:
    """Reachable (through a pooler, ``pooling``), and at which migration; nothing created or
    migrated."""
    from pipeline_core.errors import MetastoreError, MetastoreNotReadyError
    from pipeline_core.metastore import Metastore, redacted_url

    problem = metastore_url_problem(url)
    if problem is not None:
        return Check("metastore", CheckStatus.INVALID, f"metastore.url: {problem}")
    where = redacted_url(url)
    try:
        metastore = Metastore.connect(_with_connect_timeout(url), pooling=pooling)
        try:
            version = metastore.schema_version()
        finally:
            metastore.close()
    except MetastoreNotReadyError as exc:
        return Check("metastore", CheckStatus.NOT_MIGRATED, str(exc))
    except MetastoreError as exc:
        cause = str(exc.__cause__ or exc).splitlines()[0]
        return Check("metastore", CheckStatus.UNREACHABLE, f"cannot reach {where}: {cause}")
    if not version.up_to_date:
        return Check(
            "metastore",
            CheckStatus.NOT_MIGRATED,
            f"{where} is at {version.describe()}: run `sluice db upgrade CONFIG` to migrate it",
        )
    return Check("metastore", CheckStatus.OK, f"{where} reachable, at {version.describe()}")


def check_catalog(config: PipelineConfig) -> Check:
    """The lake's Iceberg catalog answers in the metastore's database."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchNamespaceError

    from pipeline_core.lake import CATALOG_NAME, catalog_url, warehouse_uri

    namespace = config.lake_namespace
    try:
        catalog = SqlCatalog(
            CATALOG_NAME,
            uri=catalog_url(_with_connect_timeout(config.metastore_url)),
            warehouse=warehouse_uri(config.lake_warehouse),
            init_catalog_tables="false",
        )
        apply_pooling(catalog.engine, config.metastore.pooling)
        try:
            tables = [name for _, name in catalog.list_tables(namespace)]
        except NoSuchNamespaceError:
            tables = None
        finally:
            catalog.engine.dispose()
    except Exception as exc:
        cause = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Check("lake catalog", CheckStatus.UNREACHABLE, f"cannot read the catalog: {cause}")
    if tables is None:
        held = f"namespace {namespace} not created yet (the first landing creates it)"
    else:
        held = f"namespace {namespace}: {', '.join(sorted(tables)) or 'no tables yet'}"
        refused = _schema_changes_refused(config, set(tables))
        if refused:
            return Check("lake catalog", CheckStatus.INVALID, refused[0], tuple(refused[1:]))
    return Check("lake catalog", CheckStatus.OK, f"reachable; {held}")


def _schema_changes_refused(config: PipelineConfig, tables: set[str]) -> list[str]:
    """Why the sources' tables that exist cannot take the columns the sources declare now
    (a type Iceberg cannot change), one line a table; what the landing would refuse."""
    from pipeline_core.errors import SchemaEvolutionError
    from pipeline_core.lake import check_evolution, lake_location, open_lake, source_schema

    refused = []
    with open_lake(lake_location(config)) as lake:
        for source in config.sources:
            if source.name not in tables:
                continue
            table = lake.load(source.name)
            if table is None:
                continue
            declared = source_schema(source.format.value, source.declared_columns())
            try:
                check_evolution(source.name, table.schema(), declared)
            except SchemaEvolutionError as exc:
                refused.append(str(exc))
    return refused


def _with_connect_timeout(url: str) -> str:
    """``url`` waiting at most ``CONNECT_TIMEOUT_S`` to connect (PostgreSQL)."""
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        parsed = parsed.update_query_dict({"connect_timeout": str(CONNECT_TIMEOUT_S)})
    return parsed.render_as_string(hide_password=False)


# -- sinks ---------------------------------------------------------------------------------------


def check_sinks(config: PipelineConfig) -> Iterator[Check]:
    """Each sink that reaches something: HTTP answers, SQL connects, a file's folder is
    writable. The handoff sink is the staging folder (checked above)."""
    for name, sink in config.sinks.items():
        label = f"sink {name} ({sink.type})"
        if isinstance(sink, HttpSinkConfig):
            yield check_http(label, sink)
        elif isinstance(sink, SqlSinkConfig):
            yield check_sql(label, sink.url)
        elif isinstance(sink, FileSinkConfig):
            problem = unwritable(sink.path.parent)
            status = CheckStatus.INVALID if problem else CheckStatus.OK
            yield Check(label, status, f"{sink.path}" + (f": {problem}" if problem else ""))


def check_http(label: str, sink: HttpSinkConfig) -> Check:
    """Any HTTP answer to a ``HEAD`` of the sink's URL but "unavailable" (502, 503, 504): its
    server is up (one that does not do ``HEAD`` answers 405 or 501)."""
    request = urllib.request.Request(sink.url, method="HEAD", headers=dict(sink.headers))
    timeout = min(sink.timeout_s, CONNECT_TIMEOUT_S)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return Check(label, CheckStatus.UNREACHABLE, f"{sink.url}: cannot connect ({reason})")
    if status in UNAVAILABLE_STATUSES:
        return Check(label, CheckStatus.UNREACHABLE, f"{sink.url} answered HEAD with {status}")
    return Check(label, CheckStatus.OK, f"{sink.url} answered HEAD with {status}")


def check_sql(label: str, url: str) -> Check:
    """``SELECT 1`` on the sink's database (a SQLite file: its folder is writable)."""
    import sqlalchemy as sa

    from pipeline_core.metastore import redacted_url

    parsed = sa.make_url(url)
    where = redacted_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        path = Path(parsed.database)
        problem = None if path.exists() else unwritable(path.parent)
        status = CheckStatus.INVALID if problem else CheckStatus.OK
        return Check(label, status, where + (f": {problem}" if problem else ""))
    try:
        engine = sa.create_engine(_with_connect_timeout(url))
        try:
            with engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        finally:
            engine.dispose()
    except Exception as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Check(label, CheckStatus.UNREACHABLE, f"{where}: cannot connect ({first_line})")
    return Check(label, CheckStatus.OK, f"{where} reachable")
