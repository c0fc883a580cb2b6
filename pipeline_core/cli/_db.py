"""``sluice db upgrade|current CONFIG|FOLDER``: the metastore's schema, explicitly.

``upgrade`` creates the database (a SQLite file) when it does not exist and applies every
migration not applied yet: run it once when installing or upgrading Sluice, before several
processes start at once. ``current`` says which migration the database is at and changes
nothing (exit 4 when it is missing or behind). For a folder, each distinct metastore of its
configs once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import add_json

if TYPE_CHECKING:
    from pipeline_core.metastore import MetastorePooling


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "the metastore's schema (Alembic migrations)"
    db = commands.add_parser("db", parents=[common], help=text, description=text)
    actions = db.add_subparsers(required=True, metavar="ACTION")
    for name, handler, help_text in (
        ("upgrade", upgrade, "create the metastore if needed and apply every migration"),
        ("current", current, "the migration the metastore is at; changes nothing"),
    ):
        action = actions.add_parser(name, parents=[common], help=help_text, description=help_text)
        action.add_argument(
            "config", type=Path, help="pipeline config file (YAML), or a folder of them"
        )
        add_json(action)
        action.set_defaults(handler=handler)


def upgrade(args: argparse.Namespace) -> int:
    from pipeline_core.metastore import Metastore, redacted_url

    results = []
    for url, pooling in _metastores(args.config):
        metastore = Metastore.connect(url, create=True, pooling=pooling)
        try:
            before = metastore.migrate()
            after = metastore.schema_version()
        finally:
            metastore.close()
        results.append(
            {"metastore": redacted_url(url), "before": before.current, "after": after.current}
        )
        if not args.json:
            if before.up_to_date:
                print(f"metastore {redacted_url(url)}: at {after.describe()}, nothing to do")
            else:
                was = f"migration {before.current}" if before.current else "an empty database"
                print(f"metastore {redacted_url(url)}: upgraded from {was} to {after.describe()}")
    if args.json:
        from pipeline_core.cli._output import print_json

        print_json({"metastores": results})
    return ExitCode.OK


def current(args: argparse.Namespace) -> int:
    from pipeline_core.errors import MetastoreNotReadyError
    from pipeline_core.metastore import Metastore, head_revision, redacted_url

    results = []
    code = ExitCode.OK
    for url, pooling in _metastores(args.config):
        where = redacted_url(url)
        try:
            metastore = Metastore.connect(url, pooling=pooling)
        except MetastoreNotReadyError as exc:
            results.append({"metastore": where, "current": None, "head": head_revision(),
                            "exists": False, "message": str(exc)})  # fmt: skip
            code = ExitCode.NOT_MIGRATED
            if not args.json:
                print(str(exc))
            continue
        try:
            version = metastore.schema_version()
        finally:
            metastore.close()
        if not version.up_to_date:
            code = ExitCode.NOT_MIGRATED
        results.append({"metastore": where, "current": version.current, "head": version.head,
                        "exists": True})  # fmt: skip
        if not args.json:
            hint = "" if version.up_to_date else ": run `sluice db upgrade` to migrate it"
            print(f"metastore {where}: at {version.describe()}{hint}")
    if args.json:
        from pipeline_core.cli._output import print_json

        print_json({"metastores": results})
    return code


def _metastores(path: Path) -> list[tuple[str, MetastorePooling]]:
    """The metastore URL and pooling of the config, or each distinct pair of a folder's
    configs."""
    from pipeline_core.cli._output import open_operations

    files = sorted(p for p in path.glob("*.yaml") if p.is_file()) if path.is_dir() else [path]
    if not files:
        from pipeline_core.errors import ConfigError

        raise ConfigError(str(path), ["no pipeline config (*.yaml) in the folder"])
    configs = [open_operations(file, migrate=False).config for file in files]
    return list(dict.fromkeys((c.metastore_url, c.metastore.pooling) for c in configs))
