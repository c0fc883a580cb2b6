"""``LoadBalancingSinkProcessor``: spreads batches over the group's sinks, round robin or at
random, optionally backing failed sinks off."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks._clock import SYSTEM_CLOCK, Clock
from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._sink import Sink
from pipeline_core.sinks._sink_state import SinkHealth, SinkHealthBook, SinkStateStore
from pipeline_core.sinks._status import Status

log = logging.getLogger(__name__)

BACKOFF_UNIT = 1.0
"""Seconds of exclusion per failure, doubled with each sequential failure (Flume's 1000 ms)."""

MAX_SEQUENTIAL_FAILURES = 16
"""Sequential failures stop counting here (Flume's ``EXP_BACKOFF_COUNTER_LIMIT``)."""

CONSIDER_SEQUENTIAL_RANGE = 3600.0
"""A failure within this many seconds after the previous one's exclusion ended continues its
series; a later one starts a new series (Flume's ``CONSIDER_SEQUENTIAL_RANGE``, one hour)."""


class SinkSelector(Enum):
    """The order in which a load-balancing group tries its sinks."""

    ROUND_ROBIN = "round_robin"
    """Configuration order, starting one sink further at each ``process()``."""
    RANDOM = "random"
    """A new random order at each ``process()``."""


class LoadBalancingSinkProcessor(SinkProcessor):
    """Tries the group's sinks in the selector's order until one answers (Flume's
    ``LoadBalancingSinkProcessor`` with its ``OrderSelector``).

    Each ``process()`` orders the sinks that are not excluded: round robin starts one sink
    further than the previous call did (Flume's ``RoundRobinOrderSelector``), random shuffles
    them with ``rng``. It calls them in that order and returns the status of the first one
    that does not raise (``READY`` or ``BACKOFF``); a sink that raises is reported failed and
    the next one is tried. When every sink raised, or none was available, it raises
    ``EventDeliveryException`` chained to the last failure.

    With ``backoff=True`` a failed sink is excluded for ``min(max_timeout, 2**n)`` seconds,
    ``n`` being its sequential failures: a failure within ``CONSIDER_SEQUENTIAL_RANGE`` after
    the previous exclusion ended adds one (up to ``MAX_SEQUENTIAL_FAILURES``), a later one
    starts again at 1. A sink that answers clears its series (``last_error`` and
    ``last_failure_at`` stay, for operators). With ``backoff=False`` (Flume's default) no sink
    is ever excluded and no health is tracked.

    Sink health is saved to ``state`` on every change and loaded by :meth:`start` (or the first
    ``process()``), so a sink excluded before a restart stays excluded after it.

    Threading model: every method is for the group's delivery thread; other threads read sink
    health from the state store.

    Args:
        group: the sink group's name (the key of its state).
        sinks: at least two sinks, in configuration order; names must be unique.
        selector: round robin or random.
        backoff: whether failed sinks are excluded for a while.
        max_timeout: the longest exclusion, in seconds.
        clock: the time exclusions are measured on.
        state: where sink health is kept across restarts (``None``: nowhere).
        rng: the random source of ``SinkSelector.RANDOM``.

    Raises:
        ValueError: fewer than two sinks, duplicate sink names, or a negative ``max_timeout``.
    """

    def __init__(
        self,
        group: str,
        sinks: Sequence[Sink],
        *,
        selector: SinkSelector = SinkSelector.ROUND_ROBIN,
        backoff: bool = False,
        max_timeout: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
        state: SinkStateStore | None = None,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(group, sinks)
        names = [sink.name for sink in self.sinks]
        if len(names) < 2:
            raise ValueError(
                f"sink group {group!r}: the load-balancing processor needs at least two sinks"
            )
        if len(set(names)) != len(names):
            raise ValueError(f"sink group {group!r}: sink names must be unique, got {names}")
        if max_timeout < 0:
            raise ValueError("max_timeout must be >= 0")
        self.selector = selector
        self.backoff = backoff
        self.max_timeout = max_timeout
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._next_head = 0
        self._health = SinkHealthBook(group, names, state if backoff else None)

    def health(self) -> dict[str, SinkHealth]:
        """Every sink's health, in configuration order."""
        return self._health.as_dict()

    def available_sinks(self) -> list[str]:
        """The names of the sinks ``process()`` may try now, in configuration order."""
        now = self._clock.time()
        return [sink.name for sink in self.sinks if self._available(sink.name, now)]

    def start(self) -> None:
        self._load()
        super().start()

    def process(self) -> Status:
        self._load()
        last_failure: Exception | None = None
        for sink in self._order():
            try:
                status = sink.process()
            except Exception as exc:
                last_failure = exc
                self._inform_failure(sink.name, exc)
                log.warning(
                    "sink group %r: sink %r failed, trying the next sink if any",
                    self.group,
                    sink.name,
                    exc_info=True,
                )
                continue
            self._inform_success(sink.name)
            return status
        if last_failure is None:
            raise EventDeliveryException(
                f"sink group {self.group!r}: no sink is available, all are backing off"
            )
        raise EventDeliveryException(
            f"sink group {self.group!r}: all sinks failed"
        ) from last_failure

    def _order(self) -> list[Sink]:
        now = self._clock.time()
        if self.backoff:
            self._health.bound(now, self.max_timeout)
        active = [sink for sink in self.sinks if self._available(sink.name, now)]
        if self.selector is SinkSelector.RANDOM:
            self._rng.shuffle(active)
            return active
        size = len(active)
        if size == 0:
            return active
        if self._next_head >= size:  # fewer sinks available than last time
            self._next_head = 0
        begin = self._next_head
        self._next_head = (begin + 1) % size
        return active[begin:] + active[:begin]

    def _available(self, name: str, now: float) -> bool:
        return not self.backoff or self._health[name].excluded_until <= now

    def _inform_failure(self, name: str, exc: Exception) -> None:
        if not self.backoff:
            return
        now = self._clock.time()
        previous = self._health[name]
        last_backoff = _exclusion(self.max_timeout, previous.consecutive_failures)
        if now - previous.last_failure_at < last_backoff + CONSIDER_SEQUENTIAL_RANGE:
            failures = min(previous.consecutive_failures + 1, MAX_SEQUENTIAL_FAILURES)
        else:
            failures = 1
        self._set_health(
            name,
            SinkHealth(
                consecutive_failures=failures,
                excluded_until=now + _exclusion(self.max_timeout, failures),
                last_error=f"{type(exc).__name__}: {exc}",
                last_failure_at=now,
            ),
        )

    def _inform_success(self, name: str) -> None:
        health = self._health[name]
        if health.consecutive_failures or health.excluded_until:
            self._set_health(name, replace(health, consecutive_failures=0, excluded_until=0.0))

    def _set_health(self, name: str, health: SinkHealth) -> None:
        self._health.set(name, health)

    def _load(self) -> None:
        for name, health in self._health.saved().items():
            self._health.set(name, health, save=False)


def _exclusion(max_timeout: float, failures: int) -> float:
    return min(max_timeout, BACKOFF_UNIT * 2.0**failures)
