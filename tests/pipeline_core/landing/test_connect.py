"""SparkConnectSubmitter: the landing job on a real Spark Connect server (the suite's)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.config import PipelineConfig
from pipeline_core.errors import LandingError
from pipeline_core.lake import lake_location
from pipeline_core.landing import (
    LANDING_APPLICATION,
    SPARK_CONNECT_URL_ENV,
    LandingInput,
    SparkConnectSubmitter,
    SparkJobSpec,
    landing_job_spec,
    spark_connect_command,
)
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import access_lines, append, holds_within, table_rows
from spark_jobs import land as entry_point
from tests.spark_jobs.support import LINES_PER_HOST, stage, staged_event_ids
from tests.support.lake import assert_exactly_once, snapshot_operations
from tests.support.object_store import S3Bucket
from tests.support.pipelines import load, write_config

TABLES = ("access", "app", "misc", "_rejects")

pytestmark = pytest.mark.sqlite_pass  # the metastore only as the lake's catalog


class Lines:
    """A job log that keeps the lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: Any, /, *args: Any) -> None:
        self.lines.append(str(msg) % args if args else str(msg))


def pipeline(tmp_path: Path, metastore_url: str) -> PipelineConfig:
    Metastore.open(metastore_url).close()  # migrated: the lake catalog's tables exist
    return load(tmp_path, metastore_url)


def test_the_driver_runs_the_jobs_application_with_its_archive_and_no_url() -> None:
    spec = SparkJobSpec(
        application="/repo/spark_jobs/land.py",
        application_args=["--checkpoint", "/staging/web_access/00000001"],
        name="sluice-land-web_access-1",
        conf={},
        env_vars={"SLUICE_METASTORE_URL": "sqlite:///m.db"},
        py_files="/data/spark/spark_jobs-0123.zip",
    )

    command = spark_connect_command(spec)

    assert Path(LANDING_APPLICATION).name == "land.py"
    assert command == [
        sys.executable,
        "/repo/spark_jobs/land.py",
        "--checkpoint",
        "/staging/web_access/00000001",
        "--spark-connect",
        "--py-files",
        "/data/spark/spark_jobs-0123.zip",
    ]
    assert SPARK_CONNECT_URL_ENV == entry_point.SPARK_CONNECT_URL_ENV
    with pytest.raises(ValueError, match="sc://"):
        SparkConnectSubmitter(spec, "spark://127.0.0.1:7077")


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_landing_on_spark_connect_lands_exactly_the_lines_of_its_checkpoints(
    spark_connect_url: str, metastore_url: str, tmp_path: Path
) -> None:
    config = pipeline(tmp_path, metastore_url)
    stage(config.staging_dir, 3)
    stage(config.staging_dir, 4, hosts=("web-1",))
    spec = landing_job_spec(config, [LandingInput(3), LandingInput(4, ("web-1",))], "run-1")
    output = Lines()

    SparkConnectSubmitter(spec, spark_connect_url, logger=output).submit(spec.application)

    summary = json.loads(output.lines[-1])
    assert [(c["checkpoint_id"], c["input_lines"]) for c in summary["checkpoints"]] == [
        (3, 2 * LINES_PER_HOST),
        (4, LINES_PER_HOST),
    ]
    assert summary["checkpoints"][0]["rows"] == {"access": 6, "app": 4, "misc": 4}
    assert summary["checkpoints"][0]["rejects"] == {
        "bad_timestamp": 2,
        "invalid_json": 2,
        "invalid_utf8": 4,
        "no_match": 6,
    }
    lake = lake_location(config)
    landed: set[tuple[int, str]] = set()
    for table in TABLES:
        assert snapshot_operations(lake, table) == [("append", "3,4")]
        rows = table_rows(lake, table)
        checkpoints, events = rows.column("checkpoint_id"), rows.column("event_id")
        ids = list(zip(checkpoints.to_pylist(), events.to_pylist(), strict=True))
        assert len(set(ids)) == len(ids), f"{table} holds a line twice"
        assert not landed & set(ids)
        landed |= set(ids)
    assert landed == staged_event_ids(3, {"web-1": 0, "web-2": 1}) | staged_event_ids(
        4, {"web-1": 0}
    )


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_failed_landing_raises_with_the_jobs_last_lines_and_commits_nothing(
    spark_connect_url: str, metastore_url: str, tmp_path: Path
) -> None:
    config = pipeline(tmp_path, metastore_url)
    stage(config.staging_dir, 3)
    (config.staging_dir / config.name / "00000004" / "web-1").mkdir(parents=True)  # unsealed
    spec = landing_job_spec(config, [LandingInput(3), LandingInput(4)], "run-1")

    with pytest.raises(LandingError, match="exited with status 1") as raised:
        SparkConnectSubmitter(spec, spark_connect_url, logger=Lines()).submit()

    assert "ManifestError" in str(raised.value)
    assert table_rows(lake_location(config), "access").num_rows == 0


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_killed_landing_stops_its_driver_and_commits_nothing(
    spark_connect_url: str, metastore_url: str, tmp_path: Path
) -> None:
    config = pipeline(tmp_path, metastore_url)
    stage(config.staging_dir, 3)
    spec = landing_job_spec(config, [LandingInput(3)], "run-1")
    submitter = SparkConnectSubmitter(spec, spark_connect_url, logger=Lines())
    failure: list[BaseException] = []

    def submit() -> None:
        try:
            submitter.submit()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=submit)
    thread.start()
    holds_within(lambda: submitter._process is not None, 60, 0.05)
    submitter.on_kill()
    thread.join(120)

    assert not thread.is_alive()
    [error] = failure
    assert isinstance(error, LandingError)
    assert "was killed" in str(error)
    assert table_rows(lake_location(config), "access").num_rows == 0


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_landing_on_spark_connect_reads_staging_from_and_writes_the_lake_into_a_store(
    spark_connect_url: str, metastore_url: str, tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    """Staging and lake in the S3 server: the collection uploads the batch, the server's Python
    workers read it and write the lake's files into the bucket (the server has the store's
    variables in its environment), the commit goes through the table's FileIO."""
    Metastore.open(metastore_url).close()
    config = write_config(
        tmp_path,
        metastore_url,
        handoff={"staging": s3_bucket.url("staging")},
        lake={"warehouse": s3_bucket.url("lake")},
    )
    append(tmp_path / "logs" / "access.log", *access_lines(2_000, seed=5))
    operations = PipelineOperations(config)
    requested = operations.request_checkpoint("run-1")
    operations.collect_once()

    [landed] = operations.land([requested.checkpoint_id], spark_connect=spark_connect_url)

    assert landed.state is CheckpointState.COMMITTED
    assert landed.line_count == 2_000
    lake = lake_location(operations.config)
    assert assert_exactly_once(lake, "access", requested.checkpoint_id) == 2_000
    assert any(key.endswith(".parquet") for key in s3_bucket.keys("lake"))
    assert not (tmp_path / "data" / "lake").exists()
