"""``sluice land``: in-process with spark-submit replaced, and as the real command with Spark
(marked ``spark``/``slow``: each spawns its own spark-submit)."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline_core.cli import ExitCode, main
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import append, wait_until
from tests.pipeline_core.cli.support import no_traceback, sluice, sluice_env, start_sluice
from tests.support.object_store import S3Bucket
from tests.support.pipelines import write_config


@pytest.mark.timeout(60)
def test_should_say_so_when_there_is_nothing_to_land(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, metastore_url)

    assert main(["land", str(path)]) == 0

    assert "nothing to land" in capsys.readouterr().out


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
    landed = "".join(capsys.readouterr())
    assert main(["report", str(path)]) == 0
    report = capsys.readouterr().out

    [arguments] = spark_submits
    assert arguments[-2:] == ["--mode", "append"]
    assert re.search(
        r"landing checkpoints 1, 2 \(7 lines, \d+ bytes\) in one Spark job \(append\)", landed
    )
    assert landed.index("spark-submit starting") < landed.index("Spark finished")
    assert landed.index("Spark finished") < landed.index("committing checkpoints 1, 2")
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
    out = "".join(capsys.readouterr())
    assert "in one Spark job (replace)" in out
    assert out.index("checkpoint 2 committed") < out.index("checkpoint 1 committed")


def test_should_print_the_plan_of_a_dry_run_and_change_nothing(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = two_sealed_checkpoints(tmp_path, metastore_url)
    capsys.readouterr()

    assert main(["land", str(path), "--dry-run"]) == ExitCode.OK
    text = capsys.readouterr().out
    assert main(["land", str(path), "--dry-run", "--json"]) == ExitCode.OK
    plan = json.loads(capsys.readouterr().out)

    assert re.search(r"would land in one Spark job \(append\), \d+ bytes:", text)
    assert re.search(r"  checkpoint 1 sealed: 3 lines", text)
    assert "spark-submit command:" in text and "spark_jobs/land.py" in text
    assert [c["checkpoint_id"] for c in plan["checkpoints"]] == [1, 2]
    assert plan["bytes"] == sum(c["bytes"] for c in plan["checkpoints"])
    assert "--checkpoint" in plan["spark_submit"]
    assert not list((tmp_path / "data" / "spark").glob("*.zip"))  # no archive of the job
    metastore = Metastore.open(metastore_url)
    try:
        assert [c.state for c in metastore.checkpoints("web_access")] == [
            CheckpointState.SEALED
        ] * 2
    finally:
        metastore.close()


# -- the real command with Spark -------------------------------------------------------------------


def sealed_raw_checkpoint(tmp_path: Path, metastore_url: str, lines: int = 50) -> Path:
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="raw")
    append(tmp_path / "logs" / "access.log", *(f"line {i}".encode() for i in range(lines)))
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    return path


def sealed_json_checkpoint(tmp_path: Path, metastore_url: str) -> Path:
    """50 JSON lines: 48 with a time, one whose time is not a date, one without a time."""
    path = write_config(tmp_path, metastore_url, pattern="logs/*.log", fmt="json_lines")
    records = [{"time": f"2026-11-25T10:00:{i:02d}Z", "n": i} for i in range(48)]
    records += [{"time": "not a date", "n": 48}, {"n": 49}]
    append(tmp_path / "logs" / "app.log", *(json.dumps(r).encode() for r in records))
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    return path


def checkpoint_states(metastore_url: str) -> list[CheckpointState]:
    metastore = Metastore.open(metastore_url)
    try:
        return [c.state for c in metastore.checkpoints("web_access")]
    finally:
        metastore.close()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.postgres_pass  # once, in the lane that balances make test's two
@pytest.mark.timeout(300)
def test_should_land_with_the_venvs_spark_submit_reporting_each_phase(
    tmp_path: Path, metastore_url: str
) -> None:
    """The installed ``sluice`` script, with a PATH that lacks the virtualenv (not activated):
    spark-submit is found beside its Python, and each phase is a line as it happens. The
    JSON lines are read as nginx reads times: one whose time is there but unreadable is a
    ``bad_timestamp`` reject, one without a time lands stamped with the seal time."""
    path = sealed_json_checkpoint(tmp_path, metastore_url)
    script = Path(sys.executable).with_name("sluice")
    env = sluice_env(PATH="/usr/bin:/bin")
    env.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)
    done = subprocess.run(
        [str(script), "land", str(path)], capture_output=True, text=True, env=env, timeout=280
    )
    out, err = done.stdout, done.stderr

    assert done.returncode == ExitCode.OK, err
    assert "No such file" not in err
    phases = [
        "landing checkpoint 1 (50 lines,",
        f"spark-submit starting: {Path(sys.executable).parent}/spark-submit",
        "Spark finished in",
        "committing checkpoint 1",
        "committed 1 checkpoint",
    ]
    positions = [err.find(phase) for phase in phases]
    assert -1 not in positions and positions == sorted(positions), err
    assert re.search(
        r"checkpoint 1 committed: 50 lines, \d+ bytes, batch 1, landed 49 rows \+ 1 rejects", out
    )
    report = subprocess.run(
        [str(script), "report", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert report.returncode == ExitCode.OK, report.stderr
    lake = json.loads(report.stdout)
    assert lake["rows"] == {"access": 49}
    assert lake["rejects"] == {"bad_timestamp": 1}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.postgres_pass  # once, in the lane that balances make test's two
@pytest.mark.timeout(300)
def test_should_stop_spark_and_say_what_was_not_committed_on_ctrl_c(
    tmp_path: Path, metastore_url: str
) -> None:
    path = sealed_raw_checkpoint(tmp_path, metastore_url)
    process = start_sluice("land", str(path))
    try:
        assert process.stderr is not None
        while "spark-submit starting" not in (line := process.stderr.readline()):
            assert line, "sluice land ended before starting spark-submit"
        time.sleep(3)  # Spark's JVM is starting
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
        process.wait(timeout=30)

    assert process.returncode == ExitCode.INTERRUPTED, err
    assert err.endswith(
        "sluice: interrupted: Spark stopped; checkpoint 1 not committed (the next `sluice land` "
        "lands them again, without duplicates)\n"
    ), err
    no_traceback(err)
    assert checkpoint_states(metastore_url) == [CheckpointState.SEALED]
    # spark-submit is killed at once; a launcher JVM it had started (spark-class builds the
    # command with one) may take a moment to finish on a loaded machine.
    wait_until(lambda: not spark_submits_of(tmp_path), timeout=30, what="Spark gone")


def spark_submits_of(tmp_path: Path) -> list[int]:
    """Processes still running whose command line names the test's folder (spark-submit's JVM
    names the staging folders it lands)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(tmp_path) in command and "spark" in command:
            found.append(int(entry.name))
    return found


