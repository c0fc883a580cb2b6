"""The host's wall clock: every wall-clock reading of the collector goes through here (seal,
request and sample times, sink penalties, the clock watch), so that a test can step it back
as an NTP correction or an operator would; the machine's own clock cannot be stepped under a
test. Intervals are measured with ``time.monotonic()``, which no step moves; leases with the
metastore's clock (``pipeline_core.metastore``).

Threading model: read from any thread; :func:`step` only from a test, before or while the
collector runs.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

_offset_seconds = 0.0


def wall_time() -> float:
    """Seconds since the epoch, as this host's clock says."""
    return time.time() + _offset_seconds


def utc_now() -> datetime:
    """This host's clock as an aware ``datetime`` in UTC."""
    return datetime.fromtimestamp(wall_time(), timezone.utc)


def step(seconds: float) -> None:
    """Move the clock by ``seconds`` (negative: back) from now on; tests only."""
    global _offset_seconds
    _offset_seconds += seconds


def reset() -> None:
    """Undo every :func:`step`; tests only."""
    global _offset_seconds
    _offset_seconds = 0.0
