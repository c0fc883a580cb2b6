"""``SLUICE_TEST_SHARD`` splits the selected tests by file: the shares are disjoint, together
they are the whole selection, and a bad value is refused by name."""

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
def test_the_shares_split_the_selection_by_file_and_cover_it() -> None:
    status, everything = collected(None)
    assert status == 0 and len({test.partition("::")[0] for test in everything}) >= 3
    shares = [collected(f"{index}/3")[1] for index in range(3)]

    assert sorted(test for share in shares for test in share) == sorted(everything)
    files = [{test.partition("::")[0] for test in share} for share in shares]
    assert all(files) and not (files[0] & files[1] or files[1] & files[2] or files[0] & files[2])


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
