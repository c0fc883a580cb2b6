"""ReadProgressSampler: what a collector read, and had not read, sampled into the metastore."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import cast

import pytest

from pipeline_core.collector import Collector
from pipeline_core.collector._read_progress import (
    QUIET_SAMPLE_SECONDS,
    ReadProgressSampler,
    record_samples,
)
from pipeline_core.errors import MetastoreError
from pipeline_core.metastore import Metastore, ReadProgressRecord, open_view
from pipeline_core.source import TrackedFile
from pipeline_core.testing import FakeClock, append
from tests.support.pipelines import load

PIPELINE = "web_access"
HOST = "test-host"


class RecordingMetastore:
    """Keeps the samples it is given; refuses the first ``outages`` of them."""

    def __init__(self, outages: int = 0) -> None:
        self.outages = outages
        self.samples: list[ReadProgressRecord] = []

        self.transactions = 0

    def record_read_progress(self, pipeline: str, sample: ReadProgressRecord) -> None:
        self.record_read_progress_many([(pipeline, sample, timedelta(days=7))])

    def record_read_progress_many(
        self, samples: list[tuple[str, ReadProgressRecord, timedelta]]
    ) -> None:
        assert all(pipeline.startswith(PIPELINE) for pipeline, _, _ in samples)
        if self.outages:
            self.outages -= 1
            raise MetastoreError("the metastore is unreachable")
        self.transactions += 1
        self.samples += [sample for _, sample, _ in samples]


def sampler(
    store: RecordingMetastore, clock: FakeClock, every_s: float = 30
) -> ReadProgressSampler:
    return ReadProgressSampler(
        cast(Metastore, store), PIPELINE, HOST, every_s=every_s, clock=clock.time
    )


def test_should_be_due_at_once_then_every_interval() -> None:
    clock = FakeClock()
    progress = sampler(RecordingMetastore(), clock)
    assert progress.due(clock.now)

    progress.sample(0, 0, [])

    assert not progress.due(clock.now + 29.9)
    assert progress.due(clock.now + 30)


def test_should_count_what_was_read_since_the_previous_sample() -> None:
    clock = FakeClock()
    store = RecordingMetastore()
    progress = sampler(store, clock)
    clock.now += 2
    progress.sample(10, 1000, [])
    clock.now += 30
    progress.sample(25, 4000, [])

    first, second = store.samples
    assert (first.elapsed_s, first.lines_read, first.bytes_read) == (2, 10, 1000)
    assert (second.elapsed_s, second.lines_read, second.bytes_read) == (30, 15, 3000)
    assert second.host == HOST and second.sampled_at.tzinfo is not None


def test_should_carry_a_refused_sample_over_to_the_next(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    store = RecordingMetastore(outages=1)
    progress = sampler(store, clock)
    clock.now += 30

    assert not progress.sample(5, 500, [])
    assert not progress.due(clock.now)  # no retry at every turn while the metastore is down
    clock.now += 30
    assert progress.sample(8, 800, [])

    (only,) = store.samples
    assert (only.elapsed_s, only.lines_read, only.bytes_read) == (60, 8, 800)
    assert "cannot record the read progress" in caplog.text


def test_should_record_the_samples_of_one_metastore_in_one_transaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hundred idle pipelines' samples one commit each were a hundred wake-ups of every
    collector watching the metastore for requests."""
    clock = FakeClock()
    shared, other = RecordingMetastore(outages=1), RecordingMetastore()
    samplers = [
        ReadProgressSampler(
            cast(Metastore, store), f"{PIPELINE}_{n}", HOST, every_s=30, clock=clock.time
        )
        for n, store in enumerate([shared, shared, shared, other])
    ]
    clock.now += 5

    def take_all(lines: int) -> None:
        taken = [(s, s.take(lines, lines * 100, [])) for s in samplers]
        record_samples([(s, sample) for s, sample in taken if sample is not None])

    take_all(10)  # the shared metastore refuses its three: counted again in the next
    clock.now += 30
    take_all(12)

    assert (shared.transactions, other.transactions) == (1, 2)
    assert [s.lines_read for s in shared.samples] == [12, 12, 12]
    assert [s.lines_read for s in other.samples] == [10, 2]
    assert [s.elapsed_s for s in shared.samples] == [35, 35, 35]
    assert "cannot record the read progress of web_access_0, web_access_1" in caplog.text


