"""Waiting in tests for what another thread or process does: poll a predicate until it holds,
never longer than a timeout (a test that waits has a bound)."""

from __future__ import annotations

import time
from collections.abc import Callable


def holds_within(predicate: Callable[[], object], timeout: float, poll: float = 0.001) -> bool:
    """Poll ``predicate`` every ``poll`` seconds until it holds or ``timeout`` passes; whether
    it held."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def wait_until(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: str = "the condition",
    poll: float = 0.02,
) -> None:
    """Poll ``predicate`` until it holds; an AssertionError naming ``what`` after ``timeout``."""
    if not holds_within(predicate, timeout, poll):
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")
