"""Case 7: the acker's speed in memory, and the metastore transactions a checkpoint costs.

Acker: ``pipeline_core.acker.Acker`` tracks ``acker_trees`` trees the way the collector does
with two sink groups: ``init(tree, root)``, the send stage's ``ack(tree, root ^ c1 ^ c2)``,
then one ``ack(tree, ci)`` per group; four tree operations per chunk, timed in one thread. The
baseline is the least any per-tree bookkeeping costs in Python: a dict insert, two updates and
a delete per tree.

Metastore: a collection of one checkpoint (``Collector.run_once``, SQLite) on inputs of
``events_small`` bytes and ten times as many, counting every transaction the collector commits
(``event.listen(engine, "commit")`` on ``Metastore.engine``) and which tables each one wrote.
The count must not grow with the number of events (lines); the ratio is large / small input.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from bench import common
from bench.common import Context, Row, Stat, paired_ratio
from pipeline_core.acker import Acker, TreeOutcome, TreeSource, new_id

GROUPS = 2


class _Listener:
    def __init__(self) -> None:
        self.acked = 0

    def on_tree_acked(self, tree_id: int, source: TreeSource) -> None:
        self.acked += 1

    def on_tree_failed(self, tree_id: int, source: TreeSource, outcome: TreeOutcome) -> None:
        raise AssertionError(f"tree {tree_id:#x} {outcome.value}")


def run(ctx: Context) -> list[Row]:
    return [acker_row(ctx), metastore_row(ctx)]


# ---------------------------------------------------------------------------------- acker


def acker_row(ctx: Context) -> Row:
    trees = ctx.sizes.acker_trees
    plan = [(new_id(), new_id(), [new_id() for _ in range(GROUPS)]) for _ in range(trees)]
    source = TreeSource("access", "0123456789abcdef", 0, 1 << 20, 5000)
    ops = trees * (2 + GROUPS)
    acker_rates, dict_rates = [], []
    for _ in range(max(3, ctx.sizes.runs)):
        acker_rates.append(ops / time_acker(plan, source))
        dict_rates.append(ops / time_dict(plan, source))
    acker = Stat([r / 1e6 for r in acker_rates], "M ops/s")
    return Row(
        case="7",
        measure=f"acker tree ops in memory ({trees} trees x {2 + GROUPS} ops)",
        sluice=acker,
        baseline=Stat([r / 1e6 for r in dict_rates], "M ops/s"),
        baseline_name="plain dict",
        ratio=paired_ratio(acker_rates, dict_rates),
        note=f"{(2 + GROUPS) / acker.median:.2f} us of acker work per chunk",
    )


def time_acker(plan: list[tuple[int, int, list[int]]], source: TreeSource) -> float:
    listener = _Listener()
    acker = Acker(listener)
    started = time.perf_counter()
    for tree, root, edges in plan:
        acker.init(tree, root, source)
        anchored = root
        for edge in edges:
            anchored ^= edge
        acker.ack(tree, anchored)
        for edge in edges:
            acker.ack(tree, edge)
    seconds = time.perf_counter() - started
    assert listener.acked == len(plan) and acker.pending == 0
    return seconds


def time_dict(plan: list[tuple[int, int, list[int]]], source: TreeSource) -> float:
    trees: dict[int, list[Any]] = {}
    started = time.perf_counter()
    for tree, root, edges in plan:
        trees[tree] = [root, source]
        anchored = root
        for edge in edges:
            anchored ^= edge
        trees[tree][0] ^= anchored
        for edge in edges:
            entry = trees[tree]
            entry[0] ^= edge
            if entry[0] == 0:
                del trees[tree]
    seconds = time.perf_counter() - started
    assert not trees
    return seconds


# ---------------------------------------------------------------------------------- metastore


class TransactionCounter:
    """Counts an engine's commits and names each by the tables it wrote."""

    def __init__(self) -> None:
        self.commits = 0
        self.kinds: Counter[str] = Counter()
        self._written: set[str] = set()

    def attach(self, engine: Engine) -> None:
        event.listen(engine, "commit", self._on_commit)
        event.listen(engine, "before_cursor_execute", self._on_execute)

    def _on_execute(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        words = statement.split()
        verb = words[0].upper() if words else ""
        if verb in ("INSERT", "UPDATE", "DELETE"):
            index = 2 if verb in ("INSERT", "DELETE") else 1
            table = words[index].strip('"') if len(words) > index else "?"
            self._written.add(table.removeprefix("sluice_"))

    def _on_commit(self, conn: Any) -> None:
        self.commits += 1
        self.kinds["+".join(sorted(self._written)) or "read only"] += 1
        self._written = set()


def metastore_row(ctx: Context) -> Row:
    big = common.big_log(ctx.sizes.big_file)
    small_size = ctx.sizes.events_small
    inputs = {
        "1x": small_input(ctx, big, small_size),
        "10x": small_input(ctx, big, small_size * 10),
    }
    counts: dict[str, list[float]] = {"1x": [], "10x": []}
    lines: dict[str, int] = {}
    kinds: dict[str, dict[str, int]] = {}
    for _ in range(ctx.sizes.runs):
        for label, path in inputs.items():
            counter = TransactionCounter()
            work = ctx.work("metastore")
            collected = common.collect_once(common.pipeline_config(work, path), counter.attach)
            counts[label].append(counter.commits)
            lines[label] = collected.lines
            kinds[label] = dict(counter.kinds)
    ctx.work("metastore")
    small, large = Stat(counts["1x"], "txn", 0), Stat(counts["10x"], "txn", 0)
    ratio = paired_ratio(large.values, small.values)
    return Row(
        case="7",
        measure=f"metastore txns per checkpoint, {lines['10x']} vs {lines['1x']} lines",
        sluice=large,
        baseline=small,
        baseline_name=f"{lines['1x'] / 1e3:.0f}k lines",
        ratio=ratio,
        target="not growing with events",
        met=ratio.median <= 1.0,
        note="by tables written, 10x input: "
        + "; ".join(f"{k} {v}" for k, v in sorted(kinds["10x"].items()))
        + " | 1x input: "
        + "; ".join(f"{k} {v}" for k, v in sorted(kinds["1x"].items())),
        details={"counts": counts, "lines": lines, "kinds": kinds},
    )


def small_input(ctx: Context, big: Path, size: int) -> Path:
    """The first ``size`` bytes (whole lines) of the large file, as a file of its own."""
    if size >= common.size_of(big):
        return big
    folder = ctx.scratch / f"events-{size}"
    path = folder / "access.log"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with open(big, "rb") as source:
            data = source.read(size)
        path.write_bytes(common.first_line(f"events-{size}") + data[: data.rfind(b"\n") + 1])
    return path
