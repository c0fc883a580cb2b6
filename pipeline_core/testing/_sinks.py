"""A fake clock and stub sinks, to test sink groups without destinations or real waiting.

Every stub is a :class:`~pipeline_core.sinks.Sink` that counts its ``process()`` calls in
``calls``, records the batches it delivered in ``delivered`` and notes ``start()``/``stop()``
in ``started``/``stopped``. Delivering means taking the
channel's oldest batch in a transaction, recording it and committing; an empty channel makes
the stub answer ``BACKOFF``. Like any sink, a stub is used from one thread at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pipeline_core.sinks import Clock, DeliveryBatch, Sink, Status

ErrorFactory = Callable[[str], Exception]
"""Builds the exception a stub raises from a message (an exception class will do)."""


class FakeClock:
    """A :class:`~pipeline_core.sinks.Clock` that only moves when told to.

    ``wait`` returns at once: it records the requested seconds in :attr:`waits` and, unless
    the interrupt event is set, advances the time by them. Any thread may use it; each call is
    atomic.
    """

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now
        """The current time, in epoch seconds; assign to set it."""
        self.waits: list[float] = []
        """The ``seconds`` of every ``wait`` call, interrupted or not, in order."""
        self._lock = threading.Lock()

    def time(self) -> float:
        return self.now

    def wait(self, interrupt: threading.Event, seconds: float) -> bool:
        with self._lock:
            self.waits.append(seconds)
            interrupted = interrupt.is_set()
            if not interrupted:
                self.now += seconds
            return interrupted

    def advance(self, seconds: float) -> None:
        """Move the time forward by ``seconds``."""
        with self._lock:
            self.now += seconds


class StubSink(Sink):
    """The base of the stubs: call counting and delivery from the channel."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls = 0
        """How many times ``process()`` was called."""
        self.delivered: list[DeliveryBatch] = []
        """The batches delivered, in order."""
        self.started = False
        """Whether ``start()`` was called."""
        self.stopped = False
        """Whether ``stop()`` was called."""

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def process(self) -> Status:
        self.calls += 1
        return self.respond()

    def respond(self) -> Status:
        """What one ``process()`` call does; the default delivers from the channel."""
        return self.deliver_from_channel()

    def deliver_from_channel(self) -> Status:
        """Take, record and commit the channel's oldest batch; ``BACKOFF`` if there is none."""
        with self.channel.transaction() as transaction:
            batch = transaction.take()
            if batch is None:
                return Status.BACKOFF
            self.delivered.append(batch)
            transaction.commit()
            return Status.READY


class RecordingSink(StubSink):
    """Always delivers."""

    def __init__(self, name: str = "recording") -> None:
        super().__init__(name)


class FailingSink(StubSink):
    """Always raises ``error`` (``ConnectionError`` by default); never takes a batch."""

    def __init__(self, name: str = "failing", *, error: ErrorFactory = ConnectionError) -> None:
        super().__init__(name)
        self.error = error

    def respond(self) -> Status:
        raise self.error(f"sink {self.name!r} is down")


class FlakySink(StubSink):
    """Raises ``error`` on its first ``failures`` calls, then delivers."""

    def __init__(
        self, name: str = "flaky", *, failures: int = 1, error: ErrorFactory = ConnectionError
    ) -> None:
        super().__init__(name)
        self.failures = failures
        self.error = error

    def respond(self) -> Status:
        if self.calls <= self.failures:
            raise self.error(f"sink {self.name!r} failed (call {self.calls} of {self.failures})")
        return self.deliver_from_channel()


class SlowSink(StubSink):
    """Takes ``delay_s`` seconds per call, then delivers.

    With a :class:`FakeClock` it advances that clock instead of sleeping; with another clock it
    waits on it; with none it sleeps.
    """

    def __init__(self, name: str = "slow", *, delay_s: float, clock: Clock | None = None) -> None:
        super().__init__(name)
        self.delay_s = delay_s
        self.clock = clock

    def respond(self) -> Status:
        if isinstance(self.clock, FakeClock):
            self.clock.advance(self.delay_s)
        elif self.clock is not None:
            self.clock.wait(threading.Event(), self.delay_s)
        else:
            time.sleep(self.delay_s)
        return self.deliver_from_channel()


class BackoffSink(StubSink):
    """Always answers ``BACKOFF`` and never takes a batch."""

    def __init__(self, name: str = "backoff") -> None:
        super().__init__(name)

    def respond(self) -> Status:
        return Status.BACKOFF


class SwitchableSink(StubSink):
    """Delivers while :attr:`up`, raises ``error`` (``ConnectionError`` by default) while not."""

    def __init__(
        self, name: str = "switchable", *, up: bool = True, error: ErrorFactory = ConnectionError
    ) -> None:
        super().__init__(name)
        self.up = up
        """Flip it to take the destination down or bring it back."""
        self.error = error

    def respond(self) -> Status:
        if not self.up:
            raise self.error(f"sink {self.name!r} is down")
        return self.deliver_from_channel()
