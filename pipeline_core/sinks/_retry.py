"""Bounded retries with jittered exponential backoff, shared by the network sinks.

A sink retries a failed request inside ``deliver`` so that the processor above sees one failure
per batch, not one per transient error (Flume's sinks do the same with their client's retries)::

    policy = RetryPolicy(max_attempts=5)
    response = call_with_retry(send, is_retryable=is_transient, policy=policy, what="sink web")

Attempt ``n`` (from 1) that fails with a retryable error is followed by a random wait in
``[0, min(max_wait_s, multiplier_s * 2 ** (n - 1))]`` ("full jitter"), unless ``wait_hint``
names a wait for that error (an HTTP ``Retry-After``), then by attempt ``n + 1``. An error that
is not retryable, or the error of the last attempt, is re-raised unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a sink retries one request.

    ``sleep`` waits between attempts; tests pass a function that records the waits instead of
    sleeping.
    """

    max_attempts: int = 5
    """Attempts in all, the first included (1: no retry)."""
    multiplier_s: float = 0.5
    """Upper bound of the first wait; it doubles with every attempt."""
    max_wait_s: float = 30.0
    """Cap of every wait, a ``wait_hint`` included."""
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.multiplier_s < 0 or self.max_wait_s < 0:
            raise ValueError("waits cannot be negative")


def call_with_retry(
    attempt: Callable[[], T],
    *,
    is_retryable: Callable[[BaseException], bool],
    policy: RetryPolicy,
    what: str,
    wait_hint: Callable[[BaseException], float | None] | None = None,
) -> T:
    """Call ``attempt`` until it returns, at most ``policy.max_attempts`` times.

    Args:
        attempt: one try of the operation; it must leave things ready for the next try (for
            example close a broken connection).
        is_retryable: whether an exception raised by ``attempt`` is worth another try.
        policy: attempts, waits and the sleep function.
        what: names the operation in the warning logged before each retry.
        wait_hint: the wait an exception asks for (seconds), or ``None`` for the backoff.

    Returns:
        What the first successful call of ``attempt`` returned.

    Raises:
        The exception of the last attempt, or the first exception that is not retryable.
    """
    backoff = wait_random_exponential(multiplier=policy.multiplier_s, max=policy.max_wait_s)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        hinted = wait_hint(error) if wait_hint is not None and error is not None else None
        if hinted is not None:
            return max(0.0, min(hinted, policy.max_wait_s))
        return float(backoff(state))

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait_s = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s: attempt %d of %d failed (%s); retrying in %.2f s",
            what,
            state.attempt_number,
            policy.max_attempts,
            error,
            wait_s,
        )

    retrying = Retrying(
        sleep=policy.sleep,
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_exception(is_retryable),
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(attempt)
