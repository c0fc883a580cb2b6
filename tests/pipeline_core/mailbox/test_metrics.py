from __future__ import annotations

import dataclasses

import pytest

from pipeline_core.mailbox._metrics import MetricsRecorder


def test_an_empty_recorder_reports_zeros() -> None:
    metrics = MetricsRecorder().snapshot(now=10.0)
    assert metrics.mails_processed == 0
    assert metrics.latency_count == 0
    assert metrics.latency_mean == metrics.latency_p50 == metrics.latency_p99 == 0.0
    assert metrics.time_suspended == 0.0


def test_percentiles_use_the_nearest_rank_over_the_window() -> None:
    recorder = MetricsRecorder(window=100)
    for n in range(1, 101):  # latencies 1..100
        recorder.record_mail(put_time=1000.0, now=1000.0 + n)

    metrics = recorder.snapshot(now=2000.0)

    assert metrics.latency_p50 == 50.0
    assert metrics.latency_p99 == 99.0
    assert metrics.latency_max == 100.0
    assert metrics.latency_mean == pytest.approx(50.5)


def test_the_window_keeps_only_recent_latencies_but_the_mean_covers_all() -> None:
    recorder = MetricsRecorder(window=2)
    for latency in (100.0, 1.0, 3.0):
        recorder.record_mail(put_time=1.0, now=1.0 + latency)

    metrics = recorder.snapshot(now=0.0)

    assert metrics.latency_window == 2
    assert metrics.latency_p99 == 3.0
    assert metrics.latency_max == 100.0
    assert metrics.latency_count == 3
    assert metrics.latency_mean == pytest.approx(104.0 / 3)


def test_a_mail_never_put_is_counted_without_latency() -> None:
    recorder = MetricsRecorder()
    recorder.record_mail(put_time=0.0, now=5.0)
    metrics = recorder.snapshot(now=5.0)
    assert metrics.mails_processed == 1
    assert metrics.latency_count == 0


def test_time_suspended_adds_finished_and_ongoing_suspensions() -> None:
    recorder = MetricsRecorder()
    recorder.suspension_started(now=1.0)
    recorder.suspension_started(now=2.0)  # already suspended: ignored
    recorder.suspension_ended(now=4.0)
    recorder.suspension_ended(now=9.0)  # not suspended: ignored
    recorder.suspension_started(now=10.0)

    assert recorder.snapshot(now=12.5).time_suspended == pytest.approx(5.5)


def test_the_snapshot_is_frozen() -> None:
    metrics = MetricsRecorder().snapshot(now=0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        metrics.mails_processed = 1  # type: ignore[misc]


def test_a_window_smaller_than_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="window"):
        MetricsRecorder(window=0)
