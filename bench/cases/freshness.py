"""Case 10: freshness: how long after a line is written its row can be queried.

A real Airflow on loopback (api-server, scheduler with the LocalExecutor, DAG processor,
triggerer; its metadata in a database of its own on ``scripts/postgres.sh``'s server, as the
system tests run it) schedules the pipeline's DAG every minute. A long-running collector
(``sluice collect``, the worker a deployment runs on each log host) tails the log, so each DAG
run's request task has the worker seal its checkpoint, and the run lands it through the
``spark_default`` connection. A writer appends nginx "combined" lines at 1 MB/s, each naming
its sequence number in its request path; a reader polls the lake's ``access`` table every
second (a scan of the checkpoints it has not yet seen, as a dashboard would) and notes when each
sequence number first appears. The delay of a line is that moment minus its write.

Reported: the p50 and p99 of every line's delay (one run: several minutes of lines), and the
lines written against the lines seen (each exactly once). Target: p99 at most the schedule's
interval plus 15 s (75 s).

The landing goes through the ``spark_default`` connection, of type ``spark_connect``: a Spark
Connect server (``scripts/spark-connect.sh``, ``local[2]``) started before the Airflow site, as
``make run`` and the compose stack run one.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

from bench import common
from bench.common import Context, Row, Stat

DAG_ID = "sluice_fresh"
INTERVAL_S = 60.0
TARGET_S = INTERVAL_S + 15.0
RATE = 1_000_000
"""Bytes per second the writer appends."""
TICK_S = 0.1
WRITE_MINUTES = 5
QUICK_WRITE_MINUTES = 3
DRAIN_S = 240.0
"""How long the reader waits, once the writer stopped, for the last lines to land."""
POLL_S = 1.0
PATH_PREFIX = "/fresh/"


def run(ctx: Context) -> list[Row]:
    from tests.system.airflow_site import (
        COMPONENTS,
        airflow_postgres_database,
        kill_leftovers,
        running_airflow_site,
        site_home,
        site_pipelines,
    )

    work = ctx.work("freshness")
    pipelines = site_pipelines(work)
    config = write_pipeline(pipelines, work)
    log = work / "logs" / "access.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.touch()
    minutes = QUICK_WRITE_MINUTES if ctx.quick else WRITE_MINUTES
    settings = {
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
    }
    collector = common.start_collector(config)
    try:
        with (
            common.connect_server(work / "spark-connect") as spark_connect,
            airflow_postgres_database() as database,
            running_airflow_site(
                work, settings | database | spark_connection(spark_connect), COMPONENTS
            ) as site,
        ):
            unpause(site)
            writer = Writer(log)
            with reading(config, writer) as reader, writing(writer):
                time.sleep(minutes * 60)
            reader_seen = reader.seen
    finally:
        collector.terminate()
        collector.wait(60)
        kill_leftovers(site_home(work))
    times = writer.times()
    delays = [seen - times[sequence] for sequence, seen in reader_seen.items()]
    return [result_row(writer, reader, delays, minutes, run_phases(config))]


def run_phases(config: Path) -> dict[str, float]:
    """Medians over the DAG runs' committed checkpoints: interval end -> requested (the
    scheduler and the request task starting), requested -> sealed (the collector's barrier),
    sealed -> committed (the landing and the commit task)."""
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.metastore import CheckpointState, Metastore

    pipeline = load_pipeline_config(config)
    metastore = Metastore.open(pipeline.metastore_url, migrate=False)
    try:
        records = [
            record
            for record in metastore.checkpoints(pipeline.name)
            if record.state is CheckpointState.COMMITTED and record.data_interval is not None
        ]
    finally:
        metastore.close()
    phases: dict[str, list[float]] = {"scheduled": [], "sealing": [], "landing": []}
    for record in records:
        assert record.data_interval is not None and record.sealed_at and record.committed_at
        phases["scheduled"].append((record.requested_at - record.data_interval[1]).total_seconds())
        phases["sealing"].append((record.sealed_at - record.requested_at).total_seconds())
        phases["landing"].append((record.committed_at - record.sealed_at).total_seconds())
    return {name: statistics.median(values) for name, values in phases.items() if values}


def result_row(
    writer: Writer, reader: Reader, delays: list[float], minutes: int, phases: dict[str, float]
) -> Row:
    written, seen = writer.sequence, reader.seen
    if not delays:
        raise AssertionError(f"none of {written} lines written became queryable")
    cuts = statistics.quantiles(delays, n=100, method="inclusive")
    p50, p99 = statistics.median(delays), cuts[98]
    return Row(
        case="10",
        measure=f"write -> queryable, 1 MB/s for {minutes} min, DAG every minute",
        sluice=Stat([p99], "s"),
        target=f"p99 <= {TARGET_S:.0f} s",
        met=p99 <= TARGET_S and len(seen) == written and not reader.doubled,
        note=f"p99; p50 {p50:.1f} s, max {max(delays):.1f} s; {len(seen):,} of "
        f"{written:,} lines seen, {reader.doubled} twice; per run (medians): interval end -> "
        f"requested {phases.get('scheduled', 0):.1f} s, -> sealed {phases.get('sealing', 0):.2f}"
        f" s, -> committed {phases.get('landing', 0):.1f} s",
        details={
            "p50_s": p50,
            "p99_s": p99,
            "max_s": max(delays),
            "lines": written,
            "phases_s": phases,
        },
    )


def spark_connection(url: str) -> dict[str, str]:
    """The ``spark_default`` connection of the Spark Connect server at ``url``."""
    connection = json.dumps({"conn_type": "spark_connect", "host": url})
    return {"AIRFLOW_CONN_SPARK_DEFAULT": connection}


def write_pipeline(pipelines: Path, work: Path) -> Path:
    document = {
        "name": "fresh",
        "sources": [
            {
                "name": "access",
                "paths": [str(work / "logs" / "access.log")],
                "format": "nginx_combined",
            }
        ],
        "data_dir": str(work / "data"),
        "collector": {"host": common.HOST},
        "schedule": "* * * * *",
    }
    pipelines.mkdir(parents=True, exist_ok=True)
    path = pipelines / "fresh.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def unpause(site: object) -> None:
    """Unpause the pipeline's DAG once the DAG processor has parsed it."""
    from tests.system.airflow_site import AirflowSite

    assert isinstance(site, AirflowSite)
    deadline = time.monotonic() + 180
    while True:
        try:
            site.airflow("dags", "unpause", DAG_ID)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


@dataclass
class Writer:
    """Appends numbered access lines at :data:`RATE`; remembers when each batch was written."""

    path: Path
    sequence: int = 0
    batches: list[tuple[int, int, float]] = field(default_factory=list)
    """(first sequence, count, time.time() once written and flushed)."""

    def tick(self) -> None:
        stamp = datetime.now(timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")
        lines = []
        size = 0
        first = self.sequence
        while size < RATE * TICK_S:
            line = common.numbered_access_line(
                "10.0.0.1", PATH_PREFIX, self.sequence, stamp, "freshness-bench/1.0"
            )
            lines.append(line)
            size += len(line)
            self.sequence += 1
        with open(self.path, "ab") as handle:
            handle.write(b"".join(lines))
        self.batches.append((first, self.sequence - first, time.time()))

    def times(self) -> dict[int, float]:
        return {
            first + offset: written
            for first, count, written in self.batches
            for offset in range(count)
        }


def writing(writer: Writer) -> AbstractContextManager[None]:
    return common.ticking(writer.tick, TICK_S, "freshness-writer")


@dataclass
class Reader:
    seen: dict[int, float] = field(default_factory=dict)
    doubled: int = 0
    checkpoints: int = 0
    """The highest checkpoint id read so far."""
    last_error: str = ""
    """The reader's last failed poll (before the first landing, the table does not exist)."""


@contextmanager
def reading(config: Path, writer: Writer) -> Iterator[Reader]:
    """Poll the lake from a thread; on exit (the writer stopped), keep polling until every
    line written is seen (at most :data:`DRAIN_S`)."""
    reader = Reader()
    stop = threading.Event()
    drained = threading.Event()

    def loop() -> None:
        from pipeline_core.config import load_pipeline_config
        from pipeline_core.lake import lake_location, open_lake

        location = lake_location(load_pipeline_config(config))
        while not drained.is_set():
            try:
                with open_lake(location) as catalog:
                    table = catalog.load("access")
                    if table is not None:
                        rows = table.scan(
                            row_filter=f"checkpoint_id > {reader.checkpoints}",
                            selected_fields=("path", "checkpoint_id"),
                        ).to_arrow()
                        now = time.time()
                        for path in rows.column("path").to_pylist():
                            sequence = int(path.removeprefix(PATH_PREFIX))
                            if sequence in reader.seen:
                                reader.doubled += 1
                            reader.seen.setdefault(sequence, now)
                        if rows.num_rows:
                            reader.checkpoints = max(rows.column("checkpoint_id").to_pylist())
            except Exception as exc:  # the lake may not exist before the first landing
                reader.last_error = repr(exc)
            if stop.is_set() and len(reader.seen) >= writer.sequence:
                drained.set()
            drained.wait(POLL_S)

    thread = threading.Thread(target=loop, name="freshness-reader", daemon=True)
    thread.start()
    try:
        yield reader
    finally:
        stop.set()
        thread.join(DRAIN_S)
        drained.set()
        thread.join(30)
