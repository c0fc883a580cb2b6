"""The object store unreachable while a collector uploads its sealed batches, and while a
landing reads them.

Uploads: parts stored, the store gone (connections reset and refused) for 20-25 s, then back.
The upload is retried until it is done, the checkpoint is sealed once, every line is stored
once, and the operator sees the failed attempts (``sluice_upload_failures_total`` and its last
error, a warning per attempt). An outage of a few seconds is ridden out inside the S3 client's
own retries: the upload then only takes longer (``sluice_upload_seconds_total``), with no
failed attempt to count (seen with 3-6 s outages here), hence the longer outage.

Landings: the store goes away once the job read its first manifest; the landing fails,
commits nothing, and its retry lands every line once.

moto's S3 server keeps its objects in memory: the store goes away by a TCP forwarder in front
of it stopping (``tests/support/tcp_proxy.py``), which is what a partition or a restarting
endpoint looks like to the collector.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.sql import SparkSession

from pipeline_core import _fault_points as fault_points
from pipeline_core._fault_points import FaultPoint
from pipeline_core.collector import UploadMetrics, prometheus_text
from pipeline_core.lake import LakeLocation
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import UniqueAccessLines, append, wait_until
from spark_jobs import checkpoint
from spark_jobs.landing import CheckpointInput, land
from spark_jobs.part_files import read_whole
from tests.spark_jobs.support import checkpoint_summary, landing
from tests.spark_jobs.test_landing_from_store import TABLES, stage_in_store
from tests.support.faults import FaultSeed, RunningCollector
from tests.support.lake import assert_exactly_once, snapshot_operations
from tests.support.object_store import S3Bucket, recorded_remote_lines
from tests.support.pipelines import load
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.slow]
# One test in each lane of make test: the upload's in the PostgreSQL one, the landing's (a
# Spark job) in the SQLite one, with the suite's other Spark tests.

COLLECTOR = {"lease_seconds": 5.0, "discovery_interval_s": 0.1}


@pytest.fixture
def store_proxy(s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> Iterator[TcpProxy]:
    """The bucket's server behind a forwarder; the collector reaches the store through it."""
    address = urlparse(s3_bucket.server.endpoint)
    proxy = TcpProxy((address.hostname or "127.0.0.1", address.port or 80))
    proxy.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    try:
        yield proxy
    finally:
        proxy.stop()
        fault_points.install(None)


def sealed(metastore: Metastore, checkpoint_id: int) -> bool:
    return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED


@pytest.mark.postgres_pass
@pytest.mark.timeout(240)
def test_the_store_unreachable_during_an_upload_is_waited_out_and_every_line_stored_once(
    tmp_path: Path,
    metastore_url: str,
    metastore: Metastore,
    s3_bucket: S3Bucket,
    store_proxy: TcpProxy,
    fault_seed: FaultSeed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = load(
        tmp_path,
        metastore_url,
        collector=COLLECTOR,
        handoff={"staging": s3_bucket.url("staging"), "max_part_bytes": 64 * 1024},
    )
    log = tmp_path / "logs" / "access.log"
    source = UniqueAccessLines(fault_seed.value)
    before, after = source.lines(0, 6000), source.lines(6000, 1000)  # ~15 parts, then more
    outage_seconds = fault_seed.rng.uniform(20.0, 25.0)
    outages: list[threading.Event] = []

    def stop_the_store_once(point: FaultPoint) -> None:
        # A part is stored, more are to come: the store goes away mid-upload.
        if point is FaultPoint.PART_UPLOADED and not outages:
            outages.append(store_proxy.outage(outage_seconds))

    fault_points.install(stop_the_store_once)
    caplog.set_level(logging.WARNING, logger="pipeline_core")
    append(log, *before)
    with RunningCollector(config, metastore) as running:
        first = metastore.request_checkpoint(config.name, "outage-run").checkpoint_id
        wait_until(lambda: bool(outages), 60, "an upload to begin")
        failed: list[UploadMetrics] = []

        def failures_shown() -> bool:
            uploads = running.collector.metrics()[0].uploads
            if uploads is not None and uploads.failures:
                failed.append(uploads)
            return bool(failed) or outages[0].is_set()

        wait_until(failures_shown, 60, "the failed attempts in the metrics, or the store back")
        wait_until(outages[0].is_set, 60, "the store to be back")
        wait_until(
            lambda: not running.alive or sealed(metastore, first), 120, "the upload after it"
        )
        assert running.alive, fault_seed.note(f"the collector died: {running.error!r}")
        uploads = running.collector.metrics()[0].uploads
        assert uploads is not None and uploads.failures >= 1
        exposition = prometheus_text(running.collector.metrics())
        append(log, *after)
        second = metastore.request_checkpoint(config.name, "next-run").checkpoint_id
        wait_until(lambda: sealed(metastore, second), 60, "the next checkpoint")
    running.raise_error()

    assert failed and failed[0].last_error, "the metrics named no failure during the outage"
    shown = {
        line.split("{")[0]: float(line.rsplit(" ", 1)[1])
        for line in exposition.splitlines()
        if line.startswith("sluice_upload_")
    }
    assert shown["sluice_upload_failures_total"] >= 1
    assert shown["sluice_upload_seconds_total"] >= outage_seconds / 2, shown
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("upload attempt" in w and "failed" in w for w in warnings), warnings
    stored = [line.data for line in recorded_remote_lines(metastore_url, config.name)]
    assert Counter(stored) == Counter(before + after), fault_seed.note(
        f"{len(stored)} lines stored, {len(before) + len(after)} written"
    )


@pytest.mark.sqlite_pass
@pytest.mark.spark
def test_the_store_unreachable_during_a_landing_fails_it_and_its_retry_lands_once(
    spark: SparkSession,
    lake: LakeLocation,
    s3_bucket: S3Bucket,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store goes away (a forwarder in front of moto stops: tests/support/tcp_proxy.py)
    once the landing has read its first manifest, for longer than the S3 client's own
    retries: the landing fails naming the store, commits nothing, and lands every line once
    when retried after the store is back."""
    url = stage_in_store(s3_bucket, tmp_path, 7)  # as the collectors of two hosts upload it
    address = urlparse(s3_bucket.server.endpoint)
    proxy = TcpProxy((address.hostname or "127.0.0.1", address.port or 80))
    proxy.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    outages: list[threading.Event] = []

    def read_then_lose_the_store(location: str) -> bytes:
        document = read_whole(location)
        if not outages:
            outages.append(proxy.outage(25.0))
        return document

    try:
        with monkeypatch.context() as patch:
            patch.setattr(checkpoint, "read_whole", read_then_lose_the_store)
            with pytest.raises(Exception) as failed:
                land(spark, landing(lake, CheckpointInput(url, ("web-1", "web-2"))))
        assert outages, "the landing read no manifest"
        assert "127.0.0.1" in str(failed.value) or "connect" in str(failed.value).lower(), (
            failed.value
        )
        for table in TABLES:
            assert snapshot_operations(lake, table) == []  # nothing committed
        assert outages[0].wait(60), "the store did not come back"

        summary = land(spark, landing(lake, CheckpointInput(url, ("web-1", "web-2"))))
    finally:
        proxy.stop()

    found = checkpoint_summary(summary, 7)
    for table in ("access", "app", "misc"):
        assert assert_exactly_once(lake, table, 7) == found["rows"][table]
