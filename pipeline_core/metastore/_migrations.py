"""Bringing a metastore database to the newest schema with Alembic."""

from __future__ import annotations

import functools
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


def upgrade_to_head(connection: Connection) -> None:
    """Apply every migration not yet applied (cheap on an up-to-date database: one query)."""
    current = MigrationContext.configure(connection).get_current_revision()
    if current != head_revision():
        command.upgrade(alembic_config(connection), "head")
