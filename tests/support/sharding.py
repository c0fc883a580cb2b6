"""A share of the suite: with ``SLUICE_TEST_SHARD=i/n`` set, a pytest run keeps the tests of
every n-th test file, starting at the i-th (0-based), of those its other options selected.

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
    files = sorted({item.path for item in items})
    kept_files = set(files[index::count])
    kept = [item for item in items if item.path in kept_files]
    dropped = [item for item in items if item.path not in kept_files]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
