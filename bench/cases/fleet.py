"""Case 20: a fleet: N collectors of one pipeline, one host each, against one PostgreSQL
metastore, a checkpoint requested every 30 s.

For each fleet size N (1, 8, 32, 64; ``--fleet-sizes``; ``--quick``: 1 and 4), N ``sluice
collect`` processes serve the same pipeline as N hosts (``bench/fleet_hosts.py``: one name, one
metastore URL, one local staging folder, ``collector.host`` h000...; each a data folder of its
own and three logs that get a line every 2 s). The metastore is a PostgreSQL server of the
case's own (``tests/support/postgres_server.py``, with ``pg_stat_statements`` preloaded and room
for every collector's connections); its database is made anew for each N, and migrated once
before the collectors start. The collectors start one every :data:`START_STAGGER_S`; once each
holds its lease and :data:`SETTLE_S` more have passed, a window of ``--fleet-minutes`` (3;
``--quick`` 1) begins: the statement statistics are reset and a checkpoint is requested every
:data:`REQUEST_EVERY_S` through ``PipelineOperations.request_checkpoint``, as a DAG run's
request task does. Each waits for every host whose lease was live; the suite reads it every
:data:`POLL_S` (``PipelineOperations.checkpoint``, reads only) until it is sealed.

Per N, over the window (``bench/metastore_load.py``; the suite reads and requests as a role of
its own, so its statements are not counted, though its backend's CPU is in the server's):

* request -> all hosts sealed, p50 and p99 over the requests, as the poller saw it (the
  metastore's ``sealed_at - requested_at`` in the details);
* the collectors' statements per second, overall and per collector, and the most called;
* the connections each collector holds (sampled :data:`CONNECTION_SAMPLES` times);
* the server's CPU (its processes, ended backends included) and each collector's, as a share
  of a core; the collectors' resident memory at the end of the window (means).

Then the writer stops, a last checkpoint is requested and sealed, the collectors are stopped
with SIGTERM (each must exit 0), the checkpoints the stops requested are excused from the hosts
that have gone (as a run's wait excuses them), and every line written must be in the sealed
checkpoints' batches exactly once (line counts per host). A size whose collectors would not fit
in the memory available is not run, nor measured when its collectors do not all hold their
lease within the start timeout: its row says so.

With ``--fleet-pooler`` the same sizes run with the collectors reaching the server through a
real PgBouncer in transaction mode (``tests/support/pgbouncer.py``: started anew for each N,
after the database; :data:`POOLER_SERVER_CONNECTIONS` server connections, room for
:data:`POOLER_CLIENT_CONNECTIONS` clients) and ``metastore.pooling: transaction`` in the hosts'
configs: no statement prepared, requests looked for with a query twice a second instead of
``LISTEN``. The suite's own reads and requests still go to the server directly, as the observer
role: they stay out of the pool and out of the figures, so the pooler's server connections are
the collectors' only. Its rows say "through PgBouncer"; besides the figures above, each gives
the collectors' client connections to the pooler (sampled as above), the server connections
open on PostgreSQL meanwhile (the collectors' role's backends in ``pg_stat_activity``, which the
pooler holds) and the pooler's CPU. ``pg_stat_statements`` counts the statements the pooler
passes on, under the collectors' role, as without it.

Target: p99 at most 5 s with 32 collectors. A last row fits a line through the sizes
measured: statements per second and server CPU per added collector, for capacity planning.
One pass over the sizes (``--runs`` does not apply: a size is minutes long).
"""

from __future__ import annotations

import statistics
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import common
from bench.cases.checkpoint_latency import percentile
from bench.common import Context, Row, Stat
from bench.fleet_hosts import PIPELINE, Fleet
from bench.metastore_load import (
    SERVER_SETTINGS,
    Connections,
    MetastoreLoad,
    Pooler,
    Statement,
    server_cpu_seconds,
)
from pipeline_core.config import MetastorePooling
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations

