from __future__ import annotations

import pytest

from pipeline_core.ring import (
    AlertException,
    InsufficientCapacityException,
    ProcessorAlreadyRunningError,
    RewindableException,
    RingError,
    TimeoutException,
)


@pytest.mark.parametrize(
    "error",
    [
        AlertException,
        InsufficientCapacityException,
        ProcessorAlreadyRunningError,
        RewindableException,
        TimeoutException,
    ],
)
def test_every_ring_error_should_share_one_base(error: type[Exception]) -> None:
    assert issubclass(error, RingError)
    assert issubclass(error, Exception)


def test_rewindable_exception_should_keep_its_cause() -> None:
    cause = ConnectionError("sink unavailable")
    exc = RewindableException(cause)
    assert exc.__cause__ is cause
    assert "sink unavailable" in str(exc)
    assert str(RewindableException()) == "rewind requested"
