"""The real rotation tools: nginx under wrk's load, its log rotated by logrotate in each style
production uses, tailed by ``sluice collect`` and landed by Spark; every line left on disk is
in the lake exactly once (issue 15). The metastore plays no part in what it tests: make test
runs it in its SQLite pass only.

One test per :class:`RotationStyle` (``create``, ``copytruncate``, ``copytruncate`` with
``delaycompress``, ``dateext``), each on its own nginx, logs and pipeline:

1. nginx (Debian's, on loopback; ``tests.support.rotation_tools``) writes every request to
   ``logs/access.log`` and to ``truth/all.log``, never rotated and out of the collector's
   sight: the ground truth. Each line is a JSON object starting with nginx's unique
   ``$request_id``; the pipeline reads ``logs/access.log*`` but ``*.gz`` as ``json_lines``,
   which keeps each line in ``payload``.
2. ``sluice collect`` tails the logs while a checkpoint is requested every
   ``CHECKPOINT_EVERY_S``, as DAG runs do; it seals them during the load.
3. wrk loads nginx until ``all.log`` holds ``REQUESTS`` requests; meanwhile
   ``logrotate -f`` rotates ``access.log`` ``ROTATIONS`` times, spread over the load.
4. wrk stops, nginx stops gracefully (the logs are final), the collector reads to their ends
   and is stopped with SIGTERM (it seals what it read); every sealed checkpoint is landed by
   the suite's SparkSession.
5. The lake, ``all.log`` and the ``access.log*`` files left on disk (``.gz`` decompressed) are
   compared by request id: every event id and request id is in the lake once; every line
   complete on disk is in the lake; every row is a line of ``all.log``, byte for byte; no
   well-formed line is rejected. Lines in ``all.log`` and in no file on disk were destroyed by
   copytruncate (written to the original between logrotate's copy and its truncation); only
   copytruncate styles may have them, and the lake may hold them (read before the
   truncation) or not. A copy may end in a line cut in two (nginx's write was under way when
   logrotate read the end of the file): its head may land as a reject, nothing else may.

The figures of each style are printed and listed at the end of the run. The metastore is
SQLite only: the test is about files; it is not run again on PostgreSQL.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.lake import lake_location
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import CheckpointRequests, lake_table, wait_until
from tests.support.faults import checkpoint_states, land_and_commit_sealed, report_figures
from tests.support.pipelines import write_config
from tests.support.rotation_tools import (
    Logrotate,
    Nginx,
    RotationStyle,
    RotationTools,
    Wrk,
    lines_by_id,
    read_log,
    request_id,
    running_nginx,
    running_wrk,
)
from tests.support.tailing import TailingCollector

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.sqlite_pass]

REQUESTS = 250_000
"""Requests per style at least (one million over the four)."""
ROTATIONS = 3
"""Rotations per style, at 1/4, 2/4 and 3/4 of the requests."""
ROTATION_GAP_S = 1.2
"""Rotations are at least this far apart (``dateext`` names carry the second)."""
CHECKPOINT_EVERY_S = 1.5
DISCOVERY_INTERVAL_S = 1.0
"""The collector's default."""
LOAD_TIMEOUT_S = 120.0
CATCH_UP_TIMEOUT_S = 60.0


@dataclass
class Outcome:
    """How the lake compares with ``all.log`` and the files on disk."""

    requests: int
    """Lines in ``all.log``."""
    on_disk: int
    """Of those, lines complete in some ``access.log*`` file."""
    cut_on_disk: int
    """Pieces of lines on disk (a copy's last line cut in two)."""
    rows: int
    distinct_event_ids: int
    landed: int
    """Lines of ``all.log`` in the lake (once or more)."""
    extra_copies: int
    """Rows beyond the first of their request id."""
    duplicated: dict[str, int] = field(default_factory=dict)
    """Request ids in more than one row, with their rows."""
    missing_on_disk: list[str] = field(default_factory=list)
    """Request ids of lines complete on disk that are not in the lake."""
    not_logged: list[str] = field(default_factory=list)
    """Payloads of rows that are not a line of ``all.log`` (the first few)."""
    destroyed: int = 0
    """Lines of ``all.log`` in no file on disk."""
    destroyed_landed: int = 0
    """Of those, lines in the lake."""
    rejects: int = 0
    cut_rejects: int = 0
    """Rejects that are the head of a destroyed line."""
    bad_rejects: list[str] = field(default_factory=list)
    """Other rejects' raw lines (the first few)."""

    @property
    def missing(self) -> int:
        """Lines of ``all.log`` not in the lake."""
        return self.requests - self.landed


