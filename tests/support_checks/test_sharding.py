"""``SLUICE_TEST_SHARD`` splits the selected tests: the shares are disjoint, together they are
the whole selection, each samples the modules, and a bad value is refused by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sharding import shard_of

ROOT = Path(__file__).resolve().parents[2]
SELECTION = ["tests/pipeline_core/mailbox", "-m", "not slow"]


def collected(shard: str | None) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "SLUICE_TEST_SHARD"}
    if shard is not None:
        env["SLUICE_TEST_SHARD"] = shard
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *SELECTION],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.timeout(300)
def test_the_shares_split_the_selection_and_cover_it() -> None:
    status, everything = collected(None)
    assert status == 0 and len(everything) >= 30
    shares = [collected(f"{index}/3")[1] for index in range(3)]

    assert sorted(test for share in shares for test in share) == sorted(everything)
    assert all(len(share) in (len(everything) // 3, len(everything) // 3 + 1) for share in shares)
    files = {test.partition("::")[0] for test in everything}
    busiest = max(files, key=lambda file: sum(t.startswith(file + "::") for t in everything))
    assert all(any(test.startswith(busiest + "::") for test in share) for share in shares)


@pytest.mark.parametrize("value", ["3/3", "1", "a/b", "-1/2", "0/0"])
def test_a_bad_share_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(pytest.UsageError, match=f"SLUICE_TEST_SHARD={value!r}"):
        shard_of(value)


@pytest.mark.timeout(120)
def test_pytest_stops_on_a_bad_share() -> None:
    env = {**os.environ, "SLUICE_TEST_SHARD": "3/3"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *SELECTION],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "SLUICE_TEST_SHARD='3/3'" in done.stdout + done.stderr
