"""Sinks for trials and benchmarks: ``NullSink`` drops batches, ``StdoutSink`` prints lines."""

from __future__ import annotations

import sys
from typing import TextIO

from pipeline_core.sinks._batch import DeliveryBatch
from pipeline_core.sinks._sink import BatchSink


class NullSink(BatchSink):
    """Takes every batch and drops it (``Status.READY`` per batch), counting what it dropped.

    Useful to measure the pipeline without a destination, and as a stand-in in tests.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.batches = 0
        """Batches taken."""
        self.lines = 0
        """Lines taken."""
        self.bytes = 0
        """Line bytes taken, newlines included."""

    def deliver(self, batch: DeliveryBatch) -> None:
        self.batches += 1
        self.lines += batch.lines
        self.bytes += batch.bytes


class StdoutSink(BatchSink):
    """Writes every line as text to ``stream`` (standard output by default, looked up at each
    batch so a redirected ``sys.stdout`` is honoured), one line per line, and flushes after each
    batch. Invalid UTF-8 is replaced by U+FFFD; whole chunks are decoded at once. A line longer
    than ``max_line_bytes`` is written as its first bytes followed by
    ``[... <length> bytes in all]``."""

    def __init__(self, name: str, stream: TextIO | None = None) -> None:
        super().__init__(name)
        self._stream = stream

    def deliver(self, batch: DeliveryBatch) -> None:
        stream = self._stream or sys.stdout
        for chunk in batch.chunks:
            text = chunk.data.decode("utf-8", errors="replace")
            if chunk.long_line is not None:
                text += f"[... {chunk.long_line.length} bytes in all]"
            stream.write(text if not text or text.endswith("\n") else text + "\n")
        stream.flush()
