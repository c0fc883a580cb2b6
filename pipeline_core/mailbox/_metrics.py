"""Mailbox metrics: a frozen snapshot and the recorder the mailbox thread updates."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

__all__ = ["DEFAULT_LATENCY_WINDOW", "MailboxMetrics"]

DEFAULT_LATENCY_WINDOW = 4096
"""How many recent put-to-run latencies the percentiles are computed over."""


@dataclass(frozen=True, slots=True)
class MailboxMetrics:
    """A snapshot of one :class:`MailboxProcessor`'s counters.

    Attributes:
        mails_processed: mails run by the processor (the loop, ``run_mailbox_step``,
            ``drain`` and its executors' ``yield_``/``try_yield``), control mails included.
        time_suspended: seconds the default action has spent suspended, including a
            suspension still in progress.
        latency_count: mails whose put-to-run latency was measured (all processed mails that
            went through ``put``/``put_first``).
        latency_mean: mean put-to-run latency in seconds over all measured mails (0.0 if none).
        latency_p50: median put-to-run latency in seconds over the last ``latency_window``
            mails (0.0 if none).
        latency_p99: 99th percentile (nearest rank) over the same window (0.0 if none).
        latency_max: largest put-to-run latency ever measured (0.0 if none).
        latency_window: how many latencies the percentiles were computed from.
    """

    mails_processed: int
    time_suspended: float
    latency_count: int
    latency_mean: float
    latency_p50: float
    latency_p99: float
    latency_max: float
    latency_window: int


class MetricsRecorder:
    """Counters written by the mailbox thread only; :meth:`snapshot` may be read anywhere.

    A snapshot taken from another thread does not stop the loop, so its fields can be a few
    mails apart from each other.
    """

    __slots__ = (
        "_latencies",
        "_latency_count",
        "_latency_max",
        "_latency_sum",
        "_mails_processed",
        "_suspended_since",
        "_time_suspended",
    )

    def __init__(self, window: int = DEFAULT_LATENCY_WINDOW) -> None:
        if window < 1:
            raise ValueError(f"latency window must be at least 1, got {window}")
        self._latencies: deque[float] = deque(maxlen=window)
        self._latency_count = 0
        self._latency_sum = 0.0
        self._latency_max = 0.0
        self._mails_processed = 0
        self._time_suspended = 0.0
        self._suspended_since: float | None = None

    def record_mail(self, put_time: float, now: float) -> None:
        """Count one mail about to run; ``put_time`` 0.0 means it was never put."""
        self._mails_processed += 1
        if put_time:
            latency = now - put_time
            self._latency_count += 1
            self._latency_sum += latency
            self._latencies.append(latency)
            if latency > self._latency_max:
                self._latency_max = latency

    def suspension_started(self, now: float) -> None:
        if self._suspended_since is None:
            self._suspended_since = now

    def suspension_ended(self, now: float) -> None:
        since = self._suspended_since
        if since is not None:
            self._time_suspended += now - since
            self._suspended_since = None

    def snapshot(self, now: float) -> MailboxMetrics:
        latencies = sorted(self._latencies)
        count = self._latency_count
        suspended = self._time_suspended  # read before _suspended_since: never double counts
        since = self._suspended_since
        return MailboxMetrics(
            mails_processed=self._mails_processed,
            time_suspended=suspended + (now - since if since is not None else 0.0),
            latency_count=count,
            latency_mean=self._latency_sum / count if count else 0.0,
            latency_p50=_nearest_rank(latencies, 0.50),
            latency_p99=_nearest_rank(latencies, 0.99),
            latency_max=self._latency_max,
            latency_window=len(latencies),
        )


def _nearest_rank(ordered: list[float], quantile: float) -> float:
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(quantile * len(ordered)))
    return ordered[rank - 1]
