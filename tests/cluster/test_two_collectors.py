"""Two collector hosts, one metastore: a checkpoint waits for every live host, lapsed hosts are
excused, and the lake holds each host's lines exactly once.

Two ``sluice collect`` processes play hosts ``host-a`` and ``host-b``: each tails a log folder
of its own and has a data folder of its own (metrics), while both share the metastore (a
PostgreSQL database in make test's PostgreSQL pass, where hosts share a server; a SQLite file
in a plain ``pytest``), the staging folder and the lake,
as collectors on several machines would share a database server and a network filesystem.
Checkpoints are requested the way a DAG run's first task does
(``PipelineOperations.request_checkpoint(run_id)``), waited for with the real
``CheckpointSealedSensor`` and its trigger where the run's wait step is the point, and landed
with the real Spark job in this process.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred
from airflow.triggers.base import TriggerEvent
from pyspark.sql import SparkSession
from sluice_airflow.sensors.sluice import CheckpointSealedSensor
from sluice_airflow.triggers.sluice import CheckpointSealedTrigger

from pipeline_core.collector import read_metrics
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.lake import LakeLocation, lake_location, summarize_lake
from pipeline_core.metastore import Metastore
from pipeline_core.operations import CheckpointInfo, CheckpointState, PipelineOperations
from pipeline_core.testing import append, lake_table, wait_until
from tests.cluster.processes import CollectorProcess
from tests.support.fake_pipeline import make_context
from tests.support.faults import land_and_commit_sealed
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

PIPELINE = "web_access"
HOSTS = ("host-a", "host-b")
START = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
LEASE_SECONDS = 6.0
"""Short, so a killed host's lease lapses within seconds; renewed every 2 s, so it is still
live for at least 4 s after the kill, when the next checkpoint is requested."""
STARTUP_TIMEOUT = 120.0
"""Seconds for a collector process to start, take its lease and read its files."""
SEAL_TIMEOUT = 120.0


def host_line(host: str, i: int) -> bytes:
    """Line ``i`` of ``host``: an nginx line whose path names both, ``/<host>/item/<i>``."""
    when = (START + timedelta(seconds=i)).strftime("%d/%b/%Y:%H:%M:%S")
    return (
        f'10.0.{HOSTS.index(host)}.{i % 250 + 1} - - [{when} +0000] "GET /{host}/item/{i} '
        f'HTTP/1.1" 200 {100 + i} "-" "sluice-cluster-test/1.0"'
    ).encode()


def host_paths(host: str, numbers: range) -> set[str]:
    return {f"/{host}/item/{i}" for i in numbers}


class Hosts:
    """The two hosts' configs and folders under one test folder, sharing ``metastore_url``
    (migrated here), the staging folder and the lake."""

    def __init__(self, root: Path, metastore_url: str) -> None:
        self.root = root
        self.configs: dict[str, Path] = {}
        for host in HOSTS:
            self.configs[host] = write_config(
                root / host,
                metastore_url,
                name=PIPELINE,
                pattern=str(root / host / "logs" / "access.log*"),
                collector={
                    "host": host,
                    "lease_seconds": LEASE_SECONDS,
                    "discovery_interval_s": 0.2,
                },
                data_dir=str(root / host / "data"),
                handoff={"staging_dir": str(root / "shared" / "staging")},
                lake={"path": str(root / "shared" / "lake")},
            )
        # The schema is created once, before several processes open the metastore at once
        # (docs/deployment.md: migrate before starting them).
        Metastore.open(metastore_url).close()

    def config(self, host: str) -> PipelineConfig:
        return load_pipeline_config(self.configs[host])

    def write(self, host: str, numbers: range) -> None:
        append(self.root / host / "logs" / "access.log", *(host_line(host, i) for i in numbers))

    def collector(self, host: str, attempt: int = 0) -> CollectorProcess:
        log = self.root / host / f"collector-{attempt}.log"
        return CollectorProcess(self.configs[host], log)

    def operations(self) -> PipelineOperations:
        """The facade a DAG run uses (any host's config: they share metastore and lake)."""
        return PipelineOperations(self.configs[HOSTS[0]])


@contextmanager
def running(*collectors: CollectorProcess) -> Iterator[None]:
    """Start the collectors; stop every one of them by its PID when the block ends."""
    with ExitStack() as stack:
        for collector in collectors:
            stack.callback(collector.stop)
            collector.start()
        yield


def wait_for(
    predicate: Callable[[], bool], timeout: float, what: str, *collectors: CollectorProcess
) -> None:
    """``wait_until``, with the collectors' output in the failure message."""
    try:
        wait_until(predicate, timeout, what, poll=0.2)
    except AssertionError as exc:
        details = "\n".join(f"--- {c.log_path}:\n{c.output()[-3000:]}" for c in collectors)
        raise AssertionError(f"{exc}\n{details}") from None


def wait_until_read(hosts: Hosts, host: str, lines: int, collector: CollectorProcess) -> None:
    """Wait until ``host``'s running collector reports ``lines`` lines read and none unread
    (its metrics file, rewritten every 5 s) with its lease held."""
    config = hosts.config(host)
    metastore = Metastore.open(config.metastore_url)
    try:

        def caught_up() -> bool:
            assert collector.running(), f"{host}'s collector exited:\n{collector.output()}"
            metrics = read_metrics(config.data_dir, PIPELINE, max_age=10)
            return (
                metrics is not None
                and metrics["lines_read"] == lines
                and metrics["unread_bytes"] == 0
                and metastore.lease_holder(PIPELINE, host) is not None
            )

        wait_for(caught_up, STARTUP_TIMEOUT, f"{host} to read {lines} lines", collector)
    finally:
        metastore.close()


def wait_sealed(
    operations: PipelineOperations, checkpoint_id: int, *collectors: CollectorProcess
) -> CheckpointInfo:
    """Wait until every host the checkpoint waits for has sealed its batch."""
    with operations:
        wait_for(
            lambda: operations.checkpoint(checkpoint_id).state is CheckpointState.SEALED,
            SEAL_TIMEOUT,
            f"checkpoint {checkpoint_id} to be sealed",
            *collectors,
        )
        return operations.checkpoint(checkpoint_id)


def lake_paths_by_host(lake: LakeLocation) -> dict[str, Counter[str]]:
    """How often each request path is in the lake, per collector host."""
    table = lake_table(lake, "access")
    assert table is not None, "the lake is empty"
    found: dict[str, Counter[str]] = {}
    for host, path in zip(
        table.column("host").to_pylist(), table.column("path").to_pylist(), strict=True
    ):
        found.setdefault(host, Counter())[path] += 1
    return found


def rows_by_checkpoint_and_host(lake: LakeLocation) -> Counter[tuple[int, str]]:
    table = lake_table(lake, "access")
    assert table is not None, "the lake is empty"
    return Counter(
        zip(
            table.column("checkpoint_id").to_pylist(),
            table.column("host").to_pylist(),
            strict=True,
        )
    )


def assert_exactly_once(hosts: Hosts, expected: dict[str, set[str]]) -> None:
    """The lake holds each expected path of each host once, and nothing else."""
    config = hosts.config(HOSTS[0])
    summary = summarize_lake(config)
    total = sum(len(paths) for paths in expected.values())
    assert summary.rows == {"access": total}
    assert summary.distinct_event_ids == total
    assert summary.rejects == {}
    found = lake_paths_by_host(lake_location(config))
    assert set(found) == set(expected)
    for host, paths in expected.items():
        assert set(found[host]) == paths, host
        assert max(found[host].values()) == 1, f"{host}: duplicated lines in the lake"


@pytest.mark.timeout(600)
def test_a_checkpoint_waits_for_both_hosts_and_lands_both_exactly_once(
    tmp_path: Path, metastore_url: str, spark: SparkSession
) -> None:
    hosts = Hosts(tmp_path, metastore_url)
    hosts.write("host-a", range(0, 120))
    hosts.write("host-b", range(0, 80))
    a, b = hosts.collector("host-a"), hosts.collector("host-b")
    operations = hosts.operations()
    with running(a, b):
        wait_until_read(hosts, "host-a", 120, a)
        wait_until_read(hosts, "host-b", 80, b)

        requested = operations.request_checkpoint("scheduled__2026-11-22T09:05:00+00:00")
        assert requested.state is CheckpointState.REQUESTED
        sealed = wait_sealed(operations, requested.checkpoint_id, a, b)
        # One batch per host, both in the checkpoint's folder of the shared staging.
        assert sealed.line_count == 200
        assert len(sealed.batch_ids) == 2
        assert sorted(p.name for p in sealed.staging_dir.iterdir()) == list(HOSTS)
        # A retried DAG task asking again for its run gets the same checkpoint.
        again = operations.request_checkpoint("scheduled__2026-11-22T09:05:00+00:00")
        assert again.checkpoint_id == requested.checkpoint_id

        [summary] = land_and_commit_sealed(spark, hosts.configs["host-a"])
        assert summary["checkpoint_id"] == requested.checkpoint_id
        assert summary["batches"] == 2
        assert summary["rows"] == {"access": 200}

    assert not a.running() and not b.running()
    assert_exactly_once(
        hosts,
        {"host-a": host_paths("host-a", range(120)), "host-b": host_paths("host-b", range(80))},
    )
    assert rows_by_checkpoint_and_host(lake_location(hosts.config("host-a"))) == {
        (requested.checkpoint_id, "host-a"): 120,
        (requested.checkpoint_id, "host-b"): 80,
    }
    committed = operations.checkpoint(requested.checkpoint_id)
    assert committed.state is CheckpointState.COMMITTED


# -- a run waiting for a host that died ------------------------------------------------------------

SEAL_SLACK_SECONDS = 5.0
"""Beyond ``LEASE_SECONDS``: the sensor's poll interval, a look at the metastore, host-a's seal."""


def wait_sealed_as_a_run_does(
    config_path: Path, checkpoint_id: int, timeout: float
) -> dict[str, Any]:
    """The run's ``wait_sealed`` task, deferrable: the real sensor looks once and defers, the
    real trigger waits (its async generator run here, as Airflow's triggerer would), then the
    sensor resumes with the trigger's event. Returns the event's payload; a sensor that found
    the checkpoint sealed at its first look (the hosts were quicker than the run) defers not,
    and returns ``{"status": "sealed"}``."""
    sensor = CheckpointSealedSensor(
        task_id="wait_sealed",
        config_path=str(config_path),
        checkpoint_id=checkpoint_id,
        poke_interval=0.5,
        deferrable=True,
    )
    context = make_context()
    try:
        sensor.execute(context)
    except TaskDeferred as deferred:
        trigger = deferred.trigger
    else:
        return {"status": "sealed"}
    assert isinstance(trigger, CheckpointSealedTrigger)

    async def first_event() -> TriggerEvent:
        async for event in trigger.run():
            return event
        raise AssertionError("the trigger ended without an event")

    payload: dict[str, Any] = asyncio.run(asyncio.wait_for(first_event(), timeout)).payload
    sensor.execute_complete(context, payload)
    return payload


@pytest.mark.timeout(600)
def test_a_run_waiting_for_a_killed_host_is_sealed_once_its_lease_lapses(
    tmp_path: Path, metastore_url: str, spark: SparkSession
) -> None:
    hosts = Hosts(tmp_path, metastore_url)
    hosts.write("host-a", range(0, 100))
    hosts.write("host-b", range(0, 60))
    a, b = hosts.collector("host-a"), hosts.collector("host-b")
    b_again = hosts.collector("host-b", attempt=1)
    operations = hosts.operations()
    metastore = Metastore.open(hosts.config("host-a").metastore_url)
    lake = lake_location(hosts.config("host-a"))
    try:
        with running(a, b):
            wait_until_read(hosts, "host-a", 100, a)
            wait_until_read(hosts, "host-b", 60, b)

            # host-b dies (kill -9) having read its lines but sealed none; its lease is still
            # live when the run asks, so the run's checkpoint waits for both hosts.
            b.kill()
            killed = time.monotonic()
            first = operations.request_checkpoint("scheduled__2026-11-22T09:05:00+00:00")
            wait_for(
                lambda: (
                    [batch.host for batch in metastore.batches(first.checkpoint_id)] == ["host-a"]
                ),
                SEAL_TIMEOUT,
                "host-a to seal its batch",
                a,
            )
            assert operations.checkpoint(first.checkpoint_id).state is CheckpointState.REQUESTED

            # The run's wait step stops waiting for host-b once its lease lapses.
            event = wait_sealed_as_a_run_does(
                hosts.configs["host-a"], first.checkpoint_id, LEASE_SECONDS + SEAL_SLACK_SECONDS
            )
            waited = time.monotonic() - killed
            assert event["status"] == "sealed"
            sealed = operations.checkpoint(first.checkpoint_id)
            assert sealed.state is CheckpointState.SEALED
            assert sealed.hosts == ("host-a",)
            assert sealed.line_count == 100
            [landed] = land_and_commit_sealed(spark, hosts.configs["host-a"])
            finished = time.monotonic() - killed
            assert landed["checkpoint_id"] == first.checkpoint_id
            assert_exactly_once(hosts, {"host-a": host_paths("host-a", range(100))})
            # Not before host-b's lease lapsed (the lease, renewed every LEASE_SECONDS / 3 when
            # its collector was not too busy to, is the measure: not the kill), nor long after.
            assert metastore.lease_holder(hosts.config("host-b").name, "host-b") is None
            assert waited <= LEASE_SECONDS + SEAL_SLACK_SECONDS
            print(f"host-b killed: sealed without it in {waited:.1f} s, landed in {finished:.1f} s")

            # host-b comes back: it resumes from its last sealed offsets (none), and the next
            # run's checkpoint holds all its lines, with host-a's new ones.
            hosts.write("host-a", range(100, 130))
            hosts.write("host-b", range(60, 75))
            with running(b_again):
                wait_until_read(hosts, "host-b", 75, b_again)
                wait_until_read(hosts, "host-a", 130, a)
                second = operations.request_checkpoint("scheduled__2026-11-22T09:10:00+00:00")
                event = wait_sealed_as_a_run_does(
                    hosts.configs["host-a"], second.checkpoint_id, SEAL_TIMEOUT
                )
                assert event["status"] == "sealed"
                resealed = operations.checkpoint(second.checkpoint_id)
                assert resealed.hosts == HOSTS
                assert resealed.line_count == 30 + 75
                land_and_commit_sealed(spark, hosts.configs["host-a"])
    finally:
        metastore.close()

    assert not a.running() and not b_again.running()
    assert_exactly_once(
        hosts,
        {"host-a": host_paths("host-a", range(130)), "host-b": host_paths("host-b", range(75))},
    )
    assert rows_by_checkpoint_and_host(lake) == {
        (first.checkpoint_id, "host-a"): 100,
        (second.checkpoint_id, "host-a"): 30,
        (second.checkpoint_id, "host-b"): 75,
    }
