from __future__ import annotations

import pytest

from pipeline_core.ring import (
    EventuallyGiveUpBatchRewindStrategy,
    RewindableException,
    RewindAction,
)


def test_should_rewind_until_max_attempts_then_throw() -> None:
    strategy = EventuallyGiveUpBatchRewindStrategy(3)
    answers = [strategy.handle_rewind_exception(RewindableException(), n) for n in (1, 2, 3, 4)]
    assert answers == [
        RewindAction.REWIND,
        RewindAction.REWIND,
        RewindAction.THROW,
        RewindAction.THROW,
    ]


def test_should_throw_on_first_failure_with_one_attempt() -> None:
    strategy = EventuallyGiveUpBatchRewindStrategy(1)
    assert strategy.handle_rewind_exception(RewindableException(), 1) is RewindAction.THROW


def test_should_reject_fewer_than_one_attempt() -> None:
    with pytest.raises(ValueError):
        EventuallyGiveUpBatchRewindStrategy(0)
