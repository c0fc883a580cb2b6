"""Bringing a metastore database to the newest schema with Alembic."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic config for Sluice's migrations, bound to a connection or a URL."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str | None:
    """The newest revision of Sluice's migrations."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@dataclass(frozen=True)
class SchemaVersion:
    """Which of Sluice's migrations a metastore database is at."""

    current: str | None
    """The revision applied last; None for a database Sluice never migrated."""
    head: str | None
    """The newest revision this version of Sluice knows."""

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    def describe(self) -> str:
        """For messages: ``migration 0007 (the newest)``, ``migration 0005 (the newest is
        0007)``, ``no Sluice schema (the newest migration is 0007)``."""
        if self.current is None:
            return f"no Sluice schema (the newest migration is {self.head})"
        if self.up_to_date:
            return f"migration {self.current} (the newest)"
        return f"migration {self.current} (the newest is {self.head})"


def schema_version(connection: Connection) -> SchemaVersion:
    """The migration the database of ``connection`` is at (one query, nothing changed)."""
    current = MigrationContext.configure(connection).get_current_revision()
    return SchemaVersion(current, head_revision())


def upgrade_to_head(connection: Connection) -> SchemaVersion:
    """Apply every migration not yet applied (cheap on an up-to-date database: one query);
    returns the version the database was at before."""
    before = schema_version(connection)
    if not before.up_to_date:
        command.upgrade(alembic_config(connection), "head")
    return before
