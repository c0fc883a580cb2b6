from __future__ import annotations

import time

import pytest

from pipeline_core.ring import (
    NanosecondPauseBatchRewindStrategy,
    RewindableException,
    RewindAction,
)


def test_should_pause_then_rewind() -> None:
    strategy = NanosecondPauseBatchRewindStrategy(30_000_000)
    started = time.monotonic()
    assert strategy.handle_rewind_exception(RewindableException(), 1) is RewindAction.REWIND
    assert time.monotonic() - started >= 0.03


def test_should_reject_negative_pause() -> None:
    with pytest.raises(ValueError):
        NanosecondPauseBatchRewindStrategy(-1)
