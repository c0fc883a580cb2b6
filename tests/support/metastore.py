"""The metastore each test gets: a SQLite file, or a fresh PostgreSQL database per test.

In the PostgreSQL pass (``SLUICE_TEST_POSTGRES_URL`` set, see :mod:`tests.support.postgres`)
every test that asks for ``metastore_url`` gets its own database, created from the pass's server
and dropped afterwards, so tests never see each other's checkpoints.

``module_metastore_url`` is the same for a whole test module: for the tests that share one
costly state (a landing whose lake they all read), built by a module-scoped fixture.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline_core.metastore import Metastore
from tests.support.postgres import postgres_url


@contextmanager
def metastore_database(folder: Path) -> Iterator[str]:
    """The URL of an empty metastore: a SQLite file in ``folder``, or in the PostgreSQL pass a
    database of its own on the pass's server, dropped when the block ends."""
    server = postgres_url()
    if server is None:
        yield f"sqlite:///{folder / 'sluice.db'}"
        return
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def metastore_url(tmp_path: Path) -> Iterator[str]:
    with metastore_database(tmp_path) as url:
        yield url


@pytest.fixture(scope="module")
def module_metastore_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A metastore shared by the tests of one module (``metastore_url``'s, created once)."""
    with metastore_database(tmp_path_factory.mktemp("metastore")) as url:
        yield url


@pytest.fixture
def metastore(metastore_url: str) -> Iterator[Metastore]:
    store = Metastore.open(metastore_url)
    try:
        yield store
    finally:
        store.close()