TARGET_S = 5.0
TARGET_COLLECTORS = 32
SIZES = (1, 8, 32, 64)
QUICK_SIZES = (1, 4)
MINUTES = 3.0
QUICK_MINUTES = 1.0
REQUEST_EVERY_S = 30.0
POLL_S = 0.05
"""How often a requested checkpoint is looked at until sealed (no reads in between)."""
START_STAGGER_S = 0.25
START_TIMEOUT_S = 60.0
START_TIMEOUT_PER_COLLECTOR_S = 3.0
SETTLE_S = 10.0
SEAL_TIMEOUT_S = 120.0
CONNECTION_SAMPLES = 4
MAX_CONNECTIONS = 1000
COLLECTOR_MB_GUESS = 150.0
"""A collector's resident memory assumed before one was measured."""
MEMORY_RESERVE_MB = 2048.0
"""Memory left to the server, the suite and the rest of the machine."""
POOLER_SERVER_CONNECTIONS = 20
"""``--fleet-pooler``: PgBouncer's server connections (``default_pool_size``; one database,
one role)."""
POOLER_CLIENT_CONNECTIONS = 400
"""``--fleet-pooler``: the clients PgBouncer accepts (``max_client_conn``): 64 collectors of 3
connections each, and room."""


class NotLive(Exception):
    """Not every collector held its lease within the start timeout."""


@dataclass
class FleetRun:
    """What one fleet size measured."""

    size: int
    seconds: float
    """The window's length."""
    start_seconds: float
    """From the first collector's start to every lease held."""
    latencies: list[float] = field(default_factory=list)
    recorded: list[float] = field(default_factory=list)
    """``sealed_at - requested_at`` of the same checkpoints, as the metastore recorded them."""
    statements: list[Statement] = field(default_factory=list)
    connections: list[Connections] = field(default_factory=list)
    server_cpu_percent: float = 0.0
    collector_cpu_percent: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    written: int = 0
    sealed: int = 0
    stop_checkpoints: int = 0
    problems: list[str] = field(default_factory=list)
    pooler: Pooler | None = None
    """The PgBouncer the collectors went through (``--fleet-pooler``)."""
    pooler_cpu_percent: float = 0.0

    @property
    def statements_per_s(self) -> float:
        return sum(s.calls for s in self.statements) / self.seconds

    @property
    def transactions_per_s(self) -> float:
        """Transactions ended (``COMMIT`` and ``ROLLBACK`` statements) per second."""
        ends = sum(s.calls for s in self.statements if s.ends_transaction)
        return ends / self.seconds

    @property
    def connections_per_collector(self) -> list[int]:
        return [count for sample in self.connections for count in sample.by_process.values()]

    @property
    def client_connections(self) -> list[int]:
        """All collectors' connections, sample by sample (through a pooler: to the pooler)."""
        return [sum(sample.by_process.values()) for sample in self.connections]

    @property
    def server_connections(self) -> list[int]:
        """The collectors' role's connections on the server, sample by sample."""
        return [sample.server for sample in self.connections]


def run(ctx: Context) -> list[Row]:
    from tests.support.postgres_server import private_postgres

    sizes = ctx.fleet_sizes or (QUICK_SIZES if ctx.quick else SIZES)
    minutes = ctx.fleet_minutes or (QUICK_MINUTES if ctx.quick else MINUTES)
    pooled = ctx.fleet_pooler
    settings = {**SERVER_SETTINGS, "max_connections": str(MAX_CONNECTIONS)}
    measured: dict[int, FleetRun] = {}
    rows: list[Row] = []
    with private_postgres(settings) as server:
        for size in sizes:
            refusal = memory_refusal(size, measured.values())
            if refusal:
                rows.append(unmeasured_row(size, refusal, pooled))
                continue
            server.reset_database()
            load = MetastoreLoad(server.url)
            try:
                load.prepare()
                with collectors_route(server.url, pooled) as (url, pooler):
                    result = fleet_once(
                        ctx.work("fleet"), size, minutes * 60, server.url, load, url, pooler
                    )
            except NotLive as exc:
                rows.append(unmeasured_row(size, str(exc), pooled))
                continue
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                rows.append(unmeasured_row(size, f"FAILED: {exc!r}"[:500], pooled))
                continue
            finally:
                load.close()
            measured[size] = result
            rows.append(size_row(result, minutes))
    ctx.work("fleet")
    rows.append(target_row(measured, pooled))
    if len(measured) >= 2:
        rows.append(slope_row(list(measured.values()), pooled))
    return rows


