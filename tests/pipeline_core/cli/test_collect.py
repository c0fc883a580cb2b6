"""``sluice collect``: in-process, and as a subprocess stopped by signals."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pipeline_core.cli import ExitCode, main
from pipeline_core.config import load_pipeline_config
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import append, staged_payloads, wait_until
from tests.pipeline_core.cli.support import no_traceback, sluice, start_sluice
from tests.support.pipelines import write_config
from tests.support.processes import free_port

# make test runs these once, on SQLite: the metastore is not what they test, and its part in
# them runs on PostgreSQL too, in tests/pipeline_core/metastore and the system tests.
pytestmark = pytest.mark.sqlite_pass


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


# -- what a new user got wrong, through the real command -----------------------------------------


@pytest.mark.timeout(60)
def test_should_warn_when_a_glob_matches_no_file(tmp_path: Path, metastore_url: str) -> None:
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log")

    done = sluice("collect", str(path), "--once")

    assert done.returncode == ExitCode.OK, done.stderr
    assert (
        f"sluice: warning: pipeline web_access, source access: no file matches "
        f"{tmp_path.resolve()}/logs/*.log" in done.stderr
    )
    assert "collected 0 lines" in done.stdout


@pytest.mark.timeout(120)
def test_should_seal_what_it_read_and_exit_130_on_ctrl_c_during_collect_once(
    tmp_path: Path, metastore_url: str
) -> None:
    """Reading is slowed by the send rate cap, so Ctrl-C comes in the middle of it: the
    requested checkpoint is sealed with what was read (none is left REQUESTED), and the next
    run collects the rest."""
    collector = {"max_send_bytes_per_s": 200_000, "read_chunk_bytes": 4096}
    path = write_config(tmp_path, metastore_url, fmt="raw", collector=collector)
    lines = [f"line {i:06d} ".encode() + b"x" * 80 for i in range(20_000)]
    append(tmp_path / "logs" / "access.log", *lines)
    process = start_sluice("collect", str(path), "--once")
    try:
        assert process.stderr is not None
        assert "collecting pipeline web_access once" in process.stderr.readline()
        time.sleep(1.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait(timeout=30)

    assert process.returncode == ExitCode.INTERRUPTED, err
    assert re.search(r"checkpoint 1 sealed: \d+ lines", out), out
    assert err.endswith(
        "sluice: interrupted: sealed checkpoint 1 with what was read; the next run reads the rest\n"
    )
    no_traceback(err)
    metastore = Metastore.open(metastore_url)
    try:
        states = [c.state for c in metastore.checkpoints("web_access")]
    finally:
        metastore.close()
    assert states == [CheckpointState.SEALED]
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    assert sorted(staged_payloads(load_pipeline_config(path))) == sorted(lines)


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()
    except urllib.error.URLError:  # not listening yet (or any more)
        return 0, ""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("file_labels", [False, True], ids=["default", "file_labels"])
def test_should_serve_metrics_health_and_ready_on_the_metrics_address(
    tmp_path: Path, metastore_url: str, file_labels: bool
) -> None:
    config_path = write_config(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, *[f"line {i}".encode() for i in range(1234)])
    address = f"127.0.0.1:{free_port()}"
    flags = ["--metrics-file-labels"] if file_labels else []
    collector = start_sluice("collect", str(config_path), "--metrics-address", address, *flags)
    try:
        assert collector.stdout is not None
        assert "collecting pipeline web_access" in collector.stdout.readline()
        wait_until(lambda: http_get(f"http://{address}/ready")[0] == 200, timeout=30, what="ready")
        health, _ = http_get(f"http://{address}/health")
        read_all = re.compile(
            r'^sluice_read_lines_total\{[^}]*pipeline="web_access"[^}]*\} 1234\.0$', re.M
        )
        wait_until(
            lambda: read_all.search(http_get(f"http://{address}/metrics")[1]) is not None,
            timeout=30,
            what="every line counted in /metrics",
        )
        _, metrics = http_get(f"http://{address}/metrics")
        missing, _ = http_get(f"http://{address}/nothing")
        collector.send_signal(signal.SIGTERM)
        _, err = collector.communicate(timeout=60)
    finally:
        collector.kill()
    assert collector.returncode == 0, err
    assert health == 200
    assert missing == 404
    assert "# TYPE sluice_read_bytes_total counter" in metrics
    assert "sluice_build_info{" in metrics
    assert "process_cpu_seconds_total" in metrics
    assert re.search(r'^sluice_source_files\{[^}]*source="access"[^}]*\} 1\.0$', metrics, re.M)
    # A file's path only with --metrics-file-labels; its folder (the test's) nowhere else.
    assert (str(tmp_path) in metrics) is file_labels
    assert (f'path="{log}"' in metrics) is file_labels


def test_should_refuse_a_malformed_metrics_address_in_one_line(
    tmp_path: Path, metastore_url: str
) -> None:
    config_path = write_config(tmp_path, metastore_url)

    done = sluice("collect", str(config_path), "--metrics-address", "localhost")

    assert done.returncode == ExitCode.INVALID
    assert "localhost" in done.stderr
    no_traceback(done.stderr)


LAKE_AND_ENGINE_LIBRARIES = ("pyarrow", "pyiceberg", "pandas", "pyspark", "airflow")
"""What only landing, reading the lake or Airflow needs: a collecting process never loads them
(together they doubled its memory: 195 MB after imports, where the collector needs 78)."""


@pytest.mark.timeout(120)
def test_collect_once_loads_no_lake_spark_or_airflow_library(
    tmp_path: Path, metastore_url: str
) -> None:
    path = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", *(f"line {i}".encode() for i in range(30)))
    code = (
        "import sys\n"
        "from pipeline_core.cli import main\n"
        f"assert main(['collect', '--once', {str(path)!r}]) == 0\n"
        "print(sorted({name.split('.')[0] for name in sys.modules}))"
    )

    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=100, check=False
    )

    assert completed.returncode == 0, completed.stderr
    assert "collected 30 lines" in completed.stdout
    loaded = completed.stdout.strip().splitlines()[-1]
    assert [name for name in LAKE_AND_ENGINE_LIBRARIES if repr(name) in loaded] == []
