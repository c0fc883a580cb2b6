"""DefaultSinkProcessor: one sink, no policy."""

from __future__ import annotations

import pytest

from pipeline_core.sinks import DefaultSinkProcessor, Status
from pipeline_core.testing import BackoffSink, FailingSink, RecordingSink
from tests.pipeline_core.sinks.support import make_batch, sequences, wire


def test_should_pass_a_delivery_through() -> None:
    sink = RecordingSink("only")
    wire([sink], make_batch(7))

    assert DefaultSinkProcessor("group", sink).process() is Status.READY

    assert sequences(sink) == [7]


def test_should_pass_a_backoff_through() -> None:
    sink = BackoffSink("idle")

    assert DefaultSinkProcessor("group", sink).process() is Status.BACKOFF

    assert sink.calls == 1


def test_should_let_the_sinks_exception_propagate() -> None:
    processor = DefaultSinkProcessor("group", FailingSink("down"))

    with pytest.raises(ConnectionError):
        processor.process()


def test_should_accept_a_list_of_one_sink() -> None:
    sink = RecordingSink("only")

    processor = DefaultSinkProcessor("group", [sink])

    assert processor.sinks == (sink,)


@pytest.mark.parametrize("count", [0, 2])
def test_should_reject_a_list_that_does_not_hold_exactly_one_sink(count: int) -> None:
    sinks = [RecordingSink(f"s{i}") for i in range(count)]

    with pytest.raises(ValueError, match="exactly one sink"):
        DefaultSinkProcessor("group", sinks)


def test_should_start_and_stop_its_sink() -> None:
    sink = RecordingSink("only")
    processor = DefaultSinkProcessor("group", sink)

    processor.start()
    processor.stop()

    assert sink.started and sink.stopped
