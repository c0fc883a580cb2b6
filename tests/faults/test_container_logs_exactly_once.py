"""Container logs exactly once: two real Python programs in one container, one logging to
stdout (lines over the runtime's 16 KiB among them, written in partial entries), the other
logging tracebacks to stderr, their output copied into a CRI or Docker ``json-file`` log as a
runtime copies it (``tests.support.container_runtime``: a thread per stream, so their entries
interleave), while ``sluice collect`` is SIGKILLed and restarted again and again and
checkpoints are requested as DAG runs do. Every checkpoint is landed by the real Spark job, and
the lake's rows are compared, stream by stream, with what each program wrote (its ground
truth): every record is one row, whole, once, with its stream; no row is cut.
"""

from __future__ import annotations

import random
import shlex
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import CheckpointRequests, lake_table
from tests.support.container_runtime import run_container
from tests.support.faults import (
    FaultSeed,
    checkpoint_states,
    collect_once_when_free,
    land_and_commit_sealed,
    report_figures,
    run_collectors,
)
from tests.support.log_programs import PYTHON_FORMATS, PYTHON_PROGRAM, read_truth
from tests.support.pipelines import write_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.postgres_pass]

KILLS = 5
CHECKPOINT_EVERY_S = 0.7
FLUSH_AFTER_S = 0.3
RECORDS = 1200
"""Per program, written at ``RATE`` a second: about the time of the kills."""
RATE = 150


def _program(stream: str, truth: Path, seed: int, long: float, tracebacks: float) -> str:
    return shlex.join(
        [
            sys.executable, str(PYTHON_PROGRAM), "--log", f"/dev/{stream}", "--truth", str(truth),
            "--format", PYTHON_FORMATS["common"], "--events", str(RECORDS), "--rate", str(RATE),
            "--tracebacks", str(tracebacks), "--long", str(long), "--seed", str(seed),
            "--split-share", "0.3", "--split-pause", "0.05",
        ]
    )  # fmt: skip


@pytest.mark.timeout(600)
@pytest.mark.parametrize("fmt", ["cri", "docker_json"])
def test_every_record_of_each_stream_lands_once_and_whole_across_kills_and_checkpoints(
    fmt: str,
    tmp_path: Path,
    metastore_url: str,
    spark: SparkSession,
    fault_seed: FaultSeed,
    request: pytest.FixtureRequest,
) -> None:
    logs = tmp_path / "pods"
    logs.mkdir()
    truths = {"stdout": tmp_path / "stdout.jsonl", "stderr": tmp_path / "stderr.jsonl"}
    config_path = write_config(
        tmp_path,
        metastore_url,
        name=f"containers_{fmt}",
        pattern="pods/*.log",
        fmt=fmt,
        source={"name": "pods", "multiline": {"preset": "python", "flush_after_s": FLUSH_AFTER_S}},
        collector={"discovery_interval_s": 0.2, "lease_seconds": 60},
    )
    config = load_pipeline_config(config_path)
    rng = random.Random(fault_seed.value)
    seed = fault_seed.value % 1000
    both = " & ".join(
        (
            _program("stdout", truths["stdout"], seed, long=0.05, tracebacks=0.05),
            _program("stderr", truths["stderr"], seed + 1, long=0.0, tracebacks=0.3),
        )
    )
    metastore = Metastore.open(config.metastore_url)
    try:
        container = run_container(["sh", "-c", f"{both} & wait"], logs / "0.log", fmt)
        with CheckpointRequests(metastore, config.name, CHECKPOINT_EVERY_S, fmt):
            kills, exited = run_collectors(config_path, rng, tmp_path / "stderr", KILLS)
        assert container.wait() == 0
        time.sleep(FLUSH_AFTER_S * 3)  # the last events are quiet: a one-shot run reads them
        collect_once_when_free(config_path)
        states = checkpoint_states(metastore, config.name)
    finally:
        metastore.close()
    assert CheckpointState.REQUESTED not in states.values(), fault_seed.note(str(states))
    land_and_commit_sealed(spark, config_path)
    table = lake_table(lake_location(config), "pods")
    assert table is not None
    rows = list(
        zip(
            table["event_id"].to_pylist(),
            table["stream"].to_pylist(),
            table["message"].to_pylist(),
            table["cut"].to_pylist(),
            strict=True,
        )
    )
    rows.sort(key=lambda row: int(row[0].rsplit(":", 1)[1]))

    report = []
    for stream, truth in truths.items():
        written = [record.rstrip(b"\n").decode() for record in read_truth(truth)]
        landed = [message for _, of, message, _ in rows if of == stream]
        report.append(f"{stream}: {len(written)} records, {len(landed)} rows")
        assert landed == written, fault_seed.note(f"{stream}: the rows are not the records")
    report_figures(
        request,
        f"containers {fmt}: {'; '.join(report)}; {container.partial_entries} partial entries; "
        f"{kills} kills, {len(states)} checkpoints",
    )
    assert not exited, "collectors exited by themselves:\n" + "\n".join(exited)
    assert all(cut is None for *_, cut in rows)
    assert len({row[0] for row in rows}) == len(rows)
    assert kills == KILLS
    assert container.partial_entries > 0
