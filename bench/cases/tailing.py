"""Case 4: the steady cost of tailing: CPU of the collector while a file grows at 10 MB/s, and
at 1 MB/s.

A writer process appends whole nginx-like lines to one file at ``tail_rate`` bytes per second
(every 20 ms, what is due), for ``tail_seconds`` (60 by default; ``--tail-seconds``), then
the same at a tenth of that rate. A
``sluice collect`` process (continuous mode, as a worker runs it) tails the file into its
handoff batches. After 3 s of warm-up, the collector's CPU time (``/proc/<pid>/stat`` utime +
stime) is read at the start and the end of the window: the figure is that CPU time as a share
of one core over the window. A ``tail -F`` of the same file over the same window is the floor
it is compared with (reading the bytes and nothing else). The lag (bytes written, not yet read)
is read from the collector's metrics file (rewritten every 5 s) at the end of the window.
Target: at most 2 % of a core at 10 MB/s, 1 % at 1 MB/s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.common import Context, Row, Stat

TARGETS = ((1, 2.0), (10, 1.0))
"""(divisor of ``tail_rate``, most % of a core): 10 MB/s and 1 MB/s."""
WARM_UP_SECONDS = 3.0
TICK_SECONDS = 0.02


def run(ctx: Context) -> list[Row]:
    rows = []
    for divisor, target in TARGETS:
        rate = ctx.sizes.tail_rate // divisor
        sluice: list[float] = []
        floor: list[float] = []
        lags: list[int] = []
        rates: list[float] = []
        for _ in range(ctx.sizes.runs):
            measured = tail_once(ctx.work("tailing"), rate, ctx.sizes.tail_seconds)
            sluice.append(measured["collector_percent"])
            floor.append(measured["tail_percent"])
            lags.append(measured["lag_bytes"])
            rates.append(measured["written_mb_per_s"])
        ctx.work("tailing")
        cpu = Stat(sluice, "% core")
        rows.append(
            Row(
                case="4",
                measure=f"tailing {rate / 1e6:.0f} MB/s for "
                f"{ctx.sizes.tail_seconds:.0f} s: collector CPU",
                sluice=cpu,
                baseline=Stat(floor, "% core"),
                baseline_name="tail -F",
                target=f"<= {target:.0f}% core",
                met=cpu.median <= target,
                note=f"writer achieved {Stat(rates, 'MB/s').text()}; collector lag at the end "
                f"{Stat([x / 1e6 for x in lags], 'MB').text()}",
                details={"lag_bytes": lags, "written_mb_per_s": rates},
            )
        )
    return rows


def tail_once(work: Path, rate: int, seconds: float) -> dict[str, Any]:
    log = work / "logs" / "access.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(common.first_line("tailing"))
    config = common.pipeline_config(work, log)
    collector = common.start_collector(config)
    writer: subprocess.Popen[bytes] | None = None
    tail: subprocess.Popen[bytes] | None = None
    try:
        metrics = work / "data" / "collector" / f"{common.PIPELINE}.json"
        common.wait_for(metrics.exists, 60, "the collector's first metrics")
        writer = subprocess.Popen(
            [
                common.PYTHON,
                "-m",
                "bench.cases.tailing",
                str(log),
                "--rate",
                str(rate),
                "--seconds",
                str(seconds + WARM_UP_SECONDS + 1),
            ],
            cwd=common.ROOT,
            env=common.child_env(),
            stdout=subprocess.PIPE,
        )
        tail = subprocess.Popen(
            ["tail", "-F", "-n", "0", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(WARM_UP_SECONDS)
        start = (time.perf_counter(), common.cpu_seconds(collector.pid))
        tail_start = common.cpu_seconds(tail.pid)
        time.sleep(seconds)
        wall = time.perf_counter() - start[0]
        used = common.cpu_seconds(collector.pid) - start[1]
        tail_used = common.cpu_seconds(tail.pid) - tail_start
        lag = json.loads(metrics.read_text())["unread_bytes"]  # written in the last 5 s
        written: dict[str, Any] = json.loads(writer.communicate(timeout=60)[0] or b"{}")
    finally:
        errors = common.stop_collector(collector, tail, writer)
    common.check_collector(collector, errors)
    return {
        "collector_percent": 100 * used / wall,
        "tail_percent": 100 * tail_used / wall,
        "lag_bytes": int(lag),
        "written_mb_per_s": written.get("bytes", 0) / written.get("seconds", 1) / 1e6,
    }


def append(log: Path, rate: int, seconds: float) -> dict[str, float]:
    """Append whole lines at ``rate`` bytes per second for ``seconds``."""
    pool = b"".join(common.line_blocks().blocks[:4])
    position = 0
    written = 0
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(rate * elapsed) - written
            if due > 0:
                end = pool.rfind(b"\n", position, position + due) + 1
                if end <= position:  # wrap around the pool
                    position, end = 0, pool.rfind(b"\n", 0, due) + 1
                written += os.write(fd, pool[position:end])
                position = end
            time.sleep(TICK_SECONDS)
    finally:
        os.close(fd)
    return {"bytes": written, "seconds": time.monotonic() - started}


def main() -> None:
    """Child: the writer; prints what it wrote as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("log", type=Path)
    parser.add_argument("--rate", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args()
    print(json.dumps(append(args.log, args.rate, args.seconds)))


if __name__ == "__main__":
    main()
