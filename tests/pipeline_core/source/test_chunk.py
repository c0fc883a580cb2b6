"""A chunk as the acker tracks it, and its lines counted."""

from __future__ import annotations

import dataclasses
import random

import pytest

from pipeline_core.source import Chunk, LongLine, _chunk, count_lines
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


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "without-compiler"])
@pytest.mark.parametrize(
    # Around the compiled count's 16-byte steps, its sums every 255 steps, and the size from
    # which either path lets the GIL go.
    "size",
    [1, 15, 16, 17, 255 * 16 - 1, 255 * 16, 255 * 16 + 17, 64 * 1024 - 1, 64 * 1024, 300_001],
)
def test_lines_are_counted_as_the_handoff_sink_splits_them(
    compiled: bool, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:
        monkeypatch.setattr(_chunk, "_compiled", None)
    elif _chunk._compiled is None:
        pytest.fail("the compiled extension is not built (make setup builds it)")
    rng = random.Random(size)
    for newline_share in (0.0, 0.02, 0.5, 1.0):
        data = bytearray(
            10 if rng.random() < newline_share else rng.choice(b"ab \t") for _ in range(size)
        )
        assert count_lines(data) == len(data.splitlines(keepends=True))
