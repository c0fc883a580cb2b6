from __future__ import annotations

from pipeline_core.ring import RewindableException, RewindAction, SimpleBatchRewindStrategy


def test_should_always_rewind() -> None:
    strategy = SimpleBatchRewindStrategy()
    for attempts in (1, 2, 100, 10_000):
        assert strategy.handle_rewind_exception(RewindableException(), attempts) is (
            RewindAction.REWIND
        )
