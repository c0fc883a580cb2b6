"""A private PostgreSQL server takes server settings that hold across its restarts, refuses a
name that is no setting's, and makes its database anew."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.support.postgres_server import PrivatePostgres, private_postgres

pytestmark = [pytest.mark.postgres_pass]


def show(server: PrivatePostgres, name: str) -> str:
    engine = sa.create_engine(server.url)
    try:
        with engine.connect() as connection:
            return str(connection.exec_driver_sql(f"SHOW {name}").scalar_one())
    finally:
        engine.dispose()


@pytest.mark.timeout(180)
def test_settings_read_at_start_apply_and_hold_across_a_restart() -> None:
    settings = {"shared_preload_libraries": "pg_stat_statements", "max_connections": "150"}
    with private_postgres(settings) as server:
        assert show(server, "shared_preload_libraries") == "pg_stat_statements"
        assert show(server, "max_connections") == "150"
        server.stop()
        server.start()
        assert show(server, "max_connections") == "150"


@pytest.mark.timeout(180)
def test_a_name_that_is_no_setting_is_refused_and_the_database_can_be_made_anew() -> None:
    with private_postgres() as server:
        with pytest.raises(ValueError, match="not a server setting"):
            server.configure({"max_connections = 5; DROP DATABASE sluice; --": "1"})
        engine = sa.create_engine(server.url)
        try:
            with engine.begin() as connection:
                connection.exec_driver_sql("CREATE TABLE kept (id integer)")
        finally:
            engine.dispose()
        server.reset_database()
        engine = sa.create_engine(server.url)
        try:
            with engine.connect() as connection:
                assert not sa.inspect(connection).has_table("kept")
        finally:
            engine.dispose()
