"""read_progress: stored samples as the page charts them, merged when there are too many."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pipeline_core.metastore import ReadProgressRecord
from pipeline_core.state._progress import read_progress

START = datetime(2026, 11, 22, 10, tzinfo=timezone.utc)


def sample(minute: int, host: str = "web-1", *, unread: int = 0) -> ReadProgressRecord:
    return ReadProgressRecord(
        host=host,
        sampled_at=START + timedelta(minutes=minute),
        elapsed_s=60.0,
        bytes_read=6000,
        lines_read=60,
        unread_bytes=unread,
    )


def test_should_keep_every_sample_while_there_are_few() -> None:
    records = [sample(0), sample(0, "web-2"), sample(1)]

    shown = read_progress(records, max_points=3)

    assert [(s.host, s.sampled_at, s.samples) for s in shown] == [
        ("web-1", START, 1),
        ("web-2", START, 1),
        ("web-1", START + timedelta(minutes=1), 1),
    ]
    assert shown[0].bytes_per_s == 100.0


def test_should_merge_consecutive_samples_of_a_host_keeping_totals_and_the_largest_lag() -> None:
    records = [sample(m, unread=100 * m) for m in range(10)] + [sample(5, "web-2")]

    shown = read_progress(records, max_points=4)

    web_1 = [s for s in shown if s.host == "web-1"]
    assert [s.samples for s in web_1] == [3, 3, 3, 1]
    assert [s.sampled_at for s in web_1] == [START + timedelta(minutes=m) for m in (2, 5, 8, 9)]
    assert [s.unread_bytes for s in web_1] == [200, 500, 800, 900]
    assert sum(s.bytes_read for s in web_1) == 10 * 6000
    assert sum(s.lines_read for s in web_1) == 10 * 60
    assert web_1[0].elapsed_s == 180.0 and web_1[0].bytes_per_s == 100.0
    assert [s.samples for s in shown if s.host == "web-2"] == [1]


def test_should_give_no_rate_for_a_sample_that_covers_no_time() -> None:
    (shown,) = read_progress([ReadProgressRecord("web-1", START, 0.0, 0, 0, 5)])

    assert shown.bytes_per_s is None
