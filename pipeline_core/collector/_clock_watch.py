"""Noticing the host's wall clock stepped (an NTP correction, an operator's ``date -s``): the
wall clock moving otherwise than ``time.monotonic()`` between two looks.

Nothing the collector decides waits on the wall clock: intervals are monotonic, leases are
measured by the metastore's clock, sink penalties are bounded by their maximum. What a step
still moves is the times it records from this host (seal, request and sample times); the
log says so, once per step, so that an operator can tell a wrong time in the tables from a
fault of the pipeline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pipeline_core._wall_clock import wall_time

CLOCK_STEP_SECONDS = 2.0
"""A wall clock that moved this much more or less than the monotonic clock has stepped."""

log = logging.getLogger(__name__)


class ClockWatch:
    """Compares the wall clock with the monotonic one at each :meth:`look`.

    Threading model: one thread (the control thread) looks.
    """

    def __init__(
        self,
        wall: Callable[[], float] = wall_time,
        monotonic: Callable[[], float] = time.monotonic,
        threshold: float = CLOCK_STEP_SECONDS,
    ) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self._threshold = threshold
        self._skew = wall() - monotonic()
        self.steps: list[float] = []
        """Each step seen, in seconds (negative: back)."""

    def look(self) -> float | None:
        """The step since the last look, if the wall clock stepped (then also logged)."""
        skew = self._wall() - self._monotonic()
        moved = skew - self._skew
        self._skew = skew
        if abs(moved) < self._threshold:
            return None
        self.steps.append(moved)
        log.warning(
            "this host's wall clock stepped %s by %.1f s: leases go by the metastore's clock "
            "and waits by the monotonic one, but the seal and request times this host records "
            "move with it",
            "back" if moved < 0 else "forward",
            abs(moved),
        )
        return moved
