"""``FailoverSinkProcessor``: the highest-priority sink that works delivers; failed sinks wait
out a growing penalty before they are tried again."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks._clock import SYSTEM_CLOCK, Clock
from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._sink import Sink
from pipeline_core.sinks._sink_state import SinkHealth, SinkHealthBook, SinkStateStore
from pipeline_core.sinks._status import Status

log = logging.getLogger(__name__)

FAILURE_PENALTY = 1.0
"""Seconds of penalty per failure, doubled with each consecutive failure (Flume's 1000 ms)."""

_MAX_EXPONENT = 62  # 2**62 s is far beyond any max_penalty and still a float


class FailoverSinkProcessor(SinkProcessor):
    """Delivers through the highest-priority live sink and fails over to the next one (Flume's
    ``FailoverSinkProcessor``).

    Priorities: a higher number wins. A sink missing from ``priorities`` gets ``-index`` (its
    position in ``sinks``), so among such sinks the one listed first wins. A sink whose
    priority equals that of a sink listed before it is left out of the group (a warning names
    both); it is still started and stopped with the others.

    Each ``process()``:

    1. retries the failed sinks whose penalty has expired, oldest expiry first. The first one
       that answers ``READY`` rejoins the live sinks, the highest live sink becomes the active
       one again, and ``READY`` is returned. One that answers ``BACKOFF`` or raises counts a
       failure more and goes back to the failed set, and the next one is tried;
    2. calls the active sink (the highest live one) and returns its status. If it raises, it
       moves to the failed set and the next highest live sink is tried in the same call;
    3. raises ``EventDeliveryException`` (chained to the last failure) when no live sink is
       left.

    A sink that fails for the n-th consecutive time is not retried for ``min(max_penalty,
    2**n)`` seconds: 2, 4, 8, 16, 30, 30, ... with the defaults. Its :class:`SinkHealth` is
    saved to ``state`` on every change and loaded by :meth:`start` (or the first
    ``process()``): a sink whose ``excluded_until`` is still ahead starts in the failed set.
    A success keeps ``last_error`` and ``last_failure_at`` for operators and zeroes the rest.

    Threading model: every method, the inspection ones included, is for the group's delivery
    thread; other threads read sink health from the state store.

    Args:
        group: the sink group's name (the key of its state).
        sinks: the group's sinks, in configuration order; names must be unique.
        priorities: sink name to priority.
        max_penalty: the longest penalty, in seconds.
        clock: the time penalties are measured on.
        state: where sink health is kept across restarts (``None``: nowhere).

    Raises:
        ValueError: no sinks, duplicate sink names, a priority for an unknown sink, or a
            negative ``max_penalty``.
    """

    def __init__(
        self,
        group: str,
        sinks: Sequence[Sink],
        priorities: Mapping[str, int],
        *,
        max_penalty: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
        state: SinkStateStore | None = None,
    ) -> None:
        super().__init__(group, sinks)
        names = [sink.name for sink in self.sinks]
        if not names:
            raise ValueError(f"sink group {group!r}: the failover processor needs sinks")
        if len(set(names)) != len(names):
            raise ValueError(f"sink group {group!r}: sink names must be unique, got {names}")
        unknown = sorted(set(priorities) - set(names))
        if unknown:
            raise ValueError(f"sink group {group!r}: priorities name unknown sinks {unknown}")
        if max_penalty < 0:
            raise ValueError("max_penalty must be >= 0")
        self.max_penalty = max_penalty
        self._clock = clock
        self._last_failure: Exception | None = None
        self._by_name: dict[str, Sink] = {}
        self._priorities: dict[str, int] = {}
        by_priority: dict[int, str] = {}
        for index, sink in enumerate(self.sinks):
            priority = priorities.get(sink.name, -index)
            if priority in by_priority:
                log.warning(
                    "sink group %r: sink %r is not added: its priority %d duplicates that of "
                    "sink %r",
                    group,
                    sink.name,
                    priority,
                    by_priority[priority],
                )
                continue
            by_priority[priority] = sink.name
            self._by_name[sink.name] = sink
            self._priorities[sink.name] = priority
        self._health = SinkHealthBook(group, self._by_name, state)
        self._live: set[str] = set(self._by_name)
        self._failed: dict[str, int] = {}  # name -> the order it failed in, to break ties
        self._failure_order = itertools.count()

    @property
    def priorities(self) -> Mapping[str, int]:
        """The priority of every sink in the group (duplicates left out)."""
        return dict(self._priorities)

    @property
    def active_sink(self) -> str | None:
        """The name of the sink ``process()`` calls next, or ``None`` when every sink failed."""
        if not self._live:
            return None
        return max(self._live, key=self._priorities.__getitem__)

    def live_sinks(self) -> list[str]:
        """The names of the sinks not in the failed set, highest priority first."""
        return sorted(self._live, key=self._priorities.__getitem__, reverse=True)

    def failed_sinks(self) -> dict[str, SinkHealth]:
        """The failed sinks and their health, the next to be retried first."""
        return {name: self._health[name] for name in self._retry_order()}

    def start(self) -> None:
        self._load()
        super().start()

    def process(self) -> Status:
        self._load()
        now = self._clock.time()
        self._health.bound(now, self.max_penalty)
        for name in self._retry_order():
            if self._health[name].excluded_until > now:
                break
            try:
                status = self._by_name[name].process()
            except Exception as exc:
                self._fail(name, exc)
                log.warning("sink group %r: failed sink %r failed again: %s", self.group, name, exc)
                continue
            if status is Status.READY:
                self._restore(name)
                return Status.READY
            self._fail(name, None)
        while (active := self.active_sink) is not None:
            try:
                status = self._by_name[active].process()
            except Exception as exc:
                self._live.discard(active)
                self._fail(active, exc)
                log.warning(
                    "sink group %r: sink %r failed and has been sent to the failover list",
                    self.group,
                    active,
                    exc_info=True,
                )
                continue
            if status is Status.READY and self._health[active].consecutive_failures:
                self._set_health(active, _recovered(self._health[active]))
            return status
        raise EventDeliveryException(
            f"sink group {self.group!r}: all sinks failed, nothing left to fail over to"
        ) from self._last_failure

    def _retry_order(self) -> list[str]:
        return sorted(self._failed, key=lambda n: (self._health[n].excluded_until, self._failed[n]))

    def _fail(self, name: str, exc: Exception | None) -> None:
        """One failure more for ``name`` (``exc`` is ``None`` for a ``BACKOFF`` answer)."""
        if exc is not None:
            self._last_failure = exc
        now = self._clock.time()
        failures = self._health[name].consecutive_failures + 1
        penalty = min(self.max_penalty, FAILURE_PENALTY * 2.0 ** min(failures, _MAX_EXPONENT))
        self._set_health(
            name,
            SinkHealth(
                consecutive_failures=failures,
                excluded_until=now + penalty,
                last_error="backoff" if exc is None else f"{type(exc).__name__}: {exc}",
                last_failure_at=now,
            ),
        )
        self._failed[name] = next(self._failure_order)

    def _restore(self, name: str) -> None:
        del self._failed[name]
        self._live.add(name)
        self._set_health(name, _recovered(self._health[name]))
        log.info(
            "sink group %r: sink %r recovered; %r is the active sink",
            self.group,
            name,
            self.active_sink,
        )

    def _set_health(self, name: str, health: SinkHealth) -> None:
        self._health.set(name, health)

    def _load(self) -> None:
        now = self._clock.time()
        saved = self._health.saved()
        # Oldest expiry first, so that the tie-break order follows the saved penalties.
        for name, health in sorted(saved.items(), key=lambda item: item[1].excluded_until):
            self._health.set(name, health, save=False)
            if health.excluded_until > now:
                self._live.discard(name)
                self._failed[name] = next(self._failure_order)


def _recovered(health: SinkHealth) -> SinkHealth:
    return replace(health, consecutive_failures=0, excluded_until=0.0)
