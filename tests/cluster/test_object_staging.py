"""Collector hosts that share no folder, staging into one S3 prefix (moto's server on
loopback), landed from there by spark-submit into a lake in the same bucket, and a collector
SIGKILLed while its uploads are in flight.

Each ``sluice collect`` process has a data folder of its own (its spool) and reads logs of its
own; they share only the metastore (a SQLite file here, PostgreSQL in the PostgreSQL pass) and
the bucket. Lines are checked where a landing reads them: the batches the metastore records,
read back from the store.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.collector import metrics_file, read_metrics
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append, table_rows, wait_until
from tests.cluster.processes import CollectorProcess
from tests.support.lake import assert_exactly_once
from tests.support.object_store import S3Bucket, manifests_in, recorded_remote_lines
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.postgres_pass]

PIPELINE = "web_access"
HOSTS = ("host-a", "host-b")
START_TIMEOUT = 120.0
SEAL_TIMEOUT = 120.0


def host_lines(host: str, numbers: range) -> list[bytes]:
    return [f"{host} line {i:08d} {'x' * 60}".encode() for i in numbers]


def host_config(
    root: Path, host: str, metastore_url: str, bucket: S3Bucket, **handoff: object
) -> Path:
    """A host's pipeline file: its logs, its data folder (the spool), the shared prefix."""
    return write_config(
        root / host,
        metastore_url,
        name=PIPELINE,
        pattern=str(root / host / "logs" / "access.log*"),
        fmt="raw",
        collector={"host": host, "lease_seconds": 10.0, "discovery_interval_s": 0.2},
        data_dir=str(root / host / "data"),
        handoff={"staging": bucket.url("staging"), **handoff},
    )


def request_and_wait(metastore: Metastore, run_id: str) -> int:
    checkpoint = metastore.request_checkpoint(PIPELINE, run_id).checkpoint_id
    wait_until(
        lambda: metastore.checkpoint(checkpoint).state is CheckpointState.SEALED,
        SEAL_TIMEOUT,
        f"checkpoint {checkpoint} sealed",
    )
    return checkpoint


def read_everything(data_dir: Path, lines: int) -> bool:
    """Whether the host's collector has read ``lines`` lines and its files to their end (its
    metrics say so)."""
    metrics = read_metrics(data_dir, PIPELINE)
    return metrics is not None and metrics["unread_bytes"] == 0 and metrics["lines_read"] >= lines


def holds_lease(metastore: Metastore, host: str) -> bool:
    return metastore.lease_holder(PIPELINE, host) is not None


@contextmanager
def collecting_hosts(
    root: Path, metastore_url: str, bucket: S3Bucket, written: dict[str, list[bytes]]
) -> Iterator[Metastore]:
    """A ``sluice collect`` process per host of :data:`HOSTS` (``written[host]`` appended to
    its log first), each holding its lease; stopped on exit (SIGTERM: each seals what it read,
    uploads it, then exits). Yields the metastore."""
    Metastore.open(metastore_url).close()  # migrated once before two processes open it
    configs = {host: host_config(root, host, metastore_url, bucket) for host in HOSTS}
    for host in HOSTS:
        append(root / host / "logs" / "access.log", *written[host])
    collectors = [CollectorProcess(configs[h], root / h / "collector.log") for h in HOSTS]
    metastore = Metastore.open(metastore_url)
    try:
        for collector in collectors:
            collector.start()
        wait_until(lambda: all(holds_lease(metastore, h) for h in HOSTS), START_TIMEOUT, "leases")
        yield metastore
    finally:
        for collector in collectors:
            collector.stop()
        metastore.close()


