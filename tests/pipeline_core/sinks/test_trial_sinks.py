"""NullSink and StdoutSink."""

from __future__ import annotations

import io

import pytest

from pipeline_core.sinks import DeliveryBatch, NullSink, Status, StdoutSink
from tests.pipeline_core.sinks.support import chunk, line_batch, long_line_chunk, wire


def test_null_sink_takes_every_batch_and_counts_it() -> None:
    sink = NullSink("null")
    channel = wire([sink], line_batch(b"a", b"bb"), line_batch(b"ccc", sequence=1))

    assert sink.process() is Status.READY
    assert sink.process() is Status.READY
    assert sink.process() is Status.BACKOFF

    assert len(channel) == 0
    assert (sink.batches, sink.lines, sink.bytes) == (2, 3, 9)


def test_stdout_sink_writes_each_line_to_its_stream() -> None:
    stream = io.StringIO()
    sink = StdoutSink("print", stream)
    batch = DeliveryBatch((chunk(b"one\ntwo\n"), chunk(b"bad \xff utf8\nno newline")), 0)
    wire([sink], batch)

    assert sink.process() is Status.READY

    assert stream.getvalue() == "one\ntwo\nbad \ufffd utf8\nno newline\n"


def test_stdout_sink_writes_an_over_long_line_as_its_prefix_and_its_length() -> None:
    stream = io.StringIO()
    sink = StdoutSink("print", stream)
    long_line = long_line_chunk(start=3, line_bytes=2_000_000, prefix=b"abc")
    wire([sink], DeliveryBatch((chunk(b"ok\n"), long_line, chunk(b"next", long_line.end)), 0))

    assert sink.process() is Status.READY

    assert stream.getvalue() == "ok\nabc[... 2000000 bytes in all]\nnext\n"


def test_stdout_sink_defaults_to_the_current_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    sink = StdoutSink("print")
    wire([sink], line_batch(b"hello"))

    assert sink.process() is Status.READY

    assert capsys.readouterr().out == "hello\n"
