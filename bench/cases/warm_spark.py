"""Case 12: a small checkpoint from request to committed, on a warm Spark against spark-submit.

What a DAG run does for its checkpoint, without Airflow around it: 20,000 access-log lines
(3.5 MB) are appended to the pipeline's log; then the checkpoint is requested
(``PipelineOperations.request_checkpoint``, the ``request_checkpoint`` task), collected and
sealed (``collect_once``), landed and committed (``PipelineOperations.land``: the ``land`` and
``commit`` tasks). The figure is the wall time from the request to the commit.

Sluice: the landing runs on a Spark Connect server started once before the runs
(``scripts/spark-connect.sh``, ``local[2]``) and warmed by one untimed landing (its first
landing starts the session's Python workers): the job's driver is a Python child process,
Spark stays up. Baseline: the same landing through spark-submit (``local[*]``), which starts a
JVM, a SparkSession and Python workers for every run, as ``make run`` and the DAG did. Both
sides land into lakes of their own, run after run in turns (the ratio is run by run). Target:
at most 8 s from request to committed on the warm server.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench import common
from bench.common import Context, Row, Stat

LINES = 20_000
TARGET_S = 8.0


def run(ctx: Context) -> list[Row]:
    runs = max(2, ctx.sizes.runs)
    connect_config = pipeline(ctx.work("warm/connect"))
    submit_config = pipeline(ctx.work("warm/submit"))
    ours: list[float] = []
    theirs: list[float] = []
    with common.connect_server(ctx.work("warm/server")) as url:
        first = request_to_committed(connect_config, 0, url)
        for number in range(1, runs + 1):
            ours.append(request_to_committed(connect_config, number, url))
            if ctx.spark_submit:
                theirs.append(request_to_committed(submit_config, number, None))
    ctx.work("warm")
    ratio = common.paired_ratio(ours, theirs) if theirs else None
    return [
        Row(
            case="12",
            measure=f"request -> committed, {LINES // 1000}k lines, warm Spark Connect",
            sluice=Stat(ours, "s"),
            baseline=Stat(theirs, "s") if theirs else None,
            baseline_name="spark-submit, a JVM per run",
            ratio=ratio,
            target=f"<= {TARGET_S:.0f} s",
            met=Stat(ours, "s").median <= TARGET_S,
            note=f"the first landing of this job version on the server (its session's Python "
            f"workers start): {first:.1f} s request -> committed",
            details={"first_landing_s": first},
        )
    ]


def pipeline(work: Path) -> Path:
    log = work / "logs" / "access.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    return common.pipeline_config(work, log)


def request_to_committed(config: Path, number: int, spark_connect: str | None) -> float:
    """Append ``LINES`` lines, then request, seal, land and commit one checkpoint; the seconds
    from the request to the commit."""
    from pipeline_core.operations import PipelineOperations

    log = config.parent / "logs" / "access.log"
    with open(log, "ab") as out:
        out.write(next(common.line_blocks().stream(number)))
    operations = PipelineOperations(config)
    started = time.perf_counter()
    requested = operations.request_checkpoint(f"bench-{number}")
    operations.collect_once()
    [committed] = operations.land([requested.checkpoint_id], spark_connect=spark_connect)
    seconds = time.perf_counter() - started
    if committed.line_count != LINES:
        raise AssertionError(f"checkpoint {committed.checkpoint_id}: {committed.line_count} lines")
    return seconds
