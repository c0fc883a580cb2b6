"""Helpers shared by the sink tests: batches, wired channels, scripted sinks and processors."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TypeVar

from pipeline_core.sinks import (
    BatchChannel,
    DeliveryBatch,
    InMemorySinkStateStore,
    RetryPolicy,
    Sink,
    SinkHealth,
    SinkProcessor,
    Status,
)
from pipeline_core.source import Chunk, LongLine, count_lines
from pipeline_core.testing import StubSink

FP_A = "00000000000000aa"
FP_B = "00000000000000bb"
JOIN_TIMEOUT = 10.0

S = TypeVar("S", bound=Sink)


def chunk(data: bytes, start: int = 0, fingerprint: str = FP_A, source: str = "access") -> Chunk:
    return Chunk(source, fingerprint, start, data, count_lines(data))


def long_line_chunk(
    start: int = 0, line_bytes: int = 3_000_000, prefix: bytes = b"x" * 1024
) -> Chunk:
    """An over-long line as the reader hands it out: ``prefix`` standing for ``line_bytes``
    bytes of file ``FP_A`` and their newline."""
    return Chunk("access", FP_A, start, prefix, 1, long_line=LongLine(line_bytes, True))


def make_batch(sequence: int = 0, data: bytes = b"GET /\n") -> DeliveryBatch:
    """A batch of one chunk; ``sequence`` tells batches apart."""
    return DeliveryBatch((chunk(data, start=sequence * 100),), sequence)


def wire(sinks: Iterable[S], *batches: DeliveryBatch, capacity: int = 16) -> BatchChannel:
    """One channel holding ``batches``, set as the channel of every sink."""
    channel = BatchChannel(capacity)
    for batch in batches:
        channel.put(batch)
    for sink in sinks:
        sink.set_channel(channel)
    return channel


def sequences(sink: StubSink) -> list[int]:
    """The sequences of the batches ``sink`` delivered, in order."""
    return [batch.sequence for batch in sink.delivered]


Outcome = Status | Exception


class ScriptedSink(StubSink):
    """Answers its ``script`` one call at a time (a status, or an exception to raise), then
    delivers from the channel like a ``RecordingSink``."""

    def __init__(self, name: str, *script: Outcome) -> None:
        super().__init__(name)
        self.script = list(script)

    def respond(self) -> Status:
        if not self.script:
            return self.deliver_from_channel()
        outcome = self.script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class ScriptedProcessor(SinkProcessor):
    """A processor that answers its ``script`` one call at a time, then ``default``.

    Records the threads it was started, processed and stopped on.
    """

    def __init__(
        self, *script: Outcome, default: Outcome = Status.BACKOFF, group: str = "group"
    ) -> None:
        super().__init__(group, [])
        self.script = list(script)
        self.default = default
        self.calls = 0
        self.lifecycle: list[tuple[str, str]] = []
        self.fail_start: Exception | None = None

    def start(self) -> None:
        if self.fail_start is not None:
            raise self.fail_start
        self.lifecycle.append(("start", threading.current_thread().name))

    def stop(self) -> None:
        self.lifecycle.append(("stop", threading.current_thread().name))

    def process(self) -> Status:
        self.calls += 1
        outcome = self.script.pop(0) if self.script else self.default
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class RecordingStateStore(InMemorySinkStateStore):
    """An in-memory store that also keeps every ``save`` call and counts ``load`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[tuple[str, str, SinkHealth]] = []
        self.loads = 0

    def load(self, group: str) -> dict[str, SinkHealth]:
        self.loads += 1
        return dict(super().load(group))

    def save(self, group: str, sink: str, health: SinkHealth) -> None:
        self.saves.append((group, sink, health))
        super().save(group, sink, health)


# -- destination sinks (http, sql, file, trial) --------------------------------------------------


def line_batch(
    *lines: bytes,
    sequence: int = 0,
    start: int = 0,
    fingerprint: str = FP_A,
    source: str = "access",
) -> DeliveryBatch:
    """A batch of one chunk holding ``lines``, each ending with a newline."""
    return DeliveryBatch(
        (chunk(b"".join(line + b"\n" for line in lines), start, fingerprint, source),), sequence
    )


class SleepLog(list[float]):
    """A ``RetryPolicy.sleep`` that records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def fast_retry(max_attempts: int = 3, sleeps: SleepLog | None = None) -> RetryPolicy:
    """A retry policy that never really sleeps (waits go to ``sleeps``)."""
    return RetryPolicy(
        max_attempts=max_attempts, sleep=sleeps if sleeps is not None else SleepLog()
    )
