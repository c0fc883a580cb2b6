"""``scripts/spark-connect.sh``: the suite's Spark Connect server, as the script sees it.

Starting and stopping are what ``tests.support.spark_connect`` does for every run; here, what
a second ``start`` and the other commands say while it runs.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

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