@pytest.mark.timeout(60)
def test_should_plan_a_landing_on_spark_connect_without_showing_its_token(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = two_sealed_checkpoints(tmp_path, metastore_url)
    url = "sc://spark-connect:15002/;token=s3cret"
    capsys.readouterr()

    assert main(["land", str(path), "--dry-run", "--spark-connect", url]) == ExitCode.OK
    text = capsys.readouterr().out
    assert main(["land", str(path), "--dry-run", "--json", "--spark-connect", url]) == 0
    plan = json.loads(capsys.readouterr().out)

    assert "on Spark Connect sc://spark-connect:15002, the job's driver:" in text
    assert plan["spark_submit"] is None
    assert plan["spark_connect"]["url"] == "sc://spark-connect:15002"
    assert "--spark-connect" in plan["spark_connect"]["command"]
    assert "s3cret" not in text + json.dumps(plan)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.postgres_pass  # once, in the lane that balances make test's two
@pytest.mark.timeout(300)
def test_should_land_on_the_spark_connect_server_the_environment_names(
    tmp_path: Path, metastore_url: str, spark_connect_url: str
) -> None:
    path = sealed_raw_checkpoint(tmp_path, metastore_url)

    done = sluice(
        "land", str(path), "--json", timeout=280, SLUICE_SPARK_CONNECT_URL=spark_connect_url
    )

    assert done.returncode == ExitCode.OK, done.stderr
    phases = [
        "landing checkpoint 1 (50 lines,",
        f"landing job starting on Spark Connect {spark_connect_url}",
        "Spark finished in",
        "committed 1 checkpoint",
    ]
    positions = [done.stderr.find(phase) for phase in phases]
    assert -1 not in positions and positions == sorted(positions), done.stderr
    assert "spark-submit" not in done.stderr
    [landed] = json.loads(done.stdout)["landed"]
    assert (landed["checkpoint_id"], landed["state"]) == (1, "committed")
    assert checkpoint_states(metastore_url) == [CheckpointState.COMMITTED]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.postgres_pass  # once, in the lane that balances make test's two
@pytest.mark.timeout(300)
def test_should_land_a_checkpoint_staged_in_an_object_store_from_the_store(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    """``sluice land`` of a pipeline staging on the S3 server: the plan names the checkpoint's
    URL and none of the store's credentials; the real command lands it (spark-submit reads the
    parts from the store) and commits it."""
    staging = s3_bucket.url("staging")
    path = write_config(
        tmp_path, metastore_url, pattern="logs/*.log", fmt="raw", handoff={"staging": staging}
    )
    append(tmp_path / "logs" / "access.log", *(f"line {i}".encode() for i in range(50)))
    assert main(["collect", str(path), "--once"]) == ExitCode.OK
    env = sluice_env()
    env.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)
    script = Path(sys.executable).with_name("sluice")

    plan = subprocess.run(
        [str(script), "land", str(path), "--dry-run"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    done = subprocess.run(
        [str(script), "land", str(path)], capture_output=True, text=True, env=env, timeout=280
    )

    assert plan.returncode == ExitCode.OK, plan.stderr
    assert f"{staging}/web_access/00000001=test-host" in plan.stdout
    for secret in (os.environ["AWS_SECRET_ACCESS_KEY"], os.environ["AWS_ACCESS_KEY_ID"]):
        assert secret not in plan.stdout + plan.stderr + done.stdout + done.stderr
    assert done.returncode == ExitCode.OK, done.stderr
    assert re.search(
        r"checkpoint 1 committed: 50 lines, \d+ bytes, batch 1, landed 50 rows", done.stdout
    )
    assert checkpoint_states(metastore_url) == [CheckpointState.COMMITTED]