@pytest.mark.timeout(600)
def test_two_hosts_without_a_shared_folder_seal_one_checkpoint_into_one_prefix(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    written = {host: host_lines(host, range(20_000)) for host in HOSTS}
    with collecting_hosts(tmp_path, metastore_url, s3_bucket, written) as metastore:
        checkpoint = request_and_wait(metastore, "run-1")

        batches = {batch.host: batch for batch in metastore.batches(checkpoint)}
        assert sorted(batches) == list(HOSTS)
        for host, batch in batches.items():
            assert (
                batch.staging_path
                == f"{s3_bucket.url('staging')}/{PIPELINE}/{checkpoint:08d}/{host}"
            )
        more = {host: host_lines(host, range(20_000, 25_000)) for host in HOSTS}
        for host in HOSTS:
            append(tmp_path / host / "logs" / "access.log", *more[host])
            written[host] += more[host]
        wait_until(
            lambda: all(read_everything(tmp_path / h / "data", 25_000) for h in HOSTS),
            START_TIMEOUT,
            "the new lines read",
        )

    lines = recorded_remote_lines(metastore_url, PIPELINE)
    for host in HOSTS:
        theirs = [line.data for line in lines if line.host == host]
        assert theirs == written[host]  # every line once, in order
    metastore = Metastore.open(metastore_url)
    try:  # a stored manifest per recorded batch, and no other
        recorded = [
            f"{s3_bucket.name}/staging/{PIPELINE}/{c.checkpoint_id:08d}/{b.host}/_manifest.json"
            for c in metastore.checkpoints(PIPELINE)
            for b in metastore.batches(c.checkpoint_id)
        ]
    finally:
        metastore.close()
    assert manifests_in(s3_bucket) == sorted(recorded)
    for host in HOSTS:  # nothing left on either host's disk
        assert not [p for p in (tmp_path / host / "data" / "spool").rglob("*") if p.is_file()]


def landing_config(root: Path, metastore_url: str, bucket: S3Bucket) -> Path:
    """The pipeline file where the land task runs (no log host's name, a data folder of its
    own, no folder shared with the collector hosts): staging is the prefix, and the lake
    another prefix of the bucket."""
    return write_config(
        root / "airflow",
        metastore_url,
        name=PIPELINE,
        pattern=str(root / "airflow" / "no-logs" / "*.log"),
        fmt="raw",
        collector={"host": "airflow-worker"},
        data_dir=str(root / "airflow" / "data"),
        handoff={"staging": bucket.url("staging")},
        lake={"warehouse": bucket.url("lake")},
    )


@pytest.mark.timeout(900)
def test_two_hosts_without_a_shared_folder_land_every_line_exactly_once_through_the_store(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    written = {host: host_lines(host, range(30_000)) for host in HOSTS}
    with collecting_hosts(tmp_path, metastore_url, s3_bucket, written) as metastore:
        wait_until(
            lambda: all(read_everything(tmp_path / h / "data", 30_000) for h in HOSTS),
            START_TIMEOUT,
            "every line read",
        )
        checkpoint = request_and_wait(metastore, "run-1")
    operations = PipelineOperations(landing_config(tmp_path, metastore_url, s3_bucket))

    (landed,) = operations.land([checkpoint], landing_id="run-1")  # spark-submit, as `sluice land`

    assert landed.state is CheckpointState.COMMITTED
    lake = lake_location(operations.config)
    rows = table_rows(lake, "access", checkpoint)
    assert assert_exactly_once(lake, "access", checkpoint) == 2 * 30_000 == landed.line_count
    assert landed.landed.rejects == 0
    for host in HOSTS:
        messages = sorted(
            message.encode()
            for message, row_host in zip(
                rows.column("message").to_pylist(), rows.column("host").to_pylist(), strict=True
            )
            if row_host == host
        )
        assert messages == sorted(written[host])  # every line of the host, once
    for host in HOSTS:  # the hosts shared no folder with the landing, nor with each other
        assert not (tmp_path / host / "data" / "lake").exists()
        assert not (tmp_path / host / "data" / "staging").exists()
    assert not (tmp_path / "airflow" / "data" / "lake").exists()  # the lake is in the store
    assert [k for k in s3_bucket.keys("lake") if "/access/data/" in k and k.endswith(".parquet")]


@pytest.mark.timeout(600)
def test_a_collector_killed_during_an_upload_leaves_no_visible_partial_batch(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    Metastore.open(metastore_url).close()
    host = HOSTS[0]
    config = host_config(tmp_path, host, metastore_url, s3_bucket, max_part_bytes=2 * 1024 * 1024)
    written = host_lines(host, range(700_000))  # ~60 MB: ~30 parts, an upload of seconds
    append(tmp_path / host / "logs" / "access.log", *written)
    spool = tmp_path / host / "data" / "spool" / PIPELINE
    metastore = Metastore.open(metastore_url)
    first = CollectorProcess(config, tmp_path / host / "collector-0.log")
    try:
        first.start()
        wait_until(lambda: holds_lease(metastore, host), START_TIMEOUT, "the lease")
        wait_until(
            lambda: read_everything(tmp_path / host / "data", len(written)),
            START_TIMEOUT,
            "reading",
        )
        checkpoint = metastore.request_checkpoint(PIPELINE, "run-1").checkpoint_id
        prefix = f"staging/{PIPELINE}/{checkpoint:08d}/{host}"

        def uploading() -> bool:
            return (
                len(s3_bucket.keys(prefix)) >= 3  # several parts stored, more on their way
                and (spool / f"{checkpoint:08d}" / host / "_seal_record.json").exists()
            )

        wait_until(uploading, SEAL_TIMEOUT, "an upload in flight", poll=0.01)
        first.kill()  # kill -9 while parts are being uploaded
    finally:
        first.stop()

    left: dict[str, Any] = {
        "stored_objects": len(s3_bucket.keys(prefix)),
        "stored_manifests": len(manifests_in(s3_bucket)),
        "incomplete_multipart_uploads": len(s3_bucket.incomplete_uploads()),
        "spooled_parts": len(list((spool / f"{checkpoint:08d}" / host).glob("part-*"))),
        "spooled_bytes": sum(p.stat().st_size for p in spool.rglob("*") if p.is_file()),
        "seal_record": (spool / f"{checkpoint:08d}" / host / "_seal_record.json").exists(),
        "checkpoint_state": metastore.checkpoint(checkpoint).state.value,
    }
    print("kill -9 during an upload left:", json.dumps(left))
    assert left["stored_manifests"] == 0  # parts may be stored; no batch is visible
    assert left["checkpoint_state"] == CheckpointState.REQUESTED.value
    assert left["seal_record"] and left["spooled_parts"] >= 1

    metrics_file(tmp_path / host / "data", PIPELINE).unlink()  # the killed one's
    second = CollectorProcess(config, tmp_path / host / "collector-1.log")
    try:
        second.start()  # finishes the upload, records it, then reads on
        wait_until(
            lambda: metastore.checkpoint(checkpoint).state is CheckpointState.SEALED,
            SEAL_TIMEOUT,
            "the killed upload recorded after the restart",
        )
        more = host_lines(host, range(700_000, 710_000))
        append(tmp_path / host / "logs" / "access.log", *more)
        written += more
        wait_until(
            lambda: read_everything(tmp_path / host / "data", 10_000),
            START_TIMEOUT,
            "the new lines read",
        )
    finally:
        second.stop()
        metastore.close()

    lines = [line.data for line in recorded_remote_lines(metastore_url, PIPELINE)]
    assert len(lines) == len(written) and Counter(lines) == Counter(written)
    assert lines == written
    assert not [p for p in spool.rglob("*") if p.is_file()]
