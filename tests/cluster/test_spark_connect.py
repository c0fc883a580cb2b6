"""``scripts/spark-connect.sh``: the suite's Spark Connect server, as the script sees it, and
the server killed during a landing.

Starting and stopping are what ``tests.support.spark_connect`` does for every run; here, what
a second ``start`` and the other commands say while it runs, and a landing whose server is
killed (``kill -9`` of its JVM) during its job: the landing fails within a minute,
nothing is committed, and once the server is started again the retry lands every line once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pipeline_core.errors import LandingError
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import UniqueAccessLines, append, check_exactly_once, table_rows
from tests.support.pipelines import write_config
from tests.support.spark_connect import SCRIPT, ConnectServer, run_connect_client

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]


def test_start_refuses_a_folder_with_a_space_in_its_path_before_starting_spark(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "spark connect"
    env = {**os.environ, "SLUICE_SPARK_CONNECT_DIR": str(folder)}

    started = subprocess.run(
        ["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=60
    )

    assert started.returncode == 1
    assert started.stdout == ""
    assert "must have no space in its path" in started.stderr
    assert "SLUICE_SPARK_CONNECT_DIR" in started.stderr
    assert not folder.exists()


def test_start_again_prints_the_running_servers_url_at_once(
    spark_connect_server: ConnectServer,
) -> None:
    started = time.monotonic()
    again = spark_connect_server.script("start")
    seconds = time.monotonic() - started

    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == spark_connect_server.url
    assert "already running" in again.stderr
    assert seconds < 5


def test_status_and_url_describe_the_running_server(spark_connect_server: ConnectServer) -> None:
    status = spark_connect_server.script("status")
    url = spark_connect_server.script("url")

    assert status.returncode == 0 and spark_connect_server.url in status.stderr
    assert (url.returncode, url.stdout.strip()) == (0, spark_connect_server.url)


def test_the_server_has_the_lakes_settings_for_every_session(
    spark_connect_server: ConnectServer,
) -> None:
    code = (
        "from pyspark.sql import SparkSession\n"
        f"spark = SparkSession.builder.remote({spark_connect_server.url!r}).create()\n"
        "for key in ('spark.sql.session.timeZone', 'spark.sql.parquet.outputTimestampType',\n"
        "            'spark.sql.maxConcurrentOutputFileWriters', 'spark.master'):\n"
        "    print(key, spark.conf.get(key))\n"
        "spark.stop()\n"
    )

    settings = dict(line.split(" ", 1) for line in run_connect_client(code))

    assert settings == {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.maxConcurrentOutputFileWriters": "16",
        "spark.master": "local[2]",
    }


class KillTheServer:
    """A landing's progress that kills the Spark Connect server (SIGKILL, its JVM) while the
    landing's Spark job runs: once its first data file is in ``lake`` (the job writes; the
    driver has committed nothing yet)."""

    def __init__(self, server: ConnectServer, lake: Path) -> None:
        run_dir = Path(server.env["SLUICE_SPARK_CONNECT_DIR"])
        self._pid = int(next(run_dir.glob("*.pid")).read_text())
        self._lake = lake
        self.killed = threading.Event()

    def submitting(self, command: str) -> None:
        def kill_once_writing() -> None:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and not any(self._lake.rglob("*.parquet")):
                time.sleep(0.005)
            os.kill(self._pid, signal.SIGKILL)
            self.killed.set()

        threading.Thread(target=kill_once_writing, daemon=True).start()

    def spark_finished(self, seconds: float) -> None:
        pass

    def committing(self, checkpoint_ids: Sequence[int]) -> None:
        pass


def test_a_server_killed_during_a_landing_fails_it_and_the_retry_after_its_restart_lands_once(
    spark_connect_server: ConnectServer, tmp_path: Path, metastore_url: str
) -> None:
    operations = PipelineOperations(write_config(tmp_path, metastore_url))
    written = UniqueAccessLines(7).lines(0, 200_000)
    append(tmp_path / "logs" / "access.log", *written)
    (sealed,) = operations.collect_once().sealed
    checkpoint = sealed.checkpoint_id
    lake = lake_location(operations.config)
    killer = KillTheServer(spark_connect_server, Path(str(operations.config.lake_warehouse)))
    try:
        with pytest.raises(LandingError) as failed:
            operations.land([checkpoint], spark_connect=spark_connect_server.url, progress=killer)
        assert killer.killed.is_set(), "the landing ended before the server was killed"
    finally:
        killer.killed.wait(30)
        restarted = spark_connect_server.script("start", timeout=300)
    assert restarted.returncode == 0, restarted.stderr[-2000:]
    assert restarted.stdout.strip() == spark_connect_server.url
    assert f"landing checkpoints [{checkpoint}] failed" in str(failed.value)
    assert operations.checkpoint(checkpoint).state is CheckpointState.SEALED
    assert table_rows(lake, "access", checkpoint).num_rows == 0  # nothing committed

    operations.land([checkpoint], spark_connect=spark_connect_server.url)

    assert operations.checkpoint(checkpoint).state is CheckpointState.COMMITTED
    outcome = check_exactly_once(lake, written)
    assert outcome.holds, outcome.describe()
