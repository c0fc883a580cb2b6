"""Case 16: ten thousand files on one host: 1,000 container folders of 10 logs each, 1 % of
them written at any time, containers coming and going.

The tree: ``logs/cNNNNN/fK.log``, 1,000 folders x 10 files of a few hundred bytes (each
starting with a line of its own), read by one pipeline (``logs/*/*.log``) of one ``sluice
collect`` process (continuous mode, collector defaults: ``file_events: inotify``,
``max_open_files`` 512, but ``close_idle_after_s`` ``CLOSE_IDLE_S`` instead of 300 s, so that
within the window files go idle, are closed, and are opened again when written). Once the
collector has read the tree, a writer process runs for ``WINDOW_S`` (``--quick``:
``QUICK_WINDOW_S``): at any time 100 files (1 %) get a line every 0.1 s each (1,000 lines/s),
a new set every ``ACTIVE_SET_S``; every ``CHURN_S`` a container that was not written in the
last two sets goes (its folder deleted) and a new one comes (a folder of 10 new files).
Checkpoints are requested every ``CHECKPOINT_EVERY_S`` meanwhile (as a DAG run requests them).

Figures (each against what a user's other tool does with the same files):

* descriptors the collector holds on the logs, the most seen (sampled every 0.5 s), against
  ``tail -F`` of the 10,000 files over the same window;
* its inotify watches (``/proc/<pid>/fdinfo``) at the end, against ``tail -F``'s;
* its CPU over the window (``/proc/<pid>/stat``), against ``tail -F``'s;
* checkpoint request -> sealed (``sealed_at - requested_at``), p50 and p99; target p99 <=
  250 ms;
* metastore rows written per seal (``sluice_files`` rows whose ``updated_at`` is the seal's
  ``sealed_at``), median, against the files the pipeline tracks (what a seal writing every
  file would write);
* a scan: ``FileWatcher.scan`` of the tree in this process, the first (every file new) and
  the steady one (median of 5, nothing changed), against ``find`` listing the same files'
  inodes and sizes;
* every line read once: the lines of the sealed batches against the lines written;
* at the watch limit: the same run (``LIMIT_WINDOW_S``) with the collector in a user
  namespace whose ``max_inotify_watches`` is ``WATCH_LIMIT`` (half the folders): lines sealed
  against written, and how many times the log says the limit was reached (once). Skipped
  where user namespaces cannot be made.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from bench import common
from bench.cases.checkpoint_latency import percentile
from bench.cases.idle_pipelines import inotify_watches, log_descriptors
from bench.common import Context, Row, Stat

CONTAINERS = 1000
FILES_PER_CONTAINER = 10
ACTIVE_FILES = 100
TICK_S = 0.1
ACTIVE_SET_S = 5.0
CHURN_S = 1.0
WINDOW_S = 60.0
QUICK_WINDOW_S = 20.0
LIMIT_WINDOW_S = 20.0
CHECKPOINT_EVERY_S = 2.0
CLOSE_IDLE_S = 10.0
WATCH_LIMIT = 500
TARGET_P99_MS = 250.0
READ_TIMEOUT_S = 300.0


def run(ctx: Context) -> list[Row]:
    window = QUICK_WINDOW_S if ctx.quick else WINDOW_S
    runs = [measure(ctx.work("manyfiles"), window) for _ in range(ctx.sizes.runs)]
    limited = [measure_at_limit(ctx.work("manyfiles-limit")) for _ in range(1)]
    ctx.work("manyfiles")
    ctx.work("manyfiles-limit")
    scans = scan_cost(ctx.work("manyfiles-scan"))
    ctx.work("manyfiles-scan")

    def stat(key: str, unit: str, places: int | None = None) -> Stat:
        return Stat([float(r[key]) for r in runs], unit, places)

    p99 = stat("checkpoint_p99_ms", "ms")
    descriptors = stat("most_descriptors", "")
    shape = f"{CONTAINERS * FILES_PER_CONTAINER:,} files in {CONTAINERS:,} folders, 1 % written"
    rows = [
        Row(
            case="16",
            measure=f"{shape}: descriptors held on the logs (most seen)",
            sluice=descriptors,
            baseline=stat("tail_descriptors", ""),
            baseline_name="tail -F",
            target=f"<= max_open_files ({runs[0]['max_open_files']})",
            met=descriptors.median <= runs[0]["max_open_files"],
            note=f"close_idle_after_s {CLOSE_IDLE_S:.0f}; open at the end "
            f"{stat('end_descriptors', '').text().strip()}",
        ),
        Row(
            case="16",
            measure=f"{shape}: inotify watches",
            sluice=stat("watches", ""),
            baseline=stat("tail_watches", ""),
            baseline_name="tail -F",
            note="one per folder (and the logs folder), not per file",
        ),
        Row(
            case="16",
            measure=f"{shape}: collector CPU over {window:.0f} s",
            sluice=stat("collector_percent", "% core"),
            baseline=stat("tail_percent", "% core"),
            baseline_name="tail -F",
            note=f"{ACTIVE_FILES * round(1 / TICK_S):,} lines/s; a container goes and one comes "
            f"every {CHURN_S:.0f} s; RSS at the end {stat('rss_mb', 'MB').text()}",
        ),
        Row(
            case="16",
            measure=f"{shape}: checkpoint request -> sealed, p50",
            sluice=stat("checkpoint_p50_ms", "ms"),
            note=f"a request every {CHECKPOINT_EVERY_S:.0f} s, "
            f"{sum(r['checkpoints'] for r in runs)} in all",
        ),
        Row(
            case="16",
            measure=f"{shape}: checkpoint request -> sealed, p99",
            sluice=p99,
            target=f"p99 <= {TARGET_P99_MS:.0f} ms",
            met=p99.median <= TARGET_P99_MS,
        ),
        Row(
            case="16",
            measure=f"{shape}: metastore rows written per seal (median)",
            sluice=stat("rows_per_seal", "rows"),
            baseline=stat("files_tracked", "rows"),
            baseline_name="files tracked",
            ratio=common.paired_ratio(
                [r["rows_per_seal"] for r in runs], [r["files_tracked"] for r in runs]
            ),
            note=f"most in one seal of the window {stat('rows_per_seal_max', 'rows').text()}; "
            f"the first seal, after the tree was read: {stat('first_seal_rows', 'rows').text()} "
            f"in {stat('first_seal_ms', 'ms').text()}; the tree read in "
            f"{stat('initial_read_s', 's').text()}",
        ),
        Row(
            case="16",
            measure=f"{shape}: lines sealed / lines written",
            sluice=stat("sealed_share", "x", 4),
            target="1.0000",
            met=all(r["lines_sealed"] == r["lines_written"] for r in runs),
            note=f"{stat('lines_written', 'lines').text()} written",
        ),
        Row(
            case="16",
            measure=f"{CONTAINERS * FILES_PER_CONTAINER:,} files: first scan (all new)",
            sluice=Stat([scans["first_ms"]], "ms"),
            baseline=Stat([scans["find_ms"]], "ms"),
            baseline_name="find -printf inode size",
        ),
        Row(
            case="16",
            measure=f"{CONTAINERS * FILES_PER_CONTAINER:,} files: a scan, nothing changed",
            sluice=Stat(scans["steady_ms"], "ms"),
            baseline=Stat([scans["find_ms"]], "ms"),
            baseline_name="find -printf inode size",
            ratio=Stat([statistics.median(scans["steady_ms"]) / scans["find_ms"]], "x"),
            note=f"{scans['open']} of the files open after it (max_open_files)",
        ),
    ]
    for limit in limited:
        if limit.get("skipped"):
            rows.append(
                Row(
                    case="16",
                    measure=f"at max_inotify_watches {WATCH_LIMIT}",
                    sluice=Stat([0.0], ""),
                    note=f"skipped: {limit['skipped']}",
                )
            )
            continue
        share = limit["lines_sealed"] / max(limit["lines_written"], 1)
        rows.append(
            Row(
                case="16",
                measure=f"{shape}, at max_inotify_watches {WATCH_LIMIT}: lines sealed / written",
                sluice=Stat([share], "x", 4),
                target="1.0000, the limit said once",
                met=limit["lines_sealed"] == limit["lines_written"] and limit["said"] == 1,
                note=f"watches {limit['watches']}, the limit said {limit['said']} time(s); "
                f"collector CPU {limit['collector_percent']:.1f} % core (the rest polled)",
                details=limit,
            )
        )
    rows[0].details = {"runs": runs, "scans": scans}
    return rows


# ---------------------------------------------------------------------------------- the tree


def container(logs: Path, number: int) -> list[Path]:
    """A container's folder of ``FILES_PER_CONTAINER`` logs, each with its first line."""
    folder = logs / f"c{number:05d}"
    folder.mkdir(parents=True)
    files = []
    for index in range(FILES_PER_CONTAINER):
        path = folder / f"f{index}.log"
        path.write_bytes(common.first_line(f"c{number:05d}-f{index}"))
        files.append(path)
    return files


