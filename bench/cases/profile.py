"""Where a collection's time goes: ``py-spy record -f raw`` of a child process, summed up.

py-spy samples every active thread ``RATE`` times a second (idle threads are not sampled).
Each raw line is one stack, root first, ``;``-separated, with its sample count. Stacks are
assigned to the collector's threads by the functions they run (the mailbox loop, the stage
threads, the sink groups' event processors, the control loop); the summary gives each
thread's busy share of the collection's wall time, the functions where samples were taken
(self time) and the collector functions they passed through (inclusive time).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench import common

RATE = 200
"""Samples per second."""
TOP = 12
START_UP = "process start-up and exit (imports, metastore open)"
_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def find_py_spy() -> str | None:
    beside = Path(common.PYTHON).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def record(spy: str, command: list[str], output: Path, *, rate: int) -> str:
    """Run ``command`` under py-spy; returns its standard output."""
    options = ["-f", "raw", "-o", str(output), "-r", str(rate), "--nonblocking"]
    completed = subprocess.run(
        [spy, "record", *options, "--", *command],
        cwd=common.ROOT,
        capture_output=True,
        text=True,
        env=common.child_env(),
        timeout=3600,
    )
    if completed.returncode != 0 or not output.is_file():
        raise RuntimeError(f"py-spy failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return completed.stdout


def _frame(text: str) -> tuple[str, str]:
    """``(function, short file)`` of one raw frame ``name (file:line)``."""
    match = _FRAME.match(text.strip())
    if match is None:
        return text.strip(), ""
    path = match["file"]
    for marker in ("site-packages/", str(common.ROOT) + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return match["name"], path


def role(functions: list[str]) -> str:
    """Which thread of the collector a stack belongs to."""
    joined = ";".join(functions)
    if "run_mailbox_loop" in joined:
        return "mailbox thread (reader, mails, seal records)"
    if "_run_consumer" in joined:
        return "sink group thread (handoff: writes, fsync)"
    if "StageThread._loop" in joined:
        if "RingPublisher" in joined:
            return "send stage thread"
        if "ProcessStage" in joined:
            return "process stage thread"
        return "stage threads (between items)"
    if "_control_loop" in joined:
        return "control thread (leases, sweeps)"
    if "Collector.run_once" in joined:
        return "main thread around the loop (start, stop)"
    return START_UP


def summarize(raw: Path, seconds: float, *, rate: int) -> dict[str, Any]:
    """Sum a raw py-spy file up (see the module doc); ``seconds``: how long the collection
    took, the base of the threads' busy shares (start-up and exit are apart)."""
    roles: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(part) for part in stack.split(";")]
        functions = [name for name, _ in frames]
        total += count
        thread = role(functions)
        roles[thread] += count
        if thread == START_UP:
            continue
        name, path = frames[-1]
        self_time[f"{name} ({path})"] += count
        for key in {f"{n} ({p})" for n, p in frames if p.startswith("pipeline_core/")}:
            inclusive[key] += count
    start_up = roles.pop(START_UP, 0)
    busy = {name: count / (rate * seconds) for name, count in roles.most_common()}
    collecting = total - start_up
    return {
        "rate": rate,
        "seconds": seconds,
        "start_up_samples": start_up,
        "samples": total,
        "busy_share_of_wall": busy,
        "self": [(k, v / max(1, collecting)) for k, v in self_time.most_common(TOP)],
        "inclusive": [(k, v / max(1, collecting)) for k, v in inclusive.most_common(TOP * 2)],
    }


def report(summary: dict[str, Any]) -> str:
    lines = [
        f"py-spy, {summary['rate']} Hz, {summary['samples']} samples; the collection took "
        f"{summary['seconds']:.1f} s ({summary['start_up_samples']} samples of process start-up "
        "and exit left out)",
        "",
        "busy share of the collection's wall time, per thread (1.0 = one core):",
    ]
    lines += [f"  {share:6.1%}  {name}" for name, share in summary["busy_share_of_wall"].items()]
    lines += ["", "self time (share of the samples taken while collecting):"]
    lines += [f"  {share:6.1%}  {name}" for name, share in summary["self"]]
    lines += ["", "inclusive time in pipeline_core functions (same base):"]
    lines += [f"  {share:6.1%}  {name}" for name, share in summary["inclusive"]]
    return "\n".join(lines)


def headline(summary: dict[str, Any]) -> str:
    """One line for the table's notes: the busiest threads and the top self-time function."""
    busy = list(summary["busy_share_of_wall"].items())[:3]
    threads = ", ".join(f"{name.split(' (')[0]} {share:.0%}" for name, share in busy)
    top = summary["self"][0] if summary["self"] else ("-", 0.0)
    return (
        f"profile (bench/results/profile-collector.txt): threads busy {threads}; "
        f"top self time {top[0]} {top[1]:.0%}"
    )
