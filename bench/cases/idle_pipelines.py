"""Case 15: what a collector costs when nothing is written: 100 pipelines of 10 files each.

A folder of 100 pipeline configs (``p000.yaml`` ...), each following the 10 files of its own log
folder (``logs/pNNN/*.log``, about 2 KB each, written before the collector starts), all with one
data directory and one SQLite metastore, as configs written side by side in a folder share them
by default. One ``sluice collect FOLDER`` process (continuous mode, every other key at its
default: ``file_events: inotify``) serves them. Once every pipeline has read its files (each
pipeline's metrics file says nothing is left unread) and ``SETTLE_SECONDS`` more have passed
(past the first read progress sample after the backlog, due 30 s after the first: the samples
and acker snapshots that close a backlog are not rest; the CPU of the settling time is in the
details, ``settle_percent``), the collector's CPU time (``/proc/<pid>/stat`` utime + stime) is
read at the start and the end of a window of ``IDLE_SECONDS`` (``--quick``:
``QUICK_IDLE_SECONDS``) during which nothing is written: the figure is that CPU time as a share
of one core. Its resident memory (``VmRSS``) is read at the end of the window. The baseline is a
``tail -F`` of the same 1,000 files over the same window (the floor of following them: the
kernel's inotify, no wake-ups). Targets: at most 0.5 % of a core, and at most 150 MB resident.

The details record the collector's open descriptors on the log files and its inotify watches
(``/proc/<pid>/fdinfo``) at the end of the window, and, where py-spy is installed, its CPU
over the window by thread (``/proc/<pid>/task``, threads named by a ``py-spy dump``): what
each part of the collector costs at rest.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from bench import common
from bench.cases.profile import find_py_spy
from bench.common import Context, Row, Stat

TARGET_PERCENT = 0.5
TARGET_MB = 150.0
PIPELINES = 100
FILES_PER_PIPELINE = 10
FILE_BYTES = 2048
SETTLE_SECONDS = 35.0
IDLE_SECONDS = 60.0
QUICK_IDLE_SECONDS = 20.0
READ_TIMEOUT_S = 180.0


def run(ctx: Context) -> list[Row]:
    seconds = QUICK_IDLE_SECONDS if ctx.quick else IDLE_SECONDS
    cpu: list[float] = []
    floor: list[float] = []
    rss: list[float] = []
    details: list[dict[str, Any]] = []
    for _ in range(ctx.sizes.runs):
        measured = idle_once(ctx.work("idle"), PIPELINES, FILES_PER_PIPELINE, seconds)
        cpu.append(measured["collector_percent"])
        floor.append(measured["tail_percent"])
        rss.append(measured["rss_mb"])
        details.append(measured)
    ctx.work("idle")
    share = Stat(cpu, "% core", places=2)
    resident = Stat(rss, "MB")
    shape = f"{PIPELINES} pipelines x {FILES_PER_PIPELINE} files"
    return [
        Row(
            case="15",
            measure=f"idle: {shape}, nothing written for {seconds:.0f} s: collector CPU",
            sluice=share,
            baseline=Stat(floor, "% core", places=2),
            baseline_name="tail -F",
            target=f"<= {TARGET_PERCENT}% core",
            met=share.median <= TARGET_PERCENT,
            note="the settling 35 s after the backlog "
            f"{Stat([d['settle_percent'] for d in details], '% core', places=2).text().strip()}; "
            "descriptors on the logs "
            f"{Stat([d['log_descriptors'] for d in details], '').text().strip()}, inotify "
            f"watches {Stat([d['inotify_watches'] for d in details], '').text().strip()}; "
            "by thread (% core, first run): "
            + ", ".join(f"{k} {v}" for k, v in details[0]["threads_percent"].items()),
            details={"runs": details},
        ),
        Row(
            case="15",
            measure=f"idle: {shape}: collector RSS (VmRSS) at the end",
            sluice=resident,
            target=f"<= {TARGET_MB:.0f} MB",
            met=resident.median <= TARGET_MB,
        ),
    ]


def write_pipelines(work: Path, pipelines: int, files: int) -> Path:
    """The logs and one config per pipeline; returns the folder of configs."""
    configs = work / "pipelines"
    configs.mkdir()
    data = work / "data"
    for number in range(pipelines):
        name = f"p{number:03d}"
        logs = work / "logs" / name
        for index in range(files):
            common.write_access_log(logs / f"f{index}.log", FILE_BYTES, start_block=number)
        document = {
            "name": name,
            "sources": [
                {"name": "access", "paths": [str(logs / "*.log")], "format": "nginx_combined"}
            ],
            "data_dir": str(data),
            "metastore": {"url": f"sqlite:///{data / 'sluice.db'}"},
            "collector": {"host": common.HOST},
            "schedule": None,
        }
        (configs / f"{name}.yaml").write_text(yaml.safe_dump(document))
    return configs


def idle_once(work: Path, pipelines: int, files: int, seconds: float) -> dict[str, Any]:
    configs = write_pipelines(work, pipelines, files)
    logs = sorted((work / "logs").glob("*/*.log"))
    collector = common.start_collector(configs)
    tail: subprocess.Popen[bytes] | None = None
    try:
        pipeline_names = [f"p{number:03d}" for number in range(pipelines)]
        common.wait_for(
            lambda: _all_read(work / "data", pipeline_names, collector),
            READ_TIMEOUT_S,
            "every pipeline to read its files",
        )
        tail = subprocess.Popen(
            ["tail", "-q", "-F", "-n", "0", *map(str, logs)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        settle_started = time.perf_counter()
        settle_used = common.cpu_seconds(collector.pid)
        time.sleep(SETTLE_SECONDS)
        settle_percent = (
            100
            * (common.cpu_seconds(collector.pid) - settle_used)
            / (time.perf_counter() - settle_started)
        )
        names = thread_names(collector.pid)
        started = time.perf_counter()
        used = common.cpu_seconds(collector.pid)
        tail_used = common.cpu_seconds(tail.pid)
        by_thread = thread_ticks(collector.pid)
        time.sleep(seconds)
        wall = time.perf_counter() - started
        used = common.cpu_seconds(collector.pid) - used
        tail_used = common.cpu_seconds(tail.pid) - tail_used
        by_thread = thread_ticks(collector.pid) - by_thread
        rss = common.status_kib(collector.pid, "VmRSS") / 1024
        descriptors = log_descriptors(collector.pid, work / "logs")
        watches = inotify_watches(collector.pid)
    finally:
        errors = common.stop_collector(collector, tail)
    common.check_collector(collector, errors)
    threads: Counter[str] = Counter()
    for tid, ticks in by_thread.items():
        threads[re.sub(r"p\d{3}", "pNNN", names.get(tid, "other"))] += ticks
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "collector_percent": 100 * used / wall,
        "tail_percent": 100 * tail_used / wall,
        "rss_mb": rss,
        "settle_percent": settle_percent,
        "log_descriptors": descriptors,
        "inotify_watches": watches,
        "threads_percent": {
            name: round(100 * ticks / tick / wall, 2)
            for name, ticks in threads.most_common()
            if ticks
        },
    }


def thread_ticks(pid: int) -> Counter[str]:
    """CPU ticks (utime + stime) of each of the process's threads, by thread id."""
    ticks: Counter[str] = Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


