"""The spool budget: bytes on local disk against the bound that pauses reading."""

from __future__ import annotations

import threading

from pipeline_core.sinks import SpoolBudget


def test_should_be_full_from_the_bound_until_bytes_are_freed() -> None:
    budget = SpoolBudget(limit=100)
    budget.add(99)
    assert not budget.full
    budget.add(1)
    assert budget.full and budget.used == 100 and budget.times_full == 1
    budget.free(1)
    assert not budget.full
    budget.add(50)
    assert budget.times_full == 2  # each time it reaches the bound


def test_should_never_count_below_zero() -> None:
    budget = SpoolBudget(limit=10)
    budget.free(5)
    assert budget.used == 0


def test_should_add_up_writes_and_frees_from_several_threads() -> None:
    budget = SpoolBudget(limit=10**12)

    def churn() -> None:
        for _ in range(10_000):
            budget.add(3)
            budget.free(1)

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.used == 4 * 10_000 * 2
