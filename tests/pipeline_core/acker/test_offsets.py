"""OffsetTracker: the committed offset is the lowest unacked byte, never past a gap."""

from __future__ import annotations

from pipeline_core.acker import OffsetTracker


def test_should_advance_over_ranges_acked_in_order() -> None:
    offsets = OffsetTracker()
    offsets.track("f", 0, 10)
    offsets.track("f", 10, 25)
    assert offsets.acked("f", 0, 10) == 10
    assert offsets.acked("f", 10, 25) == 25


def test_should_not_pass_a_gap_until_it_is_acked() -> None:
    offsets = OffsetTracker()
    for start, end in [(0, 10), (10, 20), (20, 30)]:
        offsets.track("f", start, end)
    assert offsets.acked("f", 20, 30) == 0
    assert offsets.acked("f", 10, 20) == 0
    assert offsets.acked("f", 0, 10) == 30


def test_should_start_where_the_first_tracked_range_starts() -> None:
    offsets = OffsetTracker()
    offsets.track("f", 500, 600)
    assert offsets.committed("f") == 500
    assert offsets.acked("f", 500, 600) == 600


def test_should_keep_files_apart() -> None:
    offsets = OffsetTracker()
    offsets.track("a", 0, 5)
    offsets.track("b", 0, 7)
    offsets.acked("b", 0, 7)
    assert offsets.snapshot() == {"a": 0, "b": 7}
