"""A chunk as the acker tracks it."""

from __future__ import annotations

import dataclasses

from pipeline_core.source import Chunk, LongLine
from pipeline_core.staging_contract import EventRuns, EventSpan


def test_a_chunk_tracked_on_an_edge_keeps_every_other_field() -> None:
    # Every field set to something other than its default, so that a field added to Chunk
    # and forgotten by tracked_as fails here.
    chunk = Chunk(
        source="app",
        fingerprint="00ff00ff00ff00ff",
        start=4096,
        data=bytearray(b"Traceback (most recent call last):\n  x\n"),
        lines=2,
        tree=1,
        edge=2,
        replay=True,
        long_line=LongLine(9000, terminated=True),
        events=EventRuns.of([EventSpan(0, 2)]),
    )
    assert all(getattr(chunk, f.name) != f.default for f in dataclasses.fields(Chunk) if f.init)

    tracked = chunk.tracked_as(tree=7, edge=11)

    assert tracked == dataclasses.replace(chunk, tree=7, edge=11)
    assert tracked.data is chunk.data