def stored(url: str, hours: float = 1) -> list[ReadProgressRecord]:
    with open_view(url) as view:
        assert view is not None
        found = view.read_progress(PIPELINE, datetime.now(timezone.utc) - timedelta(hours=hours))
    assert found is not None
    return found


@pytest.mark.timeout(60)
def test_should_sample_the_backlog_when_reading_starts_and_what_was_read_at_the_seal(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(tmp_path, metastore_url)
    written = [f"line {i:04d}".encode() for i in range(300)]
    append(tmp_path / "logs" / "access.log", *written)
    size = sum(len(line) + 1 for line in written)

    Collector(config, metastore).run_once()

    samples = stored(metastore_url)
    first, last = samples[0], samples[-1]
    assert (first.bytes_read, first.unread_bytes) == (0, size)
    assert last.unread_bytes == 0
    assert sum(s.bytes_read for s in samples) == size
    assert sum(s.lines_read for s in samples) == len(written)
    assert all(s.host == HOST for s in samples)


@pytest.mark.timeout(60)
def test_should_remove_samples_older_than_the_configured_retention(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(tmp_path, metastore_url, collector={"progress_retain_hours": 1})
    stale = ReadProgressRecord(
        host=HOST,
        sampled_at=datetime.now(timezone.utc) - timedelta(hours=1, minutes=1),
        elapsed_s=30,
        bytes_read=1,
        lines_read=1,
        unread_bytes=0,
    )
    metastore.record_read_progress(PIPELINE, stale, timedelta(days=7))
    assert stored(metastore_url, hours=2) == [stale]
    append(tmp_path / "logs" / "access.log", b"a line")

    Collector(config, metastore).run_once()

    samples = stored(metastore_url, hours=2)
    assert samples and stale not in samples
    assert sum(s.bytes_read for s in samples) == len(b"a line\n")


@pytest.mark.timeout(60)
def test_should_count_each_run_from_where_it_starts(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(tmp_path, metastore_url)
    log = tmp_path / "logs" / "access.log"
    append(log, b"first run")
    Collector(config, metastore).run_once()
    before = len(stored(metastore_url))
    append(log, b"the second run's line")

    Collector(config, metastore).run_once()

    second_run = stored(metastore_url)[before:]
    assert second_run[0].unread_bytes == len(b"the second run's line\n")
    assert sum(s.bytes_read for s in second_run) == len(b"the second run's line\n")


def test_should_leave_out_samples_with_nothing_new_for_a_while() -> None:
    """Nothing read and as much unread: no sample for QUIET_SAMPLE_SECONDS, then one whose
    elapsed time spans the quiet ones; anything read is sampled at its next turn."""
    clock = FakeClock()
    store = RecordingMetastore()
    progress = sampler(store, clock)
    progress.sample(10, 1000, [])
    for _ in range(int(QUIET_SAMPLE_SECONDS // 30) - 1):
        clock.now += 30
        assert progress.sample(10, 1000, [])
    assert len(store.samples) == 1

    clock.now += 30
    progress.sample(10, 1000, [])
    clock.now += 30
    progress.sample(11, 1100, [])

    _, quiet, busy = store.samples
    assert (quiet.elapsed_s, quiet.lines_read, quiet.bytes_read) == (QUIET_SAMPLE_SECONDS, 0, 0)
    assert (busy.elapsed_s, busy.lines_read, busy.bytes_read) == (30, 1, 100)


class GrowingFile:
    """What the sampler reads of a tracked file: its size (through its descriptor) and offset."""

    fd = 3

    def __init__(self) -> None:
        self.bytes = 0
        self.read_offset = 0

    def size(self) -> int:
        return self.bytes


def test_should_sample_at_once_what_is_left_to_read_when_it_changes() -> None:
    """A file grew, nothing read yet: its unread bytes are sampled at the next turn."""
    clock = FakeClock()
    store = RecordingMetastore()
    progress = sampler(store, clock)
    grown = GrowingFile()
    files = [cast(TrackedFile, grown)]
    progress.sample(0, 0, files)
    clock.now += 30
    progress.sample(0, 0, files)
    grown.bytes = 500
    clock.now += 30
    progress.sample(0, 0, files)

    assert [(s.elapsed_s, s.unread_bytes) for s in store.samples] == [(0, 0), (60, 500)]
