"""ClockWatch: a wall clock that moves otherwise than the monotonic one has stepped."""

from __future__ import annotations

import logging

import pytest

from pipeline_core.collector._clock_watch import ClockWatch


class Clocks:
    def __init__(self) -> None:
        self.wall = 1_000_000.0
        self.monotonic = 50.0

    def tick(self, seconds: float) -> None:
        self.wall += seconds
        self.monotonic += seconds


def test_a_step_back_or_forward_is_seen_once_and_said(caplog: pytest.LogCaptureFixture) -> None:
    clocks = Clocks()
    watch = ClockWatch(lambda: clocks.wall, lambda: clocks.monotonic, threshold=2.0)

    clocks.tick(1.0)
    assert watch.look() is None
    clocks.wall -= 3600.0
    clocks.tick(1.0)
    caplog.set_level(logging.WARNING)
    assert watch.look() == pytest.approx(-3600.0)
    clocks.tick(5.0)
    assert watch.look() is None  # the same step is not seen again
    clocks.wall += 90.0
    assert watch.look() == pytest.approx(90.0)

    assert watch.steps == [pytest.approx(-3600.0), pytest.approx(90.0)]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2
    assert "stepped back by 3600.0 s" in said[0] and "stepped forward by 90.0 s" in said[1]


def test_drift_under_the_threshold_is_not_a_step() -> None:
    clocks = Clocks()
    watch = ClockWatch(lambda: clocks.wall, lambda: clocks.monotonic, threshold=2.0)

    for _ in range(10):  # NTP slewing: 0.5 s over ten looks, never a step
        clocks.tick(1.0)
        clocks.wall += 0.05
        assert watch.look() is None