@contextmanager
def collectors_route(server_url: str, pooled: bool) -> Iterator[tuple[str, Pooler | None]]:
    """The metastore URL the collectors are given, and the pooler behind it: with ``pooled``,
    a PgBouncer in transaction mode started in front of ``server_url`` for the block;
    otherwise the server itself."""
    if not pooled:
        yield server_url, None
        return
    from tests.support.pgbouncer import pgbouncer_in_front

    with pgbouncer_in_front(
        server_url,
        server_connections=POOLER_SERVER_CONNECTIONS,
        client_connections=POOLER_CLIENT_CONNECTIONS,
    ) as pgbouncer:
        yield pgbouncer.url, Pooler(pgbouncer.pid, pgbouncer.port)


def memory_refusal(size: int, earlier: Iterable[FleetRun]) -> str:
    """Why ``size`` collectors would not fit in the memory available now (empty: they fit),
    from the largest collector measured so far."""
    largest = max((max(r.rss_mb) for r in earlier if r.rss_mb), default=0.0)
    per_collector = largest * 1.5 if largest else COLLECTOR_MB_GUESS
    needed = size * per_collector + MEMORY_RESERVE_MB
    available = available_mb()
    if needed <= available:
        return ""
    return (
        f"not run: {size} collectors need about {needed / 1024:.1f} GiB "
        f"({per_collector:.0f} MB each), {available / 1024:.1f} GiB available"
    )


def available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise KeyError("MemAvailable")


def fleet_once(
    work: Path,
    size: int,
    seconds: float,
    url: str,
    load: MetastoreLoad,
    collectors_url: str,
    pooler: Pooler | None,
) -> FleetRun:
    """One fleet size: the database at ``url`` migrated, ``size`` collectors given
    ``collectors_url`` (through ``pooler`` when there is one), measured."""
    Metastore.open(url).close()  # migrated once, not raced by N collectors opening it
    pooling = MetastorePooling.NONE if pooler is None else MetastorePooling.TRANSACTION
    fleet = Fleet(work, size, collectors_url, pooling)
    started = time.monotonic()
    observer = fleet.write_config(work / "observer", "observer", load.observer_url)
    pipeline = PipelineOperations(observer, migrate=False)
    try:
        fleet.start(START_STAGGER_S)
        with pipeline:
            wait_live(pipeline, fleet, START_TIMEOUT_S + START_TIMEOUT_PER_COLLECTOR_S * size)
            result = FleetRun(size, seconds, time.monotonic() - started, pooler=pooler)
            with fleet.writer.running():
                time.sleep(SETTLE_S)
                measure_window(pipeline, fleet, load, result)
            time.sleep(1.0)  # the last lines read
            last = pipeline.request_checkpoint(run_id=f"fleet-{size}-last").checkpoint_id
            wait_sealed(pipeline, fleet, {last: time.monotonic()}, result)
    finally:
        exits = fleet.stop()
    result.problems += [
        f"{host} exited {code}: {fleet.said(host)}" for host, code in exits.items() if code != 0
    ]
    with pipeline:
        check_lines(pipeline, fleet, result)
    return result


