"""StopRequest: stop signals kept from the start, acted on once something can stop."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from pipeline_core._stop_request import StopRequest


@pytest.fixture
def stop() -> Iterator[StopRequest]:
    request = StopRequest.install(ignore=[signal.SIGHUP])
    try:
        yield request
    finally:
        request.uninstall()


def deliver(number: int) -> None:
    """Send ``number`` to this process; its handler has run when this returns."""
    signal.pthread_kill(threading.main_thread().ident or 0, number)


def test_should_keep_a_stop_signal_that_comes_before_there_is_anything_to_stop(
    stop: StopRequest,
) -> None:
    assert not stop.requested

    deliver(signal.SIGTERM)

    assert stop.requested
    assert stop.signal_number == signal.SIGTERM
    stopped = threading.Event()
    stop.when_requested(stopped.set)
    assert stopped.wait(timeout=10)


def test_should_act_on_a_later_signal_on_a_thread_of_its_own(stop: StopRequest) -> None:
    acted_on: list[str] = []
    stopped = threading.Event()

    def action() -> None:
        acted_on.append(threading.current_thread().name)
        stopped.set()

    stop.when_requested(action)
    assert not stopped.wait(timeout=0.1)

    deliver(signal.SIGINT)

    assert stopped.wait(timeout=10)
    assert acted_on == ["sluice-stop"]
    assert stop.signal_number == signal.SIGINT


def test_should_ignore_the_given_signals_while_installed(stop: StopRequest) -> None:
    deliver(signal.SIGHUP)  # would end the process by default

    assert not stop.requested


def test_should_give_the_signals_back_and_never_act_after_uninstall() -> None:
    before = {n: signal.getsignal(n) for n in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    stop = StopRequest.install(ignore=[signal.SIGHUP])
    acted = threading.Event()
    stop.when_requested(acted.set)

    stop.uninstall()

    assert {n: signal.getsignal(n) for n in before} == before
    assert not acted.wait(timeout=0.2)
