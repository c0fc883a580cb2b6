"""The ``sluice`` command, called in-process through ``pipeline_core.cli.main``."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from pipeline_core.cli import main
from pipeline_core.config import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.lake import LakeLocation
from pipeline_core.metastore import Metastore
from pipeline_core.testing import staged_payloads
from tests.support.faults import wait_until
from tests.support.lake import append_rows
from tests.support.pipelines import append, write_config


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


# -- validate ----------------------------------------------------------------------------------


def test_should_print_what_a_valid_config_resolves_to(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)

    assert main(["validate", str(path)]) == 0

    out = capsys.readouterr().out
    base = tmp_path.resolve()
    assert "pipeline web_access: valid" in out
    assert f"source access (nginx_combined): {base / 'logs' / 'access.log*'}" in out
    assert f"staging  {base / 'data' / 'staging'}" in out
    assert f"lake     {base / 'data' / 'lake'}" in out


def test_should_hide_the_metastore_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, "postgresql+psycopg://sluice:s3cret@db.example/sluice")

    assert main(["validate", str(path)]) == 0

    out = capsys.readouterr().out
    assert "s3cret" not in out
    assert "postgresql+psycopg://sluice:***@db.example/sluice" in out


def test_should_exit_2_naming_the_bad_key_of_an_invalid_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*"], "format": "raw"}],
        "collector": {"ring_size": 100},
    }
    path.write_text(yaml.safe_dump(document))

    assert main(["validate", str(path)]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("sluice: error: invalid pipeline config")
    assert str(path) in captured.err
    assert "collector.ring_size" in captured.err
    assert "power of two" in captured.err


def test_should_exit_2_for_a_missing_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "absent.yaml")]) == 2

    assert "absent.yaml" in capsys.readouterr().err


# -- sample-logs -------------------------------------------------------------------------------


def test_should_write_sample_lines_and_rotate_by_rename_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"

    code = main(["sample-logs", str(folder), "--lines", "200", "--malformed", "5", "--seed", "1"])

    assert code == 0
    out = capsys.readouterr().out
    assert "wrote 200 lines (5 malformed)" in out
    assert "rotated rename to access.log.1" in out
    assert line_count(folder / "access.log.1") == 100
    assert line_count(folder / "access.log") == 100


def test_should_alternate_rename_and_copytruncate_rotations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    args = ["sample-logs", str(folder), "--lines", "40", "--malformed", "0"]

    main(args)
    live_before = os.stat(folder / "access.log").st_ino
    main(args)
    live_after_copy = os.stat(folder / "access.log").st_ino
    main(args)

    out = capsys.readouterr().out
    assert re.findall(r"rotated (\S+) to (\S+)", out) == [
        ("rename", "access.log.1"),
        ("copytruncate", "access.log.2"),
        ("rename", "access.log.3"),
    ]
    assert live_after_copy == live_before  # copytruncate keeps the live file's inode
    assert os.stat(folder / "access.log.3").st_ino == live_before  # rename moves it
    total = sum(line_count(p) for p in folder.glob("access.log*"))
    assert total == 3 * 40


# -- collect, status, land ---------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_should_collect_once_and_show_the_checkpoint_and_files_in_status(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, *(f"line {i}".encode() for i in range(30)))

    assert main(["collect", str(path), "--once"]) == 0
    collected = capsys.readouterr().out
    assert main(["status", str(path)]) == 0
    status = capsys.readouterr().out

    assert "collected 30 lines" in collected
    assert re.search(r"checkpoint 1 sealed: 30 lines, \d+ bytes, batch 1", collected)
    assert "pipeline web_access on test-host" in status
    assert "collector lease: free" in status
    assert "files (1):" in status
    assert re.search(rf"[0-9a-f]{{16}} live +sealed to {log.stat().st_size}, 0 bytes", status)
    assert str(log) in status
    assert re.search(r"checkpoint 1 sealed: 30 lines", status)


@pytest.mark.timeout(60)
def test_should_say_so_when_there_is_nothing_to_land(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)

    assert main(["land", str(path)]) == 0

    assert "nothing to land" in capsys.readouterr().out


@pytest.fixture
def spark_submits(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """spark-submit replaced by a landing job that lands each checkpoint's lines as rows of
    the ``access`` table (pyiceberg, no Spark); the arguments of each submit."""
    submitted: list[list[str]] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        arguments = list(self._application_args or [])
        submitted.append(arguments)
        options = dict(zip(arguments[::2], arguments[1::2], strict=True))
        lake = LakeLocation(
            (self._env_vars or {})["SLUICE_METASTORE_URL"],
            Path(options["--lake"]),
            options["--namespace"],
        )
        metastore = Metastore.open(lake.catalog_url)
        try:
            for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
                if flag != "--checkpoint":
                    continue
                checkpoint_id = int(Path(value.partition("=")[0]).name)
                lines = sum(b.line_count for b in metastore.batches(checkpoint_id))
                append_rows(
                    lake,
                    "access",
                    [{"event_id": f"{checkpoint_id}:{i}", "checkpoint_id": checkpoint_id}
                     for i in range(lines)],
                    "nginx_combined",
                )  # fmt: skip
        finally:
            metastore.close()

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return submitted


def two_sealed_checkpoints(tmp_path: Path, metastore_url: str) -> Path:
    """A raw-format pipeline with checkpoints 1 (3 lines) and 2 (4 lines) sealed."""
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="raw")
    for count in (3, 4):
        append(tmp_path / "logs" / "access.log", *(f"line {i}".encode() for i in range(count)))
        assert main(["collect", str(path), "--once"]) == 0
    return path


@pytest.mark.timeout(60)
def test_should_land_every_pending_checkpoint_in_one_job_and_report_the_lake(
    tmp_path: Path,
    metastore_url: str,
    spark_submits: list[list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = two_sealed_checkpoints(tmp_path, metastore_url)
    capsys.readouterr()

    assert main(["land", str(path)]) == 0
    landed = capsys.readouterr().out
    assert main(["report", str(path)]) == 0
    report = capsys.readouterr().out

    [arguments] = spark_submits
    assert arguments[-2:] == ["--mode", "append"]
    assert "landing checkpoints 1, 2 in one Spark job (append)" in landed
    assert re.search(r"checkpoint 1 committed: 3 lines, \d+ bytes, batch 1, landed 3 rows", landed)
    assert re.search(r"checkpoint 2 committed: 4 lines, \d+ bytes, batch 2, landed 4 rows", landed)
    assert re.search(r"lake table access: 7 rows \(snapshot \d+\)", report)
    assert "checkpoint 2 committed: 4 lines" in report


@pytest.mark.timeout(60)
def test_should_land_the_named_checkpoints_again_replacing_their_rows(
    tmp_path: Path,
    metastore_url: str,
    spark_submits: list[list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = two_sealed_checkpoints(tmp_path, metastore_url)

    code = main(["land", str(path), "--checkpoint", "2", "--checkpoint", "1", "--replace"])

    assert code == 0
    [arguments] = spark_submits
    assert [value for flag, value in itertools.pairwise(arguments) if flag == "--checkpoint"] == [
        str(tmp_path / "data" / "staging" / "web_access" / "00000002") + "=test-host",
        str(tmp_path / "data" / "staging" / "web_access" / "00000001") + "=test-host",
    ]
    assert arguments[-2:] == ["--mode", "replace"]
    out = capsys.readouterr().out
    assert "landing checkpoints 2, 1 in one Spark job (replace)" in out
    assert out.index("checkpoint 2 committed") < out.index("checkpoint 1 committed")


def test_should_report_an_empty_lake_for_a_new_pipeline(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)

    assert main(["report", str(path)]) == 0

    out = capsys.readouterr().out
    assert "lake table access: 0 rows\n" in out
    assert "rejects: 0 lines" in out


def test_should_show_an_empty_status_for_a_new_pipeline(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)

    assert main(["status", str(path)]) == 0

    out = capsys.readouterr().out
    assert "files (0):" in out
    assert "checkpoints (newest 0):" in out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_should_seal_what_it_has_and_exit_cleanly_on_a_stop_signal(
    tmp_path: Path, metastore_url: str, signal_number: int
) -> None:
    config_path = write_config(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, *[f"before {i}".encode() for i in range(200)])
    collector = subprocess.Popen(
        [sys.executable, "-m", "pipeline_core", "collect", str(config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert collector.stdout is not None
        assert "collecting pipeline web_access" in collector.stdout.readline()
        append(log, *[f"while tailing {i}".encode() for i in range(50)])
        time.sleep(1.0)
        collector.send_signal(signal_number)
        out, err = collector.communicate(timeout=60)
    finally:
        collector.kill()
    assert collector.returncode == 0, err
    assert "sealed checkpoint" in out
    config = load_pipeline_config(config_path)
    assert sorted(staged_payloads(config)) == sorted(
        [f"before {i}".encode() for i in range(200)]
        + [f"while tailing {i}".encode() for i in range(50)]
    )


def catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (the ``SigCgt`` mask of its status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def sealed_line_counts(metastore_url: str) -> list[int]:
    """The line count of every batch sealed for the pipeline, oldest first."""
    metastore = Metastore.open(metastore_url)
    try:
        checkpoints = metastore.checkpoints("web_access")
        return [b.line_count for c in checkpoints for b in metastore.batches(c.checkpoint_id)]
    finally:
        metastore.close()


STOP_AFTER_S = [0.0, 0.05, 0.15, 0.3, 0.4, 0.5, 0.8, 1.2, 2.0]
"""When SIGTERM comes after the start: during the imports, the config load, the metastore's
opening, the lease, the first read, tailing."""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop_after", STOP_AFTER_S, ids=[f"{s}s" for s in STOP_AFTER_S])
def test_should_exit_0_and_lose_nothing_when_stopped_while_it_starts(
    tmp_path: Path, metastore_url: str, stop_after: float
) -> None:
    """SIGTERM at any moment of the start-up ends ``sluice collect`` with 0: before the
    service exists it ends unread; once it runs, it seals what it read. A later ``--once``
    collects the rest: every line is sealed exactly once.

    The moment is counted from the start, but no earlier than the process catches SIGTERM:
    before that the interpreter itself is starting (tens of milliseconds, no Sluice code run
    yet) and the signal's default action applies."""
    config_path = write_config(tmp_path, metastore_url)
    lines = [f"line {i}".encode() for i in range(500)]
    append(tmp_path / "logs" / "access.log", *lines)
    started = time.monotonic()
    collector = subprocess.Popen(
        [sys.executable, "-m", "pipeline_core", "collect", str(config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: catches_sigterm(collector.pid) or collector.poll() is not None,
            timeout=30,
            what="the collector to take SIGTERM",
            poll=0.001,
        )
        time.sleep(max(0.0, started + stop_after - time.monotonic()))
        collector.send_signal(signal.SIGTERM)
        out, err = collector.communicate(timeout=60)
    finally:
        collector.kill()
        collector.wait(timeout=30)
    assert collector.returncode == 0, err
    sealed_by_the_stop = sealed_line_counts(metastore_url)
    if "stopped before collecting" in out:
        assert sealed_by_the_stop == []
    else:
        assert "sealed checkpoint" in out, out

    assert main(["collect", str(config_path), "--once"]) == 0

    counts = sealed_line_counts(metastore_url)
    assert counts[: len(sealed_by_the_stop)] == sealed_by_the_stop
    assert sum(counts) == len(lines), counts
    assert sorted(staged_payloads(load_pipeline_config(config_path))) == sorted(lines)
