"""``sluice status`` and ``sluice report``: read-only, they never create or migrate the
metastore."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pipeline_core.cli import ExitCode, main
from pipeline_core.cli._status import print_live_metrics
from pipeline_core.collector import FileMetrics
from pipeline_core.testing import append
from tests.pipeline_core.cli.support import no_traceback, sluice, upgraded
from tests.pipeline_core.collector.test_metric_families import metrics
from tests.support.file_names import FORGING, FORGING_SHOWN, NOT_UTF8, NOT_UTF8_SHOWN, named
from tests.support.pipelines import write_config


def test_should_show_an_empty_status_for_a_new_pipeline(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = upgraded(write_config(tmp_path, metastore_url))
    capsys.readouterr()

    assert main(["status", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    assert "files (0):" in out
    assert "checkpoints (newest 0):" in out


def test_should_report_an_empty_lake_for_a_new_pipeline(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = upgraded(write_config(tmp_path, metastore_url))
    capsys.readouterr()

    assert main(["report", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    assert "lake table access: 0 rows\n" in out
    assert "rejects: 0 lines" in out


@pytest.mark.timeout(60)
def test_should_print_status_and_report_as_json(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url, fmt="raw")
    append(tmp_path / "logs" / "access.log", b"a", b"b")
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    capsys.readouterr()

    assert main(["status", "--json", str(path)]) == ExitCode.OK
    status = json.loads(capsys.readouterr().out)
    assert main(["report", str(path), "--json"]) == ExitCode.OK
    report = json.loads(capsys.readouterr().out)

    assert status["pipeline"] == "web_access"
    assert [f["unsealed_bytes"] for f in status["files"]] == [0]
    assert [(c["checkpoint_id"], c["state"], c["lines"]) for c in status["checkpoints"]] == [
        (1, "sealed", 2)
    ]
    assert report["rows"] == {"access": 0}
    assert report["committed"] == []


@pytest.mark.timeout(60)
def test_should_count_the_bytes_no_seal_covers_and_list_files_not_tracked_yet(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="raw")
    sealed = tmp_path / "logs" / "sealed.log"
    append(sealed, b"a", b"b")
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    append(sealed, b"written after the seal")
    append(tmp_path / "logs" / "new.log", b"never collected")
    capsys.readouterr()

    assert main(["status", "--json", str(path)]) == ExitCode.OK
    status = json.loads(capsys.readouterr().out)

    by_name = {Path(f["path"]).name: f for f in status["files"]}
    assert (by_name["sealed.log"]["state"], by_name["sealed.log"]["unsealed_bytes"]) == (
        "live",
        len(b"written after the seal\n"),
    )
    assert (by_name["new.log"]["state"], by_name["new.log"]["unsealed_bytes"]) == (
        "untracked",
        len(b"never collected\n"),
    )


@pytest.mark.timeout(60)
def test_should_show_file_names_escaped_so_none_breaks_or_forges_a_line(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="raw")
    logs = tmp_path / "logs"
    append(named(logs, NOT_UTF8), b"a", b"b")
    append(named(logs, FORGING), b"c")
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    capsys.readouterr()

    assert main(["status", str(path)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert main(["status", "--json", str(path)]) == ExitCode.OK
    status = json.loads(capsys.readouterr().out)

    shown = sorted(str(logs / name) for name in (NOT_UTF8_SHOWN, FORGING_SHOWN))
    assert sorted(line.split("  ")[-1] for line in out.splitlines() if "sealed to" in line) == shown
    assert "\x1b" not in out and "\n12:00:00 ERROR" not in out
    assert sorted(f["path"] for f in status["files"]) == shown
    assert [f["unsealed_bytes"] for f in status["files"]] == [0, 0]


@pytest.mark.parametrize("command", ["status", "report", "validate"])
def test_should_neither_create_nor_migrate_the_metastore_to_read_it(
    tmp_path: Path, command: str
) -> None:
    database = tmp_path / "data" / "sluice.db"
    path = write_config(
        tmp_path, f"sqlite:///{database}", pattern="web_access.yaml", landing_jar=False
    )

    done = sluice(command, str(path))

    assert done.returncode == ExitCode.NOT_MIGRATED
    assert "run `sluice db upgrade CONFIG` to create it" in done.stdout + done.stderr
    assert not database.exists() and not database.parent.exists()
    no_traceback(done.stderr)


@pytest.mark.parametrize("command", ["status", "collect", "validate"])
def test_should_not_print_the_password_of_a_metastore_url_it_cannot_use(
    tmp_path: Path, command: str
) -> None:
    path = write_config(tmp_path, "sqlite:///unused.db")
    url = "my-pg://sluice:Sup3rS3cretPW@db.internal/sluice"  # a scheme no database has

    done = sluice(command, str(path), *(["--once"] if command == "collect" else []),
                  SLUICE_METASTORE_URL=url)  # fmt: skip

    assert done.returncode == ExitCode.INVALID
    assert "metastore.url" in done.stdout + done.stderr
    assert "Sup3rS3cretPW" not in done.stdout + done.stderr


def test_should_show_a_file_holding_an_unfinished_event_in_the_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    held = dataclasses.replace(
        metrics(),
        events_read=400_000,
        files=(FileMetrics("/logs/app.log", "fp", "active", 1000, 400, 300, 200, "app", 2.5),),
    )

    print_live_metrics(held.to_dict())

    out = capsys.readouterr().out
    assert "read 1000001 lines in 400000 events" in out
    assert "/logs/app.log  (an unfinished event held back 2.5 s)" in out
