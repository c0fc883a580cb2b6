from __future__ import annotations

import logging

import pytest

from pipeline_core.ring import FatalExceptionHandler


def test_should_log_and_reraise_event_exception(caplog: pytest.LogCaptureFixture) -> None:
    error = RuntimeError("poison")
    with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError) as raised:
        FatalExceptionHandler().handle_event_exception(error, 7, "event-7")
    assert raised.value is error
    assert "sequence 7" in caplog.text
    assert caplog.records[0].exc_info is not None


def test_should_only_log_lifecycle_exceptions(caplog: pytest.LogCaptureFixture) -> None:
    handler = FatalExceptionHandler()
    with caplog.at_level(logging.ERROR):
        handler.handle_on_start_exception(RuntimeError("start"))
        handler.handle_on_shutdown_exception(RuntimeError("shutdown"))
    assert [r.getMessage() for r in caplog.records] == [
        "exception during on_start()",
        "exception during on_shutdown()",
    ]