def wait_live(pipeline: PipelineOperations, fleet: Fleet, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    live: set[str] = set()
    while time.monotonic() < deadline:
        fleet.check_running()
        with pipeline.context.view() as view:
            live = {lease.host for lease in view.leases(PIPELINE) if lease.live}
        if live >= set(fleet.hosts):
            return
        time.sleep(0.5)
    raise NotLive(
        f"not measured: {len(live)} of {len(fleet.hosts)} collectors held their lease "
        f"{timeout:.0f} s after the first started"
    )


def measure_window(
    pipeline: PipelineOperations, fleet: Fleet, load: MetastoreLoad, result: FleetRun
) -> None:
    """Request a checkpoint every :data:`REQUEST_EVERY_S` for the window, sampling the
    connections, and fill ``result``'s figures; a checkpoint that does not hold a batch of
    every host is a problem."""
    pids = fleet.pids
    postmaster = load.server_pid()
    pooler = result.pooler
    load.reset_statements()
    server_before = server_cpu_seconds(postmaster)
    pooler_before = common.cpu_seconds(pooler.pid) if pooler else 0.0
    collectors_before = {pid: common.cpu_seconds(pid) for pid in pids}
    started = time.monotonic()
    samples_at = [
        started + result.seconds * (i + 0.5) / CONNECTION_SAMPLES for i in range(CONNECTION_SAMPLES)
    ]
    requested: dict[int, float] = {}
    pending: dict[int, float] = {}
    next_request = started
    while (now := time.monotonic()) < started + result.seconds:
        fleet.check_running()
        if now >= next_request:
            run_id = f"fleet-{result.size}-{len(requested)}"
            info = pipeline.request_checkpoint(run_id=run_id)
            requested[info.checkpoint_id] = pending[info.checkpoint_id] = now
            next_request += REQUEST_EVERY_S
        if samples_at and now >= samples_at[0]:
            samples_at.pop(0)
            result.connections.append(load.connections(pids, pooler))
        seen_sealed(pipeline, pending, result.latencies)
        time.sleep(POLL_S)
    wall = time.monotonic() - started
    result.seconds = wall
    result.statements = load.statements()
    result.server_cpu_percent = 100 * (server_cpu_seconds(postmaster) - server_before) / wall
    if pooler:
        result.pooler_cpu_percent = 100 * (common.cpu_seconds(pooler.pid) - pooler_before) / wall
    result.collector_cpu_percent = [
        100 * (common.cpu_seconds(pid) - before) / wall for pid, before in collectors_before.items()
    ]
    result.rss_mb = [common.status_kib(pid, "VmRSS") / 1024 for pid in pids]
    wait_sealed(pipeline, fleet, pending, result, result.latencies)
    for checkpoint_id in requested:
        info = pipeline.checkpoint(checkpoint_id)
        if info.sealed_at is not None:
            result.recorded.append((info.sealed_at - info.requested_at).total_seconds())
        if len(info.hosts) != result.size:
            result.problems.append(
                f"checkpoint {checkpoint_id} holds batches of {len(info.hosts)} hosts"
            )


def seen_sealed(
    pipeline: PipelineOperations, pending: dict[int, float], latencies: list[float] | None
) -> None:
    """Drop from ``pending`` (checkpoint -> ``time.monotonic()`` when requested) those sealed
    now, their latencies added to ``latencies`` (when given)."""
    for checkpoint_id, requested_at in list(pending.items()):
        if pipeline.checkpoint(checkpoint_id).state.landable:
            del pending[checkpoint_id]
            if latencies is not None:
                latencies.append(time.monotonic() - requested_at)


def wait_sealed(
    pipeline: PipelineOperations,
    fleet: Fleet,
    pending: dict[int, float],
    result: FleetRun,
    latencies: list[float] | None = None,
) -> None:
    """Poll until every checkpoint of ``pending`` is sealed; one that is not within
    :data:`SEAL_TIMEOUT_S` is a problem of ``result``."""
    deadline = time.monotonic() + SEAL_TIMEOUT_S
    while pending and time.monotonic() < deadline:
        fleet.check_running()
        seen_sealed(pipeline, pending, latencies)
        time.sleep(POLL_S)
    if pending:
        result.problems.append(f"checkpoints {sorted(pending)} not sealed in time")


def check_lines(pipeline: PipelineOperations, fleet: Fleet, result: FleetRun) -> None:
    """Once the collectors stopped: seal what their stops requested (excusing the hosts that
    have gone, as a run's wait does), then compare the lines of every sealed batch with the
    lines written, host by host."""
    waiting = pipeline.checkpoints.in_states(CheckpointState.REQUESTED)
    for info in waiting:
        pipeline.excuse_lapsed_hosts(info.checkpoint_id)
    result.stop_checkpoints = len(waiting)
    sealed = pipeline.checkpoints.in_states(CheckpointState.SEALED)
    with pipeline.context.view() as view:
        batches = view.batches([info.checkpoint_id for info in sealed])
    lines: dict[str, int] = dict.fromkeys(fleet.hosts, 0)
    for batch in batches:
        lines[batch.host] = lines.get(batch.host, 0) + batch.line_count
    written = fleet.writer.written
    result.written, result.sealed = sum(written.values()), sum(lines.values())
    wrong = {host: (lines[host], written[host]) for host in lines if lines[host] != written[host]}
    if wrong:
        shown = ", ".join(f"{h} {got} of {want}" for h, (got, want) in sorted(wrong.items())[:5])
        result.problems.append(f"lines sealed per host differ from those written: {shown}")
    still = pipeline.checkpoints.in_states(CheckpointState.REQUESTED)
    if still:
        result.problems.append(f"checkpoints left unsealed: {[i.checkpoint_id for i in still]}")


# ---------------------------------------------------------------------------------- rows


def collectors(size: int) -> str:
    return f"{size} collector{'s' if size != 1 else ''}"


def label(pooled: bool) -> str:
    """How a row begins: a run through the pooler is told apart from one without."""
    return "fleet through PgBouncer (transaction mode)" if pooled else "fleet"


def size_row(result: FleetRun, minutes: float) -> Row:
    latencies = result.latencies or [float("nan")]
    recorded = result.recorded or [float("nan")]
    connections = result.connections_per_collector or [0]
    work = [s for s in result.statements if not s.transaction_control]
    top = "; ".join(f"{s.calls / result.seconds:.1f}/s {s.short[:60]}" for s in work[:3])
    verdict = (
        "FAILED: " + " | ".join(result.problems)
        if result.problems
        else f"all {result.written:,} lines written sealed once"
    )
    rate = result.statements_per_s
    if result.pooler is None:
        held = (
            f"connections per collector {statistics.mean(connections):.1f} (max {max(connections)})"
        )
    else:
        clients = result.client_connections or [0]
        servers = result.server_connections or [0]
        others = max((sample.others for sample in result.connections), default=0)
        held = (
            f"client connections to PgBouncer per collector {statistics.mean(connections):.1f} "
            f"(max {max(connections)}), all collectors {statistics.mean(clients):.0f} (max "
            f"{max(clients)}); server connections on PostgreSQL {statistics.mean(servers):.1f} "
            f"(max {max(servers)}; pool {POOLER_SERVER_CONNECTIONS}"
            f"{f', {others} not the pooler' if others else ''}); PgBouncer CPU "
            f"{result.pooler_cpu_percent:.1f} % core"
        )
    return Row(
        case="20",
        measure=f"{label(result.pooler is not None)}: {collectors(result.size)}, a checkpoint "
        f"every {REQUEST_EVERY_S:.0f} s "
        f"for {minutes:g} min: request -> all sealed, p50",
        sluice=Stat(latencies, "s", places=2),
        note=f"p99 {percentile(latencies, 99):.2f} s over {len(result.latencies)} requests "
        f"(the metastore's sealed_at - requested_at: p50 {statistics.median(recorded):.3f} s, "
        f"p99 {percentile(recorded, 99):.3f} s); statements {rate:.1f}/s "
        f"({rate / result.size:.2f} per collector; {result.transactions_per_s:.2f} "
        f"transactions/s), most called besides BEGIN and COMMIT: {top}; {held}; PostgreSQL "
        f"CPU {result.server_cpu_percent:.1f} % core; per collector (mean) "
        f"{statistics.mean(result.collector_cpu_percent):.2f} % core, "
        f"{statistics.mean(result.rss_mb):.0f} MB; all live {result.start_seconds:.0f} s "
        f"after the first start; {verdict}",
        details=details(result),
    )


def details(result: FleetRun) -> dict[str, Any]:
    through: dict[str, Any] = {}
    if result.pooler is not None:
        through = {
            "pooler": {
                "kind": "pgbouncer",
                "pool_mode": "transaction",
                "server_connections_pool": POOLER_SERVER_CONNECTIONS,
                "max_client_connections": POOLER_CLIENT_CONNECTIONS,
            },
            "client_connections": result.client_connections,
            "server_connections": result.server_connections,
            "pooler_cpu_percent": result.pooler_cpu_percent,
        }
    return {
        "collectors": result.size,
        "window_s": result.seconds,
        "latencies_s": result.latencies,
        "recorded_latencies_s": result.recorded,
        "statements_per_s": result.statements_per_s,
        "statements_per_s_per_collector": result.statements_per_s / result.size,
        "transactions_per_s": result.transactions_per_s,
        "top_statements": [
            {"query": s.short, "calls_per_s": s.calls / result.seconds, "total_ms": s.total_ms}
            for s in result.statements[:10]
        ],
        "connections_per_collector": result.connections_per_collector,
        "connections_of_others": [sample.others for sample in result.connections],
        "postgres_cpu_percent": result.server_cpu_percent,
        "collector_cpu_percent": result.collector_cpu_percent,
        "collector_rss_mb": result.rss_mb,
        "start_s": result.start_seconds,
        "lines_written": result.written,
        "lines_sealed": result.sealed,
        "stop_checkpoints": result.stop_checkpoints,
        "problems": result.problems,
        **through,
    }


def unmeasured_row(size: int, why: str, pooled: bool) -> Row:
    return Row(
        case="20",
        measure=f"{label(pooled)}: {collectors(size)}: request -> all sealed",
        sluice=Stat([float("nan")], "s"),
        note=why,
        details={"collectors": size, "problems": [why]},
    )


def target_row(measured: dict[int, FleetRun], pooled: bool) -> Row:
    """p99 at :data:`TARGET_COLLECTORS` collectors, or at the largest size measured (no
    verdict) when that one was not."""
    target = f"p99 <= {TARGET_S:g} s at {TARGET_COLLECTORS} collectors"
    result = measured.get(TARGET_COLLECTORS)
    if result is None:
        if not measured:
            return Row(
                "20",
                f"{label(pooled)}: request -> all sealed, p99",
                Stat([float("nan")], "s"),
                target=target,
                note="no fleet size was measured",
            )
        result = measured[max(measured)]
    p99 = percentile(result.latencies, 99) if result.latencies else float("nan")
    at_target = result.size == TARGET_COLLECTORS
    return Row(
        case="20",
        measure=f"{label(pooled)}: request -> all sealed, p99 at {collectors(result.size)}",
        sluice=Stat([p99], "s", places=2),
        target=target,
        met=(p99 <= TARGET_S and not result.problems) if at_target else None,
        note="" if at_target else f"{TARGET_COLLECTORS} collectors not measured in this run",
    )


def slope_row(results: list[FleetRun], pooled: bool) -> Row:
    """A line through (N, statements/s) and (N, server CPU): what each collector adds."""
    sizes = [float(r.size) for r in results]
    statements = statistics.linear_regression(sizes, [r.statements_per_s for r in results])
    cpu = statistics.linear_regression(sizes, [r.server_cpu_percent for r in results])
    shown = ", ".join(str(r.size) for r in results)
    return Row(
        case="20",
        measure=f"{label(pooled)}: each collector adds (linear fit over N = {shown}): "
        "metastore statements",
        sluice=Stat([statements.slope], "statements/s", places=2),
        note=f"statements/s = {statements.slope:.2f} N + {statements.intercept:.1f}; "
        f"PostgreSQL CPU % core = {cpu.slope:.3f} N + {cpu.intercept:.2f}",
        details={
            "statements_per_s": {"slope": statements.slope, "intercept": statements.intercept},
            "postgres_cpu_percent": {"slope": cpu.slope, "intercept": cpu.intercept},
        },
    )
