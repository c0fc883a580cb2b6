"""The checks of ``sluice validate``: everything a pipeline needs before it runs, read-only.

Each check is one :class:`Check` with a :class:`CheckStatus`; nothing is created, migrated or
written (no folder, no database file, no table): folders are judged by the nearest one that
exists, the metastore is only connected to, sinks only asked (HTTP ``HEAD``, SQL ``SELECT 1``).
The one exception is staging in an object store, which can only be known writable by writing:
a probe object is written, read back and deleted.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline_core._compat import StrEnum
from pipeline_core._file_names import shown_path
from pipeline_core.config import PipelineConfig, SourceConfig, mask_url_passwords
from pipeline_core.config._sinks import FileSinkConfig, HttpSinkConfig, SqlSinkConfig

METASTORE_DIALECTS = ("sqlite", "postgresql")
CONNECT_TIMEOUT_S = 5
"""How long a check waits for a database or a sink."""
UNAVAILABLE_STATUSES = (502, 503, 504)
LISTED_FILES = 10
"""Files listed per source; the rest are counted."""
SAMPLED_FILES = 3
SAMPLED_BYTES = 64 * 1024
SAMPLED_LINES = 200
SHOWN_MATCHES = 2
"""A ``regex`` source: its pattern is tried on the first ``SAMPLED_LINES`` lines (within
``SAMPLED_BYTES``) of its first ``SAMPLED_FILES`` files, and the first ``SHOWN_MATCHES``
matches of each are shown with their columns."""
PASS_THROUGH_SCHEDULES = ("@once", "@continuous")
CRON_PRESETS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@quarterly": "0 0 1 */3 *",
    "@yearly": "0 0 1 1 *",
}
"""Airflow's cron presets, as the cron expressions they stand for."""


class CheckStatus(StrEnum):
    """How a check ended; the worst one decides ``sluice validate``'s exit status."""

    OK = "ok"
    INVALID = "invalid"
    """The config is wrong (or names something that cannot work): fix the file."""
    UNREACHABLE = "unreachable"
    """Something the config names cannot be reached now: fix the environment."""
    NOT_MIGRATED = "not migrated"
    """The metastore does not exist or is behind: ``sluice db upgrade``."""


@dataclass(frozen=True)
class Check:
    """One check of a pipeline: what was checked, how it ended, one line saying so."""

    name: str
    """What was checked: ``schedule``, ``source access``, ``metastore``, ``sink web``..."""
    status: CheckStatus
    message: str
    details: tuple[str, ...] = ()
    """More lines (a source's matching files)."""

    @property
    def ok(self) -> bool:
        return self.status is CheckStatus.OK


def preflight(config: PipelineConfig) -> list[Check]:
    """Every check of ``config`` (read and valid already), in the order a reader follows."""
    checks = [check_schedule(config.schedule)]
    checks += [check_source(source) for source in config.sources]
    checks.append(check_folder("data_dir", config.data_dir))
    checks += check_staging(config)
    checks.append(check_lake(config))
    metastore = check_metastore(config.metastore_url)
    checks.append(metastore)
    if metastore.ok:
        checks.append(check_catalog(config))
    checks += list(check_sinks(config))
    return checks


# -- the schedule --------------------------------------------------------------------------------


def check_schedule(schedule: str | None) -> Check:
    """A cron expression or an Airflow preset (``@hourly``, ``@once``...); null: manual runs."""
    from croniter import croniter

    if schedule is None:
        return Check("schedule", CheckStatus.OK, "none: the DAG runs only when triggered")
    if schedule in PASS_THROUGH_SCHEDULES:
        return Check("schedule", CheckStatus.OK, f"{schedule} (an Airflow preset)")
    expression = CRON_PRESETS.get(schedule, schedule)
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        return Check(
            "schedule",
            CheckStatus.INVALID,
            f"{schedule!r} is not a cron expression (five fields, e.g. '*/5 * * * *') nor an "
            f"Airflow preset ({', '.join([*CRON_PRESETS, *PASS_THROUGH_SCHEDULES])})",
        )
    upcoming = croniter(expression, datetime.now(timezone.utc)).get_next(datetime)
    return Check("schedule", CheckStatus.OK, f"{schedule} (next run {upcoming:%Y-%m-%d %H:%M} UTC)")


# -- sources and folders -------------------------------------------------------------------------


