"""Where the PostgreSQL pass of the test suite finds its database.

The suite runs twice: once against SQLite and once against a real PostgreSQL
server. ``make test`` prepares the second pass with ``scripts/postgres.sh``:

    scripts/postgres.sh install              # Debian's postgresql package, if missing
    scripts/postgres.sh start                # private cluster on 127.0.0.1:54329,
                                             # prints its SQLAlchemy URL
    scripts/postgres.sh reset-db             # empty ``sluice`` database

and exports the printed URL (``postgresql+psycopg://sluice@127.0.0.1:54329/sluice``
by default) as ``SLUICE_TEST_POSTGRES_URL`` for that pass. The server is a
throwaway: trust authentication, ``fsync``, ``synchronous_commit`` and
``full_page_writes`` off, data under ``data/postgres`` (``SLUICE_PG_DIR``), port
``SLUICE_PG_PORT``.

Outside that pass the variable is unset and :func:`postgres_url` returns
``None``, so PostgreSQL-only tests can skip themselves. To run them by hand::

    export SLUICE_TEST_POSTGRES_URL="$(scripts/postgres.sh start)"
"""

from __future__ import annotations

import os

ENV_VAR = "SLUICE_TEST_POSTGRES_URL"


def postgres_url() -> str | None:
    """The SQLAlchemy URL of the test PostgreSQL database, or ``None`` if not configured."""
    return os.environ.get(ENV_VAR) or None
