"""What every ``sluice`` command shares: ``--version``, ``-v`` anywhere, one-line failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.cli import ExitCode, main
from pipeline_core.cli._options import version
from tests.pipeline_core.cli.support import sluice
from tests.support.pipelines import write_config


@pytest.mark.parametrize("args", [["--version"], ["status", "--version"]], ids=["top", "command"])
def test_should_print_the_version(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)

    assert exited.value.code == 0
    assert capsys.readouterr().out == f"sluice {version()}\n"


def test_should_show_the_traceback_only_with_v_given_anywhere(tmp_path: Path) -> None:
    path = write_config(tmp_path, "sqlite:///absent/x.db")

    plain = sluice("status", str(path))
    after = sluice("status", str(path), "-v")
    before = sluice("-v", "status", str(path))

    assert plain.returncode == after.returncode == before.returncode == ExitCode.NOT_MIGRATED
    assert plain.stderr.count("\n") == 1 and "Traceback" not in plain.stderr
    assert "Traceback" in after.stderr and "Traceback" in before.stderr
