"""Time as the delivery layer sees it, so penalty and backoff rules run on a fake clock in tests."""

from __future__ import annotations

import threading
from typing import Protocol

from pipeline_core._wall_clock import wall_time


class Clock(Protocol):
    """Wall-clock seconds (penalties are persisted, so they are absolute times) and waiting."""

    def time(self) -> float:
        """Seconds since the epoch."""
        ...

    def wait(self, interrupt: threading.Event, seconds: float) -> bool:
        """Wait ``seconds`` or until ``interrupt`` is set; return whether it was set."""
        ...


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return wall_time()

    def wait(self, interrupt: threading.Event, seconds: float) -> bool:
        return interrupt.wait(seconds) if seconds > 0 else interrupt.is_set()


SYSTEM_CLOCK = SystemClock()