def write_tree(logs: Path) -> int:
    """The 1,000 containers; returns the lines written."""
    for number in range(CONTAINERS):
        container(logs, number)
    return CONTAINERS * FILES_PER_CONTAINER


def write_config(work: Path, logs: Path) -> Path:
    document = {
        "name": common.PIPELINE,
        "sources": [
            {"name": "access", "paths": [str(logs / "*" / "*.log")], "format": "nginx_combined"}
        ],
        "data_dir": str(work / "data"),
        "collector": {"host": common.HOST, "close_idle_after_s": CLOSE_IDLE_S},
        "schedule": None,
    }
    path = work / "pipeline.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


# ---------------------------------------------------------------------------------- a run


def measure(work: Path, window: float) -> dict[str, Any]:
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.metastore import Metastore

    logs = work / "logs"
    written = write_tree(logs)
    config_path = write_config(work, logs)
    config = load_pipeline_config(config_path)
    metastore = Metastore.open(config.metastore_url)
    collector = common.start_collector(config_path)
    tail: subprocess.Popen[bytes] | None = None
    writer: subprocess.Popen[str] | None = None
    try:
        started = time.perf_counter()
        _wait_read(work, collector)
        initial_read_s = time.perf_counter() - started
        first = _checkpoint(metastore, collector)
        first_seal: list[tuple[int, float, int]] = []
        _note_sealed(metastore, [first], first_seal)
        tail = subprocess.Popen(
            ["tail", "-q", "-F", "-n", "0", *map(str, sorted(logs.glob("*/*.log")))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        writer = _start_writer(logs, window)
        cpu = (time.perf_counter(), common.cpu_seconds(collector.pid))
        tail_cpu = common.cpu_seconds(tail.pid)
        sealed: list[tuple[int, float, int]] = []  # (checkpoint, latency ms, rows written)
        pending: list[int] = []
        most = 0
        next_request = time.monotonic() + CHECKPOINT_EVERY_S
        next_sample = time.monotonic()
        while writer.poll() is None:
            now = time.monotonic()
            if now >= next_request:
                pending.append(metastore.request_checkpoint(common.PIPELINE).checkpoint_id)
                next_request += CHECKPOINT_EVERY_S
            if now >= next_sample:
                most = max(most, log_descriptors(collector.pid, logs))
                next_sample += 0.5
            pending = _note_sealed(metastore, pending, sealed)
            if collector.poll() is not None:
                raise RuntimeError("the collector stopped")
            time.sleep(0.02)
        wall = time.perf_counter() - cpu[0]
        used = common.cpu_seconds(collector.pid) - cpu[1]
        tail_used = common.cpu_seconds(tail.pid) - tail_cpu
        tail_descriptors = log_descriptors(tail.pid, logs)
        tail_watches = inotify_watches(tail.pid)
        watches = inotify_watches(collector.pid)
        end_descriptors = log_descriptors(collector.pid, logs)
        rss = common.status_kib(collector.pid, "VmRSS") / 1024
        wrote = json.loads(writer.communicate(timeout=60)[0].strip().splitlines()[-1])
        written += wrote["lines"]
        deadline = time.monotonic() + 120
        while pending := _note_sealed(metastore, pending, sealed):
            if time.monotonic() > deadline:
                raise TimeoutError(f"checkpoints {pending} not sealed within 120 s")
            time.sleep(0.05)
        _wait_read(work, collector)
        last = _checkpoint(metastore, collector)
        lines = _lines_sealed(metastore, range(first, last + 1))
        tracked = _files_tracked(metastore)
    finally:
        errors = common.stop_collector(collector, tail, writer)
        metastore.close()
    common.check_collector(collector, errors)
    latencies = [latency for _, latency, _ in sealed]
    rows = [count for _, _, count in sealed]
    return {
        "initial_read_s": initial_read_s,
        "first_seal_ms": first_seal[0][1],
        "first_seal_rows": first_seal[0][2],
        "max_open_files": config.collector.max_open_files,
        "most_descriptors": most,
        "end_descriptors": end_descriptors,
        "tail_descriptors": tail_descriptors,
        "watches": watches,
        "tail_watches": tail_watches,
        "collector_percent": 100 * used / wall,
        "tail_percent": 100 * tail_used / wall,
        "rss_mb": rss,
        "checkpoints": len(sealed),
        "checkpoint_p50_ms": statistics.median(latencies),
        "checkpoint_p99_ms": percentile(latencies, 99),
        "latencies_ms": latencies,
        "rows_per_seal": statistics.median(rows),
        "rows_per_seal_max": max(rows),
        "rows": rows,
        "files_tracked": tracked,
        "lines_written": written,
        "lines_sealed": lines,
        "sealed_share": lines / written,
        "writer": wrote,
    }


def measure_at_limit(work: Path) -> dict[str, Any]:
    """The same, with the collector in a user namespace whose watches are limited."""
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.metastore import Metastore

    unshare = shutil.which("unshare")
    probe = subprocess.run(
        [unshare or "unshare", "--user", "--map-root-user", "sh", "-c", _LIMIT_SCRIPT % 1, "x"],
        capture_output=True,
    )
    if unshare is None or probe.returncode != 0:
        return {"skipped": "no user namespace (unshare --user)"}
    logs = work / "logs"
    written = write_tree(logs)
    config_path = write_config(work, logs)
    config = load_pipeline_config(config_path)
    metastore = Metastore.open(config.metastore_url)
    collector = subprocess.Popen(
        [
            unshare,
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            _LIMIT_SCRIPT % WATCH_LIMIT,
            "sh",
            common.PYTHON,
            "-m",
            "pipeline_core",
            "collect",
            str(config_path),
        ],
        cwd=common.ROOT,
        env=common.child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    writer: subprocess.Popen[str] | None = None
    try:
        _wait_read(work, collector)
        first = _checkpoint(metastore, collector)
        writer = _start_writer(logs, LIMIT_WINDOW_S)
        cpu = (time.perf_counter(), common.cpu_seconds(collector.pid))
        wrote = json.loads(writer.communicate(timeout=LIMIT_WINDOW_S + 60)[0].splitlines()[-1])
        wall = time.perf_counter() - cpu[0]
        used = common.cpu_seconds(collector.pid) - cpu[1]
        written += wrote["lines"]
        watches = inotify_watches(collector.pid)
        _wait_read(work, collector)
        last = _checkpoint(metastore, collector)
        lines = _lines_sealed(metastore, range(first, last + 1))
    finally:
        errors = common.stop_collector(collector, writer)
        metastore.close()
    common.check_collector(collector, errors)
    text = errors.decode(errors="replace")
    return {
        "lines_written": written,
        "lines_sealed": lines,
        "watches": watches,
        "said": text.count("the inotify watch limit"),
        "collector_percent": 100 * used / wall,
    }


_LIMIT_SCRIPT = 'echo %d > /proc/sys/user/max_inotify_watches && exec "$@"'
"""Run in the namespace: lower its watch limit, then become the command."""


def scan_cost(work: Path) -> dict[str, Any]:
    """``FileWatcher.scan`` of the tree in this process: the first scan, then steady ones."""
    from pipeline_core.config import SourceConfig, SourceFormat
    from pipeline_core.source import FileWatcher

    logs = work / "logs"
    write_tree(logs)
    started = time.perf_counter()
    subprocess.run(
        ["find", str(logs), "-name", "*.log", "-printf", "%i %s\n"],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    find_ms = 1000 * (time.perf_counter() - started)
    source = SourceConfig(
        name="access", paths=[str(logs / "*" / "*.log")], format=SourceFormat.NGINX_COMBINED
    )
    watcher = FileWatcher([source], common.HOST, 1024, max_open_files=512)
    try:
        started = time.perf_counter()
        watcher.scan()
        first_ms = 1000 * (time.perf_counter() - started)
        steady = []
        for _ in range(5):
            started = time.perf_counter()
            watcher.scan()
            steady.append(1000 * (time.perf_counter() - started))
        open_files = watcher.open_files
    finally:
        watcher.close()
    return {"find_ms": find_ms, "first_ms": first_ms, "steady_ms": steady, "open": open_files}


# ---------------------------------------------------------------------------------- helpers


def _wait_read(work: Path, collector: subprocess.Popen[bytes]) -> None:
    """Until the collector's metrics say nothing is left unread (they are written every 5 s)."""
    from pipeline_core.collector import read_metrics

    def read() -> bool:
        if collector.poll() is not None:
            raise RuntimeError(f"the collector stopped: {collector.communicate()[1][-2000:]!r}")
        metrics = read_metrics(work / "data", common.PIPELINE, max_age=6)
        return metrics is not None and metrics.get("unread_bytes") == 0

    time.sleep(6)  # the metrics of a moment ago
    common.wait_for(read, READ_TIMEOUT_S, "the collector to read every file")


def _checkpoint(metastore: Any, collector: subprocess.Popen[bytes]) -> int:
    from pipeline_core.metastore import CheckpointState

    checkpoint_id: int = metastore.request_checkpoint(common.PIPELINE).checkpoint_id

    def sealed() -> bool:
        if collector.poll() is not None:
            raise RuntimeError("the collector stopped")
        return metastore.checkpoint(checkpoint_id).state is CheckpointState.SEALED

    common.wait_for(sealed, 120, f"checkpoint {checkpoint_id} to be sealed")
    return checkpoint_id


def _note_sealed(
    metastore: Any, pending: list[int], sealed: list[tuple[int, float, int]]
) -> list[int]:
    """Note the checkpoints of ``pending`` sealed by now (latency, rows their seal wrote);
    returns those still pending."""
    waiting = []
    for checkpoint_id in pending:
        record = metastore.checkpoint(checkpoint_id)
        if record.sealed_at is None:
            waiting.append(checkpoint_id)
            continue
        latency = (record.sealed_at - record.requested_at).total_seconds() * 1000
        sealed.append((checkpoint_id, latency, _rows_at(metastore, record.sealed_at)))
    return waiting


def _rows_at(metastore: Any, sealed_at: datetime) -> int:
    """``sluice_files`` rows last written at ``sealed_at`` (the seal's transaction)."""
    from pipeline_core.metastore import _schema

    c = _schema.files.c
    when = sealed_at if sealed_at.tzinfo else sealed_at.replace(tzinfo=timezone.utc)
    with metastore.engine.connect() as connection:
        stamps = connection.execute(
            sa.select(c.updated_at, sa.func.count())
            .where(c.pipeline == common.PIPELINE)
            .group_by(c.updated_at)
        ).all()
    for stamp, count in stamps:
        stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
        if abs((stamp - when).total_seconds()) < 0.001:
            return int(count)
    return 0  # written over by a later seal before this look (all its rows moved again)


def _lines_sealed(metastore: Any, checkpoints: range) -> int:
    return sum(b.line_count for cid in checkpoints for b in metastore.batches(cid))


def _files_tracked(metastore: Any) -> int:
    return len(metastore.files(common.PIPELINE, common.HOST))


def _start_writer(logs: Path, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            common.PYTHON,
            "-m",
            "bench.cases.many_files",
            str(logs),
            "--seconds",
            str(seconds),
        ],
        cwd=common.ROOT,
        env=common.child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )


# ---------------------------------------------------------------------------------- the writer


def write(logs: Path, seconds: float, seed: int = 33) -> dict[str, int]:
    """For ``seconds``: a line every ``TICK_S`` to each of ``ACTIVE_FILES`` files (a new set
    every ``ACTIVE_SET_S``), and every ``CHURN_S`` a container not written in the last two
    sets deleted and a new one made. Returns the lines written (new containers' included)."""
    rng = random.Random(seed)
    pool = common.line_blocks().blocks[0].splitlines(keepends=True)
    containers = sorted(int(p.name[1:]) for p in logs.iterdir() if p.name.startswith("c"))
    next_number = max(containers) + 1
    written = added = removed = 0
    recent: list[set[int]] = []
    handles: dict[Path, int] = {}
    started = time.monotonic()
    next_set = next_churn = started
    try:
        while (now := time.monotonic()) - started < seconds:
            if now >= next_set:
                for fd in handles.values():
                    os.close(fd)
                chosen = rng.sample(
                    [(c, i) for c in containers for i in range(FILES_PER_CONTAINER)], ACTIVE_FILES
                )
                handles = {
                    logs / f"c{c:05d}" / f"f{i}.log": os.open(
                        logs / f"c{c:05d}" / f"f{i}.log", os.O_WRONLY | os.O_APPEND
                    )
                    for c, i in chosen
                }
                recent = [*recent[-1:], {c for c, _ in chosen}]
                next_set += ACTIVE_SET_S
            if now >= next_churn:
                busy = set().union(*recent)
                gone = next(c for c in containers if c not in busy)
                shutil.rmtree(logs / f"c{gone:05d}")
                containers.remove(gone)
                container(logs, next_number)
                containers.append(next_number)
                next_number += 1
                written += FILES_PER_CONTAINER
                added += 1
                removed += 1
                next_churn += CHURN_S
            for fd in handles.values():
                os.write(fd, pool[written % len(pool)])
                written += 1
            time.sleep(max(0.0, TICK_S - (time.monotonic() - now)))
    finally:
        for fd in handles.values():
            os.close(fd)
    return {"lines": written, "containers_added": added, "containers_removed": removed}


def main() -> None:
    """Child: the writer; prints what it wrote as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("logs", type=Path)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args()
    print(json.dumps(write(args.logs, args.seconds)))


if __name__ == "__main__":
    main()