def check_source(source: SourceConfig) -> Check:
    """The files the source's globs match now; none is invalid unless it is ``optional``.
    Below them, the paths matched that will not be read (a symlink, or one leading out of the
    allowed folders: the source's symlink policy), each with why."""
    from pipeline_core.source import discover, explain_not_read

    name = f"source {source.name}"
    patterns = ", ".join(source.paths)
    found = discover(source)
    files = sorted(found.files.values())
    not_read = [
        f"not read: {shown_path(path)}: {explain_not_read(path, why)}"
        for path, why in sorted(found.refused.items())[:LISTED_FILES]
    ]
    if len(found.refused) > LISTED_FILES:
        not_read.append(f"... and {len(found.refused) - LISTED_FILES} more not read")
    if not files:
        if source.optional:
            message = f"no file matches {patterns} yet (optional)"
            return Check(name, CheckStatus.OK, message, tuple(not_read))
        return Check(
            name,
            CheckStatus.INVALID,
            f"no file matches {patterns} (set `optional: true` on the source if its files "
            "appear later)",
            tuple(not_read),
        )
    details = [f"{shown_path(path)}  {size} bytes" for path, size in files[:LISTED_FILES]]
    if len(files) > LISTED_FILES:
        details.append(f"... and {len(files) - LISTED_FILES} more")
    if source.pattern is not None:
        details += pattern_samples(source.pattern, [path for path, _ in files[:SAMPLED_FILES]])
    count = f"{len(files)} files match" if len(files) > 1 else "1 file matches"
    return Check(name, CheckStatus.OK, f"{count} {patterns}", (*details, *not_read))


def pattern_samples(pattern: str, paths: list[str]) -> list[str]:
    """What a ``regex`` source's pattern reads in the first lines of each of ``paths``: how
    many match, and the columns of the first ones that do."""
    import re

    compiled = re.compile(pattern)
    out = []
    for path in paths:
        try:
            with open(path, "rb") as file:
                head = file.read(SAMPLED_BYTES)
        except OSError as exc:
            out.append(f"{shown_path(path)}: not read ({exc.strerror})")
            continue
        lines = head.split(b"\n")[:-1][:SAMPLED_LINES]
        texts = [line.decode("utf-8", "replace").removesuffix("\r") for line in lines]
        matches = [(n, m) for n, text in enumerate(texts, 1) if (m := compiled.match(text))]
        out.append(
            f"{shown_path(path)}: the pattern matches {len(matches)} of its first {len(texts)} "
            "lines (the others are a multiline event's later lines, or no_match rejects)"
        )
        for number, match in matches[:SHOWN_MATCHES]:
            fields = ", ".join(f"{k}={_clipped(v)!r}" for k, v in match.groupdict().items())
            out.append(f"  line {number}: {fields}")
    return out


def _clipped(value: str | None, most: int = 60) -> str | None:
    return value if value is None or len(value) <= most else value[:most] + "..."


def check_staging(config: PipelineConfig) -> list[Check]:
    """The staging folder; or, with staging in an object store, the local spool folder and
    the store: reachable and writable, by a probe object written, read back and deleted (the
    one thing ``sluice validate`` writes, and removes again)."""
    from pipeline_core.errors import StorageError
    from pipeline_core.storage import probe_writable

    location = config.staging_location
    if location.is_local:
        return [check_folder("staging", location.local_path)]
    checks = [check_folder("spool", config.seal_dir)]
    try:
        probe_writable(location)
    except StorageError as exc:
        checks.append(Check("staging", CheckStatus.UNREACHABLE, str(exc)))
    else:
        checks.append(
            Check(
                "staging",
                CheckStatus.OK,
                f"{location} (writable: a probe object written and deleted)",
            )
        )
    return checks


def check_lake(config: PipelineConfig) -> Check:
    """The lake's warehouse folder; or, with the lake in an object store, the store: reachable
    and writable, by a probe object written, read back and deleted."""
    from pipeline_core.errors import StorageError
    from pipeline_core.storage import probe_writable

    location = config.lake_location
    if location.is_local:
        return check_folder("lake", location.local_path)
    try:
        probe_writable(location)
    except StorageError as exc:
        return Check("lake", CheckStatus.UNREACHABLE, str(exc))
    return Check(
        "lake", CheckStatus.OK, f"{location} (writable: a probe object written and deleted)"
    )


def check_folder(name: str, folder: Path) -> Check:
    """Whether this process can write ``folder``, or create it in the nearest folder that
    exists."""
    problem = unwritable(folder)
    if problem is not None:
        return Check(name, CheckStatus.INVALID, f"{folder}: {problem}")
    state = "writable" if folder.exists() else "to be created, its parent writable"
    return Check(name, CheckStatus.OK, f"{folder} ({state})")


def unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be written (or created), or None."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable by this user (uid {os.getuid()})"
    return None


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


def check_metastore(url: str) -> Check:
    """Reachable, and at which migration; nothing created or migrated."""
    from pipeline_core.errors import MetastoreError, MetastoreNotReadyError
    from pipeline_core.metastore import Metastore, redacted_url

    problem = metastore_url_problem(url)
    if problem is not None:
        return Check("metastore", CheckStatus.INVALID, f"metastore.url: {problem}")
    where = redacted_url(url)
    try:
        metastore = Metastore.connect(_with_connect_timeout(url))
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
