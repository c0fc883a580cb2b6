"""MetastoreView: reads an existing metastore with SELECTs only; never creates or migrates one."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import (
    AckerTreeRecord,
    BatchRecord,
    Metastore,
    SinkStateRecord,
    alembic_config,
    open_view,
)
from pipeline_core.source import FileRecord, FileState

PIPELINE = "web_access"


def revision(url: str) -> str | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            if not sa.inspect(connection).has_table("alembic_version"):
                return None
            return str(
                connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
            )
    finally:
        engine.dispose()


def file_record(fingerprint: str) -> FileRecord:
    return FileRecord("access", fingerprint, "/var/log/a.log", 1, 2, 0, 0, 10, FileState.LIVE)


def test_should_report_no_metastore_for_a_missing_sqlite_file(tmp_path: Path) -> None:
    database = tmp_path / "state" / "sluice.db"

    with open_view(f"sqlite:///{database}") as view:
        assert view is None

    assert not database.parent.exists()


def test_should_report_no_metastore_for_a_database_without_the_tables(metastore_url: str) -> None:
    with open_view(metastore_url) as view:
        assert view is None

    assert revision(metastore_url) is None


def test_should_read_an_older_schema_without_migrating_it(metastore_url: str) -> None:
    command.upgrade(alembic_config(url=metastore_url), "0002")

    with open_view(metastore_url) as view:
        assert view is not None
        assert view.acker_tree_totals(PIPELINE) is None  # its table came with 0003
        assert view.newest_checkpoints(PIPELINE, 20) == []

    assert revision(metastore_url) == "0002"


def test_should_read_what_the_metastore_holds_per_host(
    metastore: Metastore, metastore_url: str
) -> None:
    first = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
    batch = BatchRecord(first, "web-1", "/staging/1/web-1", 3, 30, 1, "00000000", 3, ())
    metastore.seal(PIPELINE, batch, [file_record("aa")], "web-1")
    metastore.seal(PIPELINE, batch, [], "web-1")  # retried: nothing new
    second = metastore.request_checkpoint(PIPELINE, "run-2").checkpoint_id
    metastore.save_sink_states(PIPELINE, "web-2", [SinkStateRecord("g", "s", 1, 5.0, 4.0, "x")])
    metastore.save_acker_trees(PIPELINE, "web-1", [AckerTreeRecord(1, 2, "access", "aa", 0, 7, 1)])
    assert metastore.acquire_lease(PIPELINE, "web-1", "web-1:1", 60)

    with open_view(metastore_url) as view:
        assert view is not None
        checkpoints = view.newest_checkpoints(PIPELINE, 20)
        of_run = view.checkpoint_of_run(PIPELINE, "run-1")
        batches = view.batches([first, second])
        files = view.files(PIPELINE)
        sink_states = view.sink_states(PIPELINE)
        leases = view.leases(PIPELINE)
        totals = view.acker_tree_totals(PIPELINE)

    assert [c.checkpoint_id for c in checkpoints] == [second, first]  # newest first
    assert of_run == metastore.checkpoint(first)
    assert [(b.checkpoint_id, b.host, b.line_count) for b in batches] == [(first, "web-1", 3)]
    assert files == {"web-1": [file_record("aa")]}
    assert sink_states == {"web-2": [SinkStateRecord("g", "s", 1, 5.0, 4.0, "x")]}
    assert [(lease.host, lease.holder) for lease in leases] == [("web-1", "web-1:1")]
    assert totals is not None
    assert [(t.host, t.trees, t.lines, t.bytes) for t in totals] == [("web-1", 1, 1, 7)]
    assert leases[0].expires_at.tzinfo is not None and totals[0].saved_at.tzinfo is not None


def test_should_raise_a_metastore_error_for_an_unreachable_database() -> None:
    with (
        pytest.raises(MetastoreError, match="cannot read the metastore postgresql"),
        open_view("postgresql+psycopg://nobody:secret@127.0.0.1:9/none"),
    ):
        pass
