"""``sluice db upgrade`` and ``sluice db current``: the metastore's migrations, explicitly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline_core.cli import ExitCode, main
from pipeline_core.metastore import head_revision
from tests.support.pipelines import write_config


def test_should_create_then_report_the_newest_migration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "data" / "sluice.db"
    path = write_config(tmp_path, f"sqlite:///{database}")

    assert main(["db", "current", str(path)]) == ExitCode.NOT_MIGRATED
    missing = capsys.readouterr().out
    assert not database.exists()
    assert main(["db", "upgrade", str(path)]) == ExitCode.OK
    upgraded = capsys.readouterr().out
    assert main(["db", "upgrade", str(path)]) == ExitCode.OK
    again = capsys.readouterr().out
    assert main(["db", "current", "--json", str(path)]) == ExitCode.OK
    current = json.loads(capsys.readouterr().out)

    head = head_revision()
    assert f"there is no metastore at {database}" in missing
    assert f"upgraded from an empty database to migration {head} (the newest)" in upgraded
    assert f"at migration {head} (the newest), nothing to do" in again
    assert current["metastores"][0]["current"] == head


def test_should_say_how_far_behind_an_old_metastore_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "sluice.db"
    path = write_config(tmp_path, f"sqlite:///{database}")
    assert main(["db", "upgrade", str(path)]) == ExitCode.OK
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = '0005'"))
    engine.dispose()
    capsys.readouterr()

    assert main(["db", "current", str(path)]) == ExitCode.NOT_MIGRATED
    assert main(["status", str(path)]) == ExitCode.NOT_MIGRATED

    captured = capsys.readouterr()
    assert f"at migration 0005 (the newest is {head_revision()})" in captured.out
    assert "run `sluice db upgrade CONFIG` to migrate it" in captured.err
