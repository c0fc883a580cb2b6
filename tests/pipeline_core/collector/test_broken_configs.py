"""A collector over a folder of configs isolates the bad ones: a file that is not YAML or does
not validate is reported (log, ``config_problems.json``) and skipped, the others are served,
and the file's pipeline starts at the reload after it is fixed."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_core.collector import (
    CollectorService,
    ConfigChange,
    ConfigSource,
    config_problems_file,
    read_config_problems,
)
from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.errors import ConfigError
from pipeline_core.testing import append, lines, staged_payloads, wait_until
from tests.pipeline_core.collector.support import Tailing
from tests.support.pipelines import load, write_config
from tests.support.processes import stop_group

# make test runs these once, on SQLite: the metastore is not what they test, and its part in
# them runs on PostgreSQL too, in tests/pipeline_core/metastore and the system tests.
pytestmark = pytest.mark.sqlite_pass

NOT_YAML = "name: broken\nsources: [{paths: [x], format: raw}\n"  # the list is never closed
UNKNOWN_KEY = "name: invalid\nsources: [{paths: [x], format: raw}]\ncolector: {}\n"


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def folder_with_broken_files(tmp_path: Path, metastore_url: str) -> Path:
    """``pipelines/`` holding ``good.yaml`` (reading ``good/*.log``), ``broken.yaml`` (not
    YAML) and ``invalid.yaml`` (an unknown key)."""
    folder = tmp_path / "pipelines"
    write_config(folder, metastore_url, name="good", pattern=f"{tmp_path}/good/*.log")
    (folder / "broken.yaml").write_text(NOT_YAML)
    (folder / "invalid.yaml").write_text(UNKNOWN_KEY)
    return folder


def live_lines_read(data_dir: Path, pipeline: str) -> int:
    """What a running collector's metrics file says it read for ``pipeline`` (-1: no file)."""
    try:
        return int(
            json.loads((data_dir / "collector" / f"{pipeline}.json").read_text())["lines_read"]
        )
    except (OSError, ValueError, KeyError):
        return -1


# -- the real command --------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_sluice_collect_on_a_folder_serves_the_good_pipeline_and_reports_the_broken_files(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = folder_with_broken_files(tmp_path, metastore_url)
    data_dir = folder / "data"
    append(tmp_path / "good" / "app.log", *lines("good", 300))
    environment = {k: v for k, v in os.environ.items() if k != METASTORE_URL_ENV}
    collector = subprocess.Popen(
        [sys.executable, "-m", "pipeline_core", "collect", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
    )
    try:
        wait_until(
            lambda: live_lines_read(data_dir, "good") == 300 or collector.poll() is not None,
            timeout=60,
            what="the good pipeline to read its 300 lines",
        )
        assert collector.poll() is None, collector.communicate(timeout=30)
        reported = read_config_problems(data_dir)
        assert reported is not None
        assert [(Path(p.path).name, p.pipeline) for p in reported] == [
            ("broken.yaml", None),
            ("invalid.yaml", None),
        ]
        assert "not valid YAML" in reported[0].error
        assert "colector: unknown key" in reported[1].error

        write_config(folder, metastore_url, name="fixed", pattern=f"{tmp_path}/fixed/*.log")
        (folder / "broken.yaml").unlink()  # its fix is fixed.yaml: the same pipeline, renamed
        append(tmp_path / "fixed" / "app.log", *lines("fixed", 50))
        collector.send_signal(signal.SIGHUP)
        wait_until(
            lambda: live_lines_read(data_dir, "fixed") == 50 or collector.poll() is not None,
            timeout=60,
            what="the fixed pipeline to start and read its 50 lines",
        )
        fixed_problems = read_config_problems(data_dir)
        assert fixed_problems is not None
        assert [Path(p.path).name for p in fixed_problems] == ["invalid.yaml"]
        collector.send_signal(signal.SIGTERM)
        out, err = collector.communicate(timeout=90)
    finally:
        stop_group(collector, signal.SIGKILL, timeout=10)  # type: ignore[arg-type]

    assert collector.returncode == 0, err
    assert "collecting pipeline good;" in out
    assert "sealed checkpoint" in out
    assert "Traceback" not in err
    broken_lines = [line for line in err.splitlines() if "broken.yaml" in line and "ERROR" in line]
    assert len(broken_lines) == 1, err  # reported once, not at every look at the folder
    assert "not valid YAML" in broken_lines[0]
    assert "not served until the file is fixed" in broken_lines[0]
    assert any(
        "invalid.yaml" in line and "colector: unknown key" in line for line in err.splitlines()
    )
    good = load(tmp_path / "unused", metastore_url, name="good")
    fixed = load(tmp_path / "unused", metastore_url, name="fixed")
    assert sorted(staged_payloads(good.model_copy(update={"data_dir": data_dir}))) == lines(
        "good", 300
    )
    assert sorted(staged_payloads(fixed.model_copy(update={"data_dir": data_dir}))) == lines(
        "fixed", 50
    )
    assert not config_problems_file(data_dir).exists()  # a stopped collector reports nothing


# -- the config source -------------------------------------------------------------------------


def test_config_source_skips_and_reports_invalid_files_of_a_folder(
    tmp_path: Path, metastore_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    folder = folder_with_broken_files(tmp_path, metastore_url)
    source = ConfigSource(folder)

    with caplog.at_level(logging.ERROR):
        configs = source.load()

    assert [config.name for config in configs] == ["good"]
    assert [Path(p.path).name for p in source.problems] == ["broken.yaml", "invalid.yaml"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2
    assert all("\n" not in message for message in logged)
    assert (
        f"invalid pipeline config {(folder / 'broken.yaml').resolve()}: not valid YAML" in logged[0]
    )


def test_config_source_reports_an_unchanged_broken_file_once(
    tmp_path: Path, metastore_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    source = ConfigSource(folder_with_broken_files(tmp_path, metastore_url))
    source.load()
    caplog.clear()

    with caplog.at_level(logging.ERROR):
        assert source.changes() == []
        assert source.changes() == []

    assert caplog.records == []
    assert len(source.problems) == 2


def test_config_source_starts_a_fixed_file_and_forgets_its_problem(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = folder_with_broken_files(tmp_path, metastore_url)
    source = ConfigSource(folder)
    source.load()
    since = source.problems[0].since

    (folder / "broken.yaml").write_text(NOT_YAML + "# still broken\n")
    assert source.changes() == []
    assert source.problems[0].since == since  # broken since the first time
    write_config(folder, metastore_url, name="broken")  # now valid, in broken.yaml
    events = source.changes()

    assert [(e.change, e.name) for e in events] == [(ConfigChange.ADDED, "broken")]
    assert [Path(p.path).name for p in source.problems] == ["invalid.yaml"]
    (folder / "invalid.yaml").unlink()
    assert source.changes() == []
    assert source.problems == ()


def test_config_source_keeps_a_served_pipeline_whose_file_broke_and_says_so(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = tmp_path / "pipelines"
    write_config(folder, metastore_url, name="good")
    source = ConfigSource(folder)
    source.load()

    (folder / "good.yaml").write_text(NOT_YAML)
    assert source.changes() == []

    (problem,) = source.problems
    assert problem.pipeline == "good"
    assert "not valid YAML" in problem.error


def test_config_source_reports_a_second_file_naming_the_same_pipeline(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = tmp_path / "pipelines"
    write_config(folder, metastore_url, name="good")
    (folder / "zz_copy.yaml").write_text((folder / "good.yaml").read_text())
    source = ConfigSource(folder)

    assert [c.name for c in source.load()] == ["good"]
    (problem,) = source.problems
    assert Path(problem.path).name == "zz_copy.yaml"
    assert "pipeline 'good' is also defined in" in problem.error

    (folder / "good.yaml").unlink()
    events = source.changes()  # served from the other file now: restarted on its config
    assert [(e.change, e.name) for e in events] == [(ConfigChange.CHANGED, "good")]
    assert events[0].config is not None
    assert events[0].config.config_path == (folder / "zz_copy.yaml").resolve()
    assert source.problems == ()


def test_config_source_refuses_a_folder_without_any_valid_file(tmp_path: Path) -> None:
    folder = tmp_path / "pipelines"
    folder.mkdir()
    (folder / "broken.yaml").write_text(NOT_YAML)
    (folder / "invalid.yaml").write_text(UNKNOWN_KEY)

    with pytest.raises(ConfigError) as refused:
        ConfigSource(folder).load()

    assert "broken.yaml" in str(refused.value) and "invalid.yaml" in str(refused.value)


def test_config_source_refuses_a_single_invalid_file(tmp_path: Path) -> None:
    path = tmp_path / "invalid.yaml"
    path.write_text(UNKNOWN_KEY)

    with pytest.raises(ConfigError, match="colector: unknown key"):
        ConfigSource(path).load()


# -- the service -------------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_service_publishes_its_config_problems_while_it_runs(
    tmp_path: Path, metastore_url: str
) -> None:
    folder = folder_with_broken_files(tmp_path, metastore_url)
    append(tmp_path / "good" / "app.log", *lines("good", 20))
    service = CollectorService(folder)
    assert [Path(p.path).name for p in service.config_problems] == ["broken.yaml", "invalid.yaml"]
    tailing = Tailing(service.run, service.stop)
    try:
        data_dir = folder / "data"
        wait_until(lambda: read_config_problems(data_dir) is not None)
        reported = read_config_problems(data_dir)
        assert reported is not None and list(reported) == list(service.config_problems)

        (folder / "invalid.yaml").write_text(UNKNOWN_KEY.replace("colector", "collector"))
        service.reload()
        wait_until(lambda: "invalid" in service.collector.pipelines)
        wait_until(
            lambda: (
                [Path(p.path).name for p in read_config_problems(data_dir) or []] == ["broken.yaml"]
            )
        )
    finally:
        tailing.stop()

    assert read_config_problems(data_dir) is None
