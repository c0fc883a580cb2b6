"""Sampling what a pipeline's collector read into the metastore, for the state page's charts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from pipeline_core.collector._metrics import unread_bytes
from pipeline_core.metastore import READ_PROGRESS_RETENTION, Metastore, ReadProgressRecord, utcnow
from pipeline_core.source import TrackedFile

log = logging.getLogger(__name__)

QUIET_SAMPLE_SECONDS = 300.0
"""A sample that would record nothing new (nothing read since the last one, as many bytes
unread) is left out until the last recorded one is this old: the next recorded sample's
``elapsed_s`` spans the quiet time, so the charts' rates stay exact. Recorded every 30 s, the
samples of an idle collector serving 100 pipelines were 3 transactions a second, most of its
mailbox thread's cost."""


class ReadProgressSampler:
    """Records one :class:`~pipeline_core.metastore.ReadProgressRecord` of a pipeline at a
    time: the bytes and lines read since the previous sample and the bytes its files hold past
    their read offsets now. The collector samples when reading starts, every ``every_s``
    seconds while it serves the pipeline, and at each seal; a sample with nothing new is left
    out for up to ``QUIET_SAMPLE_SECONDS``.

    A sample the metastore refuses is dropped with a warning; what it counted goes into the
    next one, so the samples always add up to what was read.

    Threading model: owned by the collector's mailbox thread (which owns the counters and the
    tracked files it reads).
    """

    def __init__(
        self,
        metastore: Metastore,
        pipeline: str,
        host: str,
        *,
        every_s: float,
        retention: timedelta = READ_PROGRESS_RETENTION,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metastore = metastore
        self.retention = retention
        """Samples of this pipeline's host older than this are removed as a new one is
        recorded (``collector.progress_retain_hours``)."""
        self._pipeline = pipeline
        self._host = host
        self._every_s = every_s
        self._clock = clock
        self._last_try: float | None = None
        self._mark_at = clock()
        self._mark_lines = 0
        self._mark_bytes = 0
        self._mark_unread: int | None = None
        """The unread bytes of the last recorded sample (None: none recorded yet)."""

    def due(self, now: float, *, early: float = 0.0) -> bool:
        """Whether a sample is due at monotonic time ``now`` (the first one is, at once);
        ``early``: or at least this share of its period early."""
        return self._last_try is None or now - self._last_try >= self._every_s * (1 - early)

    @property
    def metastore(self) -> Metastore:
        return self._metastore

    @property
    def pipeline(self) -> str:
        return self._pipeline

    def take(
        self, lines_read: int, bytes_read: int, files: Iterable[TrackedFile]
    ) -> ProgressSample | None:
        """The sample to record now, given the collector's running totals of lines and bytes
        read for the pipeline and its tracked files; None when it holds nothing new (see
        ``QUIET_SAMPLE_SECONDS``). Once the metastore holds it, :meth:`recorded`; if it
        refused it, nothing: what it counted goes into the next one."""
        now = self._clock()
        self._last_try = now
        unread = unread_bytes(files)
        if (
            unread == self._mark_unread
            and (lines_read, bytes_read) == (self._mark_lines, self._mark_bytes)
            and now - self._mark_at < QUIET_SAMPLE_SECONDS
        ):
            return None
        record = ReadProgressRecord(
            host=self._host,
            sampled_at=utcnow(),
            elapsed_s=max(now - self._mark_at, 0.0),
            bytes_read=bytes_read - self._mark_bytes,
            lines_read=lines_read - self._mark_lines,
            unread_bytes=unread,
        )
        return ProgressSample(record, now, lines_read, bytes_read)

    def recorded(self, sample: ProgressSample) -> None:
        """The metastore holds ``sample`` (from :meth:`take`): the next counts from it."""
        self._mark_at, self._mark_lines, self._mark_bytes = sample.at, sample.lines, sample.bytes
        self._mark_unread = sample.record.unread_bytes

    def sample(self, lines_read: int, bytes_read: int, files: Iterable[TrackedFile]) -> bool:
        """Record a sample now (:meth:`take`, then the metastore); False when the metastore
        refused it."""
        taken = self.take(lines_read, bytes_read, files)
        return taken is None or bool(record_samples([(self, taken)]))


@dataclass(frozen=True)
class ProgressSample:
    """A sample :meth:`ReadProgressSampler.take` made, and the totals it counts up to."""

    record: ReadProgressRecord
    at: float
    """When it was taken (the sampler's clock)."""
    lines: int
    bytes: int


def record_samples(
    taken: Sequence[tuple[ReadProgressSampler, ProgressSample]],
) -> list[ReadProgressSampler]:
    """Record samples taken together, those of one metastore in one transaction (each commit
    wakes every collector watching the metastore for requests: a hundred pipelines' samples
    one by one were a hundred); returns the samplers recorded. A metastore that refuses them
    is warned of; their counts go into the next ones."""
    recorded: list[ReadProgressSampler] = []
    by_metastore: dict[int, list[tuple[ReadProgressSampler, ProgressSample]]] = {}
    for sampler, sample in taken:
        by_metastore.setdefault(id(sampler.metastore), []).append((sampler, sample))
    for batch in by_metastore.values():
        try:
            batch[0][0].metastore.record_read_progress_many(
                [(sampler.pipeline, sample.record, sampler.retention) for sampler, sample in batch]
            )
        except Exception as exc:  # counted again in the next samples
            log.warning(
                "cannot record the read progress of %s: %s",
                ", ".join(sampler.pipeline for sampler, _ in batch),
                exc,
            )
            continue
        for sampler, sample in batch:
            sampler.recorded(sample)
            recorded.append(sampler)
    return recorded