def thread_names(pid: int) -> dict[str, str]:
    """The Python names of the process's threads by thread id (``py-spy dump``; none without
    py-spy)."""
    py_spy = find_py_spy()
    if py_spy is None:
        return {}
    dump = subprocess.run(
        [py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60
    ).stdout
    return dict(re.findall(r'^Thread (\d+) \([^)]*\): "([^"]+)"', dump, re.MULTILINE))


def _all_read(data: Path, names: list[str], collector: subprocess.Popen[bytes]) -> bool:
    from pipeline_core.collector import read_metrics

    if collector.poll() is not None:
        raise RuntimeError(f"the collector stopped: {collector.communicate()[1][-2000:]!r}")
    for name in names:
        metrics = read_metrics(data, name)
        if metrics is None or metrics.get("unread_bytes") != 0 or not metrics.get("files"):
            return False
    return True


def log_descriptors(pid: int, under: Path) -> int:
    """The process's descriptors open on files under ``under``."""
    prefix = str(under.resolve()) + os.sep
    count = 0
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(entry).startswith(prefix):
                count += 1
        except OSError:
            continue
    return count


def inotify_watches(pid: int) -> int:
    """The inotify watches the process holds (``inotify wd:`` lines of its descriptors'
    ``fdinfo``)."""
    count = 0
    for entry in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            text = entry.read_text()
        except OSError:
            continue
        count += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return count
