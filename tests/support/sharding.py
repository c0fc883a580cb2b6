"""A share of the suite: with ``SLUICE_TEST_SHARD=i/n`` set, a pytest run keeps every n-th test
(by node id), starting at the i-th (0-based), of those its other options selected: each share
is a sample of every module, so the shares take about as long.

Collection is unchanged (every test module, and so every module of the package they import, is
still imported): ``scripts/python-tiers.sh`` gives each of the other supported Pythons one
share of the fast tier, so that each test runs on Python 3.11 and on one other Python, and
every Python imports all of the code.
"""

from __future__ import annotations

import os

import pytest

SHARD_ENV = "SLUICE_TEST_SHARD"


def shard_of(value: str) -> tuple[int, int]:
    """``"i/n"`` as ``(i, n)``; a ``pytest.UsageError`` naming the variable when it is not."""
    index, _, count = value.partition("/")
    try:
        shard = int(index), int(count)
    except ValueError:
        shard = (-1, 0)
    if not 0 <= shard[0] < shard[1]:
        raise pytest.UsageError(f"{SHARD_ENV}={value!r}: expected i/n with 0 <= i < n")
    return shard


@pytest.hookimpl(trylast=True)  # after -m and -k: the shares split what is to run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    value = os.environ.get(SHARD_ENV)
    if not value:
        return
    index, count = shard_of(value)
    ids = sorted(item.nodeid for item in items)
    kept_ids = set(ids[index::count])
    kept = [item for item in items if item.nodeid in kept_ids]
    dropped = [item for item in items if item.nodeid not in kept_ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
