"""What sits between Sluice and a PostgreSQL metastore: :class:`MetastorePooling`, and what it
changes in an engine (:func:`apply_pooling`).

A fleet of collectors (one per log host) shares one metastore; beyond some tens of hosts a
connection pooler in transaction mode (PgBouncer's ``pool_mode = transaction``) sits in front
of PostgreSQL. Such a pooler hands a client a server connection for one transaction only, so
nothing may outlive a transaction on a connection: Sluice's statements are not prepared on the
server, and collectors do not ``LISTEN`` for checkpoint requests but query for them
(``pipeline_core.metastore.QueryingRequestProbe``). Everything else Sluice does is
transaction-scoped already: row locks (``SELECT ... FOR UPDATE``), the lease clock (the
transaction's ``now()``), ``pg_notify`` (delivered at commit), isolation levels (set in each
``BEGIN``). No advisory lock, ``SET``, temporary table or server-side cursor is used.

Its own module, with nothing but the standard library imported (SQLAlchemy where an engine is
fitted), so that the config, the metastore and the lake's catalog (which the Spark landing
ships) share it without the config loading SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline_core._compat import StrEnum

if TYPE_CHECKING:
    from sqlalchemy import Engine

METASTORE_POOLING_ENV = "SLUICE_METASTORE_POOLING"
"""The environment variable that overrides ``metastore.pooling`` (as ``SLUICE_METASTORE_URL``
overrides ``metastore.url``); the Spark landing gets it from the process that submits it."""


class MetastorePooling(StrEnum):
    """How connections reach a PostgreSQL metastore (SQLite ignores it)."""

    NONE = "none"
    """Directly, or through a session-mode pooler: a client keeps its server connection, so
    statements are prepared on the server after a few runs and collectors ``LISTEN`` for
    requests."""
    TRANSACTION = "transaction"
    """Through a transaction-mode pooler (PgBouncer ``pool_mode = transaction``): no
    statement is prepared on the server and collectors look for requests by a small query
    twice a second instead of ``LISTEN``."""


def apply_pooling(engine: Engine, pooling: MetastorePooling) -> Engine:
    """``engine`` made fit for ``pooling``; returns it. Call it before the engine connects.

    Behind a transaction-mode pooler, psycopg's connections prepare no statement on the server
    (``prepare_threshold = None``; by default psycopg prepares a statement run five times, and
    its next run lands on a server connection that does not know it, or knows another
    client's under the same name). Other drivers and databases are left as they are.
    """
    if pooling is MetastorePooling.TRANSACTION and engine.dialect.name == "postgresql":
        from sqlalchemy import event

        event.listen(engine, "connect", _prepare_nothing)
    return engine


def _prepare_nothing(dbapi_connection: Any, _record: Any) -> None:
    if hasattr(dbapi_connection, "prepare_threshold"):  # psycopg 3; psycopg2 never prepares
        dbapi_connection.prepare_threshold = None