def compare(all_log: Path, logs: Path, config: PipelineConfig) -> tuple[Outcome, list[str]]:
    """Compare the lake of ``config`` with ``all_log`` and ``logs/access.log*``; the outcome
    and the event ids of the first duplicated request ids."""
    logged = lines_by_id(all_log.read_bytes())
    on_disk: set[bytes] = set()
    cut_on_disk = 0
    for path in sorted(logs.glob("access.log*")):
        for line in read_log(path).splitlines():
            key = request_id(line)
            if key is not None and logged.get(key) == line:
                on_disk.add(key)
            else:
                cut_on_disk += 1

    table = lake_table(lake_location(config), "access")
    event_ids: list[str] = [] if table is None else table["event_id"].to_pylist()
    payloads: list[str] = [] if table is None else table["payload"].to_pylist()
    rows_of: dict[bytes, list[str]] = {}
    not_logged = []
    for event_id, payload in zip(event_ids, payloads, strict=True):
        line = payload.encode()
        key = request_id(line)
        if key is None or logged.get(key) != line:
            not_logged.append(payload)
            continue
        rows_of.setdefault(key, []).append(event_id)
    landed = set(rows_of)
    destroyed = set(logged) - on_disk

    rejects = lake_table(lake_location(config), "_rejects")
    raw_lines: list[str] = [] if rejects is None else rejects["raw_line"].to_pylist()
    cut_rejects, bad_rejects = 0, []
    for raw in raw_lines:
        head = raw.encode()
        key = request_id(head)
        if key in destroyed and head != logged[key] and logged[key].startswith(head):
            cut_rejects += 1
        else:
            bad_rejects.append(raw)

    duplicated = {k: ids for k, ids in rows_of.items() if len(ids) > 1}
    outcome = Outcome(
        requests=len(logged),
        on_disk=len(on_disk),
        cut_on_disk=cut_on_disk,
        rows=len(event_ids),
        distinct_event_ids=len(set(event_ids)),
        landed=len(landed),
        extra_copies=sum(len(ids) - 1 for ids in duplicated.values()),
        duplicated={k.decode(): len(ids) for k, ids in list(duplicated.items())[:5]},
        missing_on_disk=sorted(k.decode() for k in on_disk - landed),
        not_logged=not_logged[:5],
        destroyed=len(destroyed),
        destroyed_landed=len(destroyed & landed),
        rejects=len(raw_lines),
        cut_rejects=cut_rejects,
        bad_rejects=bad_rejects[:5],
    )
    examples = [f"{k.decode()}: {ids}" for k, ids in list(duplicated.items())[:5]]
    return outcome, examples


def warning_kinds(warnings: list[str]) -> Counter[str]:
    """The collector's warnings by message, numbers and paths left out."""
    kinds: Counter[str] = Counter()
    for line in warnings:
        message = line.split(": ", 1)[-1]
        message = re.sub(r"/\S+", "<path>", message)
        kinds[re.sub(r"\d+", "N", message)] += 1
    return kinds


