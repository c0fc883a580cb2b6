"""Read progress samples: recorded per host, pruned after the retention, read back by the view."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from alembic import command

from pipeline_core.metastore import (
    READ_PROGRESS_RETENTION,
    Metastore,
    ReadProgressRecord,
    alembic_config,
    open_view,
)

pytestmark = pytest.mark.metastore

PIPELINE = "web_access"
NOON = datetime(2026, 11, 22, 12, tzinfo=timezone.utc)


def sample(
    at: datetime, host: str = "web-1", *, read: int = 100, unread: int = 50
) -> ReadProgressRecord:
    return ReadProgressRecord(
        host=host,
        sampled_at=at,
        elapsed_s=30.0,
        bytes_read=read,
        lines_read=read // 10,
        unread_bytes=unread,
    )


def stored(url: str, since: datetime) -> list[ReadProgressRecord] | None:
    with open_view(url) as view:
        assert view is not None
        return view.read_progress(PIPELINE, since)


def test_should_read_back_every_hosts_samples_since_a_time_oldest_first(
    metastore: Metastore, metastore_url: str
) -> None:
    samples = [
        sample(NOON - timedelta(minutes=2), "web-2", read=7),
        sample(NOON - timedelta(minutes=1), "web-1", read=8, unread=0),
        sample(NOON, "web-2", read=9),
    ]
    for record in reversed(samples):
        metastore.record_read_progress(PIPELINE, record)
    metastore.record_read_progress("other_pipeline", sample(NOON))
    metastore.record_read_progress(PIPELINE, sample(NOON - timedelta(hours=3)))

    found = stored(metastore_url, since=NOON - timedelta(hours=1))

    assert found == samples
    assert all(record.sampled_at.tzinfo is not None for record in found)


def test_should_remove_a_hosts_samples_older_than_the_retention(
    metastore: Metastore, metastore_url: str
) -> None:
    old = sample(NOON - READ_PROGRESS_RETENTION - timedelta(seconds=1))
    kept = sample(NOON - READ_PROGRESS_RETENTION + timedelta(seconds=1))
    other_host = sample(NOON - READ_PROGRESS_RETENTION - timedelta(hours=1), "web-2")
    for record in (old, kept, other_host):
        metastore.record_read_progress(PIPELINE, record)

    metastore.record_read_progress(PIPELINE, sample(NOON))

    everything = stored(metastore_url, since=NOON - timedelta(days=30))
    assert everything == [other_host, kept, sample(NOON)]  # web-2's wait for its own next sample


def test_should_record_several_pipelines_samples_at_once_and_prune_each(
    metastore: Metastore, metastore_url: str
) -> None:
    old = sample(NOON - READ_PROGRESS_RETENTION - timedelta(seconds=1))
    metastore.record_read_progress(PIPELINE, old)
    metastore.record_read_progress("other_pipeline", old)

    metastore.record_read_progress_many(
        [
            (PIPELINE, sample(NOON), READ_PROGRESS_RETENTION),
            ("other_pipeline", sample(NOON, read=3), READ_PROGRESS_RETENTION),
        ]
    )

    assert stored(metastore_url, since=NOON - timedelta(days=30)) == [sample(NOON)]
    with open_view(metastore_url) as view:
        assert view is not None
        other = view.read_progress("other_pipeline", NOON - timedelta(days=30))
    assert other == [sample(NOON, read=3)]


def test_should_keep_samples_for_the_retention_each_is_recorded_with(
    metastore: Metastore, metastore_url: str
) -> None:
    ten_minutes = timedelta(minutes=10)
    older = sample(NOON - ten_minutes - timedelta(seconds=1))
    newer = sample(NOON - ten_minutes + timedelta(seconds=1))
    for record in (older, newer):
        metastore.record_read_progress(PIPELINE, record, ten_minutes)

    metastore.record_read_progress(PIPELINE, sample(NOON), ten_minutes)

    assert stored(metastore_url, since=NOON - timedelta(days=1)) == [newer, sample(NOON)]


def test_should_tell_where_the_span_of_a_sample_began() -> None:
    assert sample(NOON).follows_at == NOON - timedelta(seconds=30)


def test_should_report_no_samples_on_a_schema_older_than_the_table(metastore_url: str) -> None:
    command.upgrade(alembic_config(url=metastore_url), "0006")

    assert stored(metastore_url, since=NOON) is None
