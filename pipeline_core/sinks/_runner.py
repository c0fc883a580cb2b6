"""``SinkRunner``: polls a sink group's processor and backs off when it has nothing to do."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from enum import Enum

from pipeline_core.errors import EventDeliveryException
from pipeline_core.sinks._clock import SYSTEM_CLOCK, Clock
from pipeline_core.sinks._processor import SinkProcessor
from pipeline_core.sinks._status import Status

log = logging.getLogger(__name__)


class RunnerOutcome(Enum):
    """What one :meth:`SinkRunner.run_once` call came to."""

    DELIVERED = "delivered"
    """The processor answered ``Status.READY``: poll again at once."""
    BACKOFF = "backoff"
    """The processor answered ``Status.BACKOFF``; the runner has backed off."""
    FAILED = "failed"
    """The processor raised; the runner has waited ``max_backoff_sleep``."""


@dataclass(frozen=True)
class RunnerCounters:
    """A snapshot of a runner's counters (Flume's ``runner.*`` counter group).

    Attributes:
        backoffs: ``process()`` calls that answered ``BACKOFF``.
        consecutive_backoffs: ``BACKOFF`` answers since the last ``READY``; the next backoff
            sleeps ``min((consecutive_backoffs + 1) * increment, max_backoff_sleep)``.
        delivery_errors: ``process()`` calls that raised ``EventDeliveryException``.
        errors: ``process()`` calls that raised anything else.
        deliveries: ``process()`` calls that answered ``READY``.
    """

    backoffs: int = 0
    consecutive_backoffs: int = 0
    delivery_errors: int = 0
    errors: int = 0
    deliveries: int = 0


class SinkRunner:
    """Drives one sink group: calls ``processor.process()`` and backs off (Flume's
    ``SinkRunner`` with its ``PollingRunner``).

    After a ``BACKOFF`` answer the runner waits ``min(n * backoff_sleep_increment,
    max_backoff_sleep)`` seconds, ``n`` being the consecutive ``BACKOFF`` answers (1, 2, 3, 4,
    5, 5, ... seconds with the defaults); a ``READY`` answer resets ``n``. When ``process()``
    raises, the error is logged and counted and the runner waits ``max_backoff_sleep``.

    Threading model: the runner has one delivery thread, the only one that calls the
    processor. Either :meth:`start` creates it (a daemon thread named
    ``sluice-sink-runner-<group>``, polling until :meth:`stop`), or another component's
    thread calls :meth:`run_once` in a loop and checks :attr:`stopped` between calls. Never
    both. :meth:`stop`, :attr:`stopped`, :attr:`counters` and :attr:`last_error` may be used
    from any thread; :meth:`stop` ends a wait at once, and every later wait returns at once.

    Lifecycle: :meth:`start` starts the processor on the calling thread (so that a failure
    to start raises there) and then the polling thread, which stops the processor after its
    last ``process()`` call; a runner is started at most once. A caller that uses
    :meth:`run_once` without :meth:`start` starts and stops the processor itself.

    Args:
        processor: the sink group's policy.
        backoff_sleep_increment: seconds added to the wait per consecutive ``BACKOFF``.
        max_backoff_sleep: the longest wait, and the wait after a failure, in seconds.
        clock: how the runner waits (a fake clock in tests).

    Raises:
        ValueError: if a duration is negative.
    """

    def __init__(
        self,
        processor: SinkProcessor,
        *,
        backoff_sleep_increment: float = 1.0,
        max_backoff_sleep: float = 5.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if backoff_sleep_increment < 0 or max_backoff_sleep < 0:
            raise ValueError("backoff_sleep_increment and max_backoff_sleep must be >= 0")
        self.processor = processor
        self.backoff_sleep_increment = backoff_sleep_increment
        self.max_backoff_sleep = max_backoff_sleep
        self._clock = clock
        self._stop_event = threading.Event()
        self._counters = RunnerCounters()  # replaced (never mutated) by the delivery thread
        self._thread: threading.Thread | None = None
        self._lifecycle_lock = threading.Lock()  # guards _thread
        self._logged_failures = 0  # failures counted when the last delivery succeeded
        self.last_error: BaseException | None = None
        """The last exception ``process()`` raised, or ``None``."""

    def __repr__(self) -> str:
        return f"SinkRunner({self.processor!r})"

    @property
    def counters(self) -> RunnerCounters:
        """The counters as of the last completed :meth:`run_once`."""
        return self._counters

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called: a ``run_once`` loop should end."""
        return self._stop_event.is_set()

    @property
    def running(self) -> bool:
        """Whether the runner's own polling thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def run_once(self) -> RunnerOutcome:
        """Call ``processor.process()`` once and back off as its answer requires.

        Never raises for a processor failure: the exception is logged, counted and kept in
        :attr:`last_error`. Call it from the delivery thread only.
        """
        try:
            status = self.processor.process()
        except Exception as exc:
            if self._counters.delivery_errors + self._counters.errors == self._logged_failures:
                # The first failure of a streak with its traceback, then one line each.
                log.error(
                    "sink group %r: unable to deliver a batch", self.processor.group, exc_info=True
                )
            else:
                log.warning("sink group %r: still unable to deliver: %s", self.processor.group, exc)
            self.last_error = exc
            if isinstance(exc, EventDeliveryException):
                self._update(delivery_errors=self._counters.delivery_errors + 1)
            else:
                self._update(errors=self._counters.errors + 1)
            self._clock.wait(self._stop_event, self.max_backoff_sleep)
            return RunnerOutcome.FAILED
        if status is Status.BACKOFF:
            consecutive = self._counters.consecutive_backoffs + 1
            self._update(backoffs=self._counters.backoffs + 1, consecutive_backoffs=consecutive)
            seconds = min(consecutive * self.backoff_sleep_increment, self.max_backoff_sleep)
            self._clock.wait(self._stop_event, seconds)
            return RunnerOutcome.BACKOFF
        self._update(deliveries=self._counters.deliveries + 1, consecutive_backoffs=0)
        self._logged_failures = self._counters.delivery_errors + self._counters.errors
        return RunnerOutcome.DELIVERED

    def pause(self) -> bool:
        """Wait the longest backoff (``max_backoff_sleep``) unless the runner is stopped
        meanwhile: a failure outside ``process()`` (a seal waiting for room) waits as one in
        it would. Returns whether the runner was stopped. From the delivery thread only."""
        return self._clock.wait(self._stop_event, self.max_backoff_sleep)

    def start(self) -> None:
        """Start the processor, then the polling thread.

        Raises:
            RuntimeError: if the runner was started or stopped before.
        """
        with self._lifecycle_lock:
            if self._thread is not None or self._stop_event.is_set():
                raise RuntimeError(f"{self!r} was started or stopped already")
            self.processor.start()
            self._thread = threading.Thread(
                target=self._poll,
                name=f"sluice-sink-runner-{self.processor.group}",
                daemon=True,
            )
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the runner to stop, end its current wait, and join its thread.

        Returns whether the polling thread has ended within ``timeout`` seconds (``True`` when
        there was none). A ``process()`` call in flight is not interrupted: the thread ends
        (and stops the processor) when it returns.
        """
        self._stop_event.set()
        with self._lifecycle_lock:
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        if thread.is_alive():
            log.warning("%r did not stop within %.1f s", self, timeout)
            return False
        return True

    def _poll(self) -> None:
        try:
            while not self._stop_event.is_set():
                self.run_once()
        finally:
            try:
                self.processor.stop()
            except Exception:
                log.exception("sink group %r: stopping the processor failed", self.processor.group)

    def _update(self, **changes: int) -> None:
        self._counters = replace(self._counters, **changes)