def drive_load(nginx: Nginx, wrk: Wrk, logrotate: Logrotate) -> int:
    """Rotate at 1/4, 2/4 and 3/4 of ``REQUESTS`` logged (``ROTATION_GAP_S`` apart at least),
    stop wrk once ``REQUESTS`` are logged; the requests wrk counted."""
    last = float("-inf")

    def reached(mark: int) -> bool:
        return nginx.logged() >= mark and time.monotonic() - last >= ROTATION_GAP_S

    marks = [REQUESTS * (k + 1) // (ROTATIONS + 1) for k in range(ROTATIONS)]
    for mark in [*marks, REQUESTS]:
        wait_until(partial(reached, mark), LOAD_TIMEOUT_S, f"{mark} requests in all.log")
        if mark != REQUESTS:
            logrotate.rotate()
            last = time.monotonic()
    return wrk.stop()


@pytest.mark.timeout(420)
@pytest.mark.parametrize("style", list(RotationStyle), ids=lambda style: style.value)
def test_every_line_on_disk_lands_once_through_real_rotations(
    style: RotationStyle,
    tmp_path: Path,
    spark: SparkSession,
    request: pytest.FixtureRequest,
) -> None:
    tools = RotationTools.find()
    logs = tmp_path / "logs"
    all_log = tmp_path / "truth" / "all.log"
    config_path = write_config(
        tmp_path,
        f"sqlite:///{tmp_path / 'sluice.db'}",
        name=f"rotation_{style.value}",
        fmt="json_lines",
        source={"exclude": ["logs/*.gz"], "time_field": "time"},
        collector={"discovery_interval_s": DISCOVERY_INTERVAL_S},
    )
    config = load_pipeline_config(config_path)
    started = time.monotonic()
    with ExitStack() as stack:
        metastore = Metastore.open(config.metastore_url)
        stack.callback(metastore.close)
        collector = stack.enter_context(TailingCollector(config_path, tmp_path / "collector"))
        nginx = stack.enter_context(
            running_nginx(tools.nginx, tmp_path / "nginx", logs / "access.log", all_log)
        )
        logrotate = Logrotate(
            tools.logrotate, tmp_path / "logrotate", nginx.access_log, style, nginx.pid_file
        )
        nginx.get()  # the collector tails access.log before the first rotation
        wait_until(lambda: collector.tracks(nginx.access_log), 30, "access.log to be tracked")
        requests = stack.enter_context(
            CheckpointRequests(metastore, config.name, CHECKPOINT_EVERY_S, prefix=style.value)
        )
        load_started = time.monotonic()
        wrk = stack.enter_context(running_wrk(tools.wrk, nginx.url, tmp_path / "wrk.txt"))
        counted_by_wrk = drive_load(nginx, wrk, logrotate)
        load = time.monotonic() - load_started
        states = checkpoint_states(metastore, config.name)
        sealed_in_load = sum(state is CheckpointState.SEALED for state in states.values())
        nginx.stop()
        caught_up = collector.wait_caught_up(2 * DISCOVERY_INTERVAL_S + 1, CATCH_UP_TIMEOUT_S)
        behind = [] if caught_up else collector.files()
        requests.finish()
        returncode = collector.stop()
        states = checkpoint_states(metastore, config.name)
        files = metastore.files(config.name, "test-host")
    collected = time.monotonic() - started
    warnings = collector.warnings()
    print(f"collector warnings ({len(warnings)}):", *warnings[:30], sep="\n  ")
    assert returncode == 0, f"sluice collect exited with {returncode}:\n{collector.log_tail()}"

    landing_started = time.monotonic()
    summaries = land_and_commit_sealed(spark, config_path)
    landing = time.monotonic() - landing_started
    outcome, duplicate_examples = compare(all_log, logs, config)
    report_figures(
        request,
        f"{style.value}: {outcome.requests} requests ({counted_by_wrk} counted by wrk), "
        f"{outcome.on_disk} lines on disk, {outcome.rows} rows, {outcome.rejects} rejects "
        f"({outcome.cut_rejects} heads of cut lines), {outcome.extra_copies} duplicates, "
        f"{outcome.destroyed} destroyed by copytruncate ({outcome.destroyed_landed} of them "
        f"read before the truncation), {outcome.missing} missing; {logrotate.rotations} "
        f"rotations, {len(states)} checkpoints ({sealed_in_load} sealed during the load), "
        f"{len(summaries)} landed; {len(warnings)} collector warnings "
        f"{dict(warning_kinds(warnings))}; load {load:.0f} s, collection {collected:.0f} s, "
        f"landing {landing:.0f} s",
    )

    assert caught_up, "the collector did not read its files to their ends:\n" + "\n".join(behind)
    rotated = sorted(p.name for p in logs.glob("access.log?*"))
    assert len(rotated) == ROTATIONS, f"rotated files on disk: {rotated}"
    assert sealed_in_load > 0, f"no checkpoint was sealed during the load: {states}"
    assert CheckpointState.REQUESTED not in states.values(), f"left unsealed: {states}"
    names = ", ".join(f"{f.fingerprint}={Path(f.path).name}" for f in files)
    assert outcome.rows == outcome.distinct_event_ids, "an event id is in the lake twice"
    assert not outcome.duplicated, (
        f"{outcome.extra_copies} rows repeat a request id; e.g. (event ids) "
        f"{duplicate_examples}; files: {names}"
    )
    assert not outcome.missing_on_disk, (
        f"{len(outcome.missing_on_disk)} lines on disk are not in the lake, e.g. "
        f"{outcome.missing_on_disk[:5]}"
    )
    assert not outcome.not_logged, f"rows that are no line of all.log: {outcome.not_logged}"
    assert not outcome.bad_rejects, f"rejects that are no cut line: {outcome.bad_rejects}"
    if not style.copies:
        assert outcome.destroyed == 0, f"{outcome.destroyed} lines lost without copytruncate"
        assert outcome.cut_on_disk == 0 and outcome.rejects == 0
    assert outcome.requests >= REQUESTS
