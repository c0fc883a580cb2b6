"""Case 9: the lake tables: many checkpoints in one landing job, and compaction of a day.

Checkpoints: 13 checkpoints of the same pipeline (a block of access-log lines appended and
collected once per checkpoint), landed through ``spark-submit`` as ``sluice land`` and the DAG
submit it. Sluice lands all 13 in one job (one Spark application, one Iceberg commit per
table); the baseline lands each in a job of its own (a fresh JVM each), as every landing did
before a job could land several. Both sides land the same data into fresh lakes, then commit.
The ratio is one job / 13 jobs (wall time). Target: at most 0.25. The same 13 checkpoints in
one job are also set against the same lines collected as ONE checkpoint and landed the same way
(what a landing costs per checkpoint beyond its lines). Target: at most 1.3.

Compaction: a day of 5-minute checkpoints (288; 24 with ``--quick``), each collected and landed
on its own in this process's SparkSession (one commit per checkpoint, as a 5-minute schedule
makes them), then ``compact_table`` on the day. Reported: data files of the day partition
before and after, the compaction's wall time, and whether a scan of the table (every row,
sorted by event id) is the same before and after.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench import common
from bench.common import Context, Row, Stat

if TYPE_CHECKING:
    from pipeline_core.operations import PipelineOperations

CHECKPOINTS = 13
TARGET = 0.25
ONE_CHECKPOINT_TARGET = 1.3
DAY_CHECKPOINTS = 288
QUICK_DAY_CHECKPOINTS = 24
BLOCK_BYTES = 64 * 1024
"""Lines appended per checkpoint (about 300 access-log lines)."""


def run(ctx: Context) -> list[Row]:
    rows = []
    if ctx.spark_submit:
        rows += one_job_against_many(ctx)
    rows.append(compaction_of_a_day(ctx))
    ctx.work("tables")
    return rows


def staged(work: Path, checkpoints: int, blocks: int = CHECKPOINTS) -> tuple[Path, list[int]]:
    """A pipeline config under ``work`` and ``checkpoints`` sealed checkpoints of it holding
    ``blocks`` blocks of access-log lines between them (the same lines however many
    checkpoints: a checkpoint is collected after every ``blocks // checkpoints`` blocks)."""
    log = work / "logs" / "access.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    config = common.pipeline_config(work, log.parent)
    ids = []
    for number in range(blocks):
        block = work / "block.log.tmp"
        common.write_access_log(block, BLOCK_BYTES, start_block=number)
        with open(log, "ab") as out:
            out.write(block.read_bytes()[len(common.first_line(block.name)) :])
        block.unlink()
        if (number + 1) % (blocks // checkpoints) == 0:
            ids.append(common.collect_once(config).checkpoint_id)
    return config, ids


def one_job_against_many(ctx: Context) -> list[Row]:
    from pipeline_core.operations import PipelineOperations

    ours: list[float] = []
    theirs: list[float] = []
    single: list[float] = []
    for _ in range(1 if ctx.quick else max(1, ctx.sizes.runs - 1)):
        config, ids = staged(ctx.work("tables/one"), CHECKPOINTS)
        ours.append(common.timed(functools.partial(PipelineOperations(config).land, ids)))
        config, ids = staged(ctx.work("tables/many"), CHECKPOINTS)
        theirs.append(common.timed(functools.partial(land_each, PipelineOperations(config), ids)))
        config, ids = staged(ctx.work("tables/single"), 1)
        single.append(common.timed(functools.partial(PipelineOperations(config).land, ids)))
    ratio = common.paired_ratio(ours, theirs)
    to_single = common.paired_ratio(ours, single)
    return [
        Row(
            case="9",
            measure=f"land {CHECKPOINTS} checkpoints via spark-submit",
            sluice=Stat(ours, "s"),
            baseline=Stat(theirs, "s"),
            baseline_name=f"{CHECKPOINTS} jobs, one each",
            ratio=ratio,
            target=f"<= {TARGET} x",
            met=ratio.median <= TARGET,
            note="one Spark application and one Iceberg commit per table, against a JVM per "
            "checkpoint; both commit in the metastore",
        ),
        Row(
            case="9",
            measure=f"land {CHECKPOINTS} checkpoints via spark-submit",
            sluice=Stat(ours, "s"),
            baseline=Stat(single, "s"),
            baseline_name="the same lines as 1 checkpoint",
            ratio=to_single,
            target=f"<= {ONE_CHECKPOINT_TARGET} x",
            met=to_single.median <= ONE_CHECKPOINT_TARGET,
            note="both in one Spark application; what 12 more checkpoints cost",
        ),
    ]


def land_each(operations: PipelineOperations, ids: list[int]) -> None:
    for checkpoint_id in ids:
        operations.land([checkpoint_id])


def compaction_of_a_day(ctx: Context) -> Row:
    from pipeline_core.lake import compact_table, files_per_day, lake_location, open_lake
    from pipeline_core.operations import PipelineOperations
    from spark_jobs.landing import CheckpointInput, Landing, land

    spark = ctx.spark()
    count = QUICK_DAY_CHECKPOINTS if ctx.quick else DAY_CHECKPOINTS
    work = ctx.work("tables/day")
    config, ids = staged(work, count, blocks=count)
    operations = PipelineOperations(config)
    location = lake_location(operations.config)
    for checkpoint_id in ids:
        info = operations.checkpoint(checkpoint_id)
        inputs = (CheckpointInput(str(info.staging_dir), info.hosts),)
        land(spark, Landing(inputs, location, f"bench-{checkpoint_id}"))
        operations.commit([checkpoint_id])
    with open_lake(location) as lake:
        table = lake.load("access")
        if table is None:
            raise AssertionError("nothing landed")
        before = files_per_day(table)
        day = max(before, key=lambda d: before[d])
        rows_before = table.scan().to_arrow().sort_by("event_id")
        started = time.perf_counter()
        compaction = compact_table(table, day)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        table.refresh()
        after = files_per_day(table)
        same = table.scan().to_arrow().sort_by("event_id").equals(rows_before)
    return Row(
        case="9",
        measure=f"compact a day of {count} checkpoints ({rows_before.num_rows} rows)",
        sluice=Stat([seconds], "s"),
        note=f"files in the day partition: {before[day]} -> {after[day]}; "
        f"scan before == after: {same}; committed: {compaction.committed}",
        details={"files_before": before[day], "files_after": after[day], "same": same},
    )
