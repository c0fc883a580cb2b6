"""Alembic environment: runs on the connection handed over by :mod:`pipeline_core.metastore`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from pipeline_core.metastore._schema import metadata

config = context.config
connection = config.attributes.get("connection")

if connection is not None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = engine_from_config(
        config.get_section(config.config_ini_section) or {},
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as own_connection:
        context.configure(connection=own_connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
