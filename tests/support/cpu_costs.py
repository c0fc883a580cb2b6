"""What each test costs the machine: with ``SLUICE_TEST_CPU_COSTS=FILE`` set, each test's phases
(set-up, call, tear-down) append a line to ``FILE``: the node id, the phase, its wall seconds
and the CPU seconds every process of the machine spent meanwhile (``/proc/stat``).

On a machine that runs one lane alone, the CPU seconds are the test's own cost, the JVMs and
servers it drives included (which a process's own ``rusage`` does not see). ``make test`` runs
lanes side by side on two cores: what it takes is bounded by the CPU seconds, not by the wall
seconds of tests that mostly wait. Sum them by module with::

    python -m tests.support.cpu_costs FILE
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

ENV = "SLUICE_TEST_CPU_COSTS"


def busy_cpu_seconds() -> float:
    """CPU seconds the machine spent not idle since boot (every core)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(value) for value in fields]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _measured(item: pytest.Item, phase: str) -> Generator[None, None, None]:
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    wall, cpu = time.monotonic(), busy_cpu_seconds()
    yield
    costs = f"{time.monotonic() - wall:.3f}\t{busy_cpu_seconds() - cpu:.3f}"
    with open(path, "a", encoding="utf-8") as file:
        file.write(f"{item.nodeid}\t{phase}\t{costs}\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield from _measured(item, "setup")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _measured(item, "call")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    yield from _measured(item, "teardown")


def main(path: str) -> None:
    """Print the costs in ``path`` by module, the costliest first, then the 30 costliest tests."""
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    by_test: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for line in Path(path).read_text().splitlines():
        nodeid, _phase, wall, cpu = line.split("\t")
        for key, table in ((nodeid.split("::")[0], by_module), (nodeid, by_test)):
            table[key][0] += float(wall)
            table[key][1] += float(cpu)
    total = [sum(v[0] for v in by_test.values()), sum(v[1] for v in by_test.values())]
    print(f"all: {total[0]:.0f} s wall, {total[1]:.0f} CPU s")
    for title, table, count in (("modules", by_module, 40), ("tests", by_test, 30)):
        print(f"-- {title} by CPU seconds (wall seconds)")
        for name, (spent, used) in sorted(table.items(), key=lambda kv: -kv[1][1])[:count]:
            print(f"{used:8.1f} {spent:8.1f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1])
