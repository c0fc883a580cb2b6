from __future__ import annotations

import logging

import pytest

from pipeline_core.ring import IgnoreExceptionHandler


def test_should_log_and_return_on_event_exception(caplog: pytest.LogCaptureFixture) -> None:
    handler = IgnoreExceptionHandler()
    with caplog.at_level(logging.WARNING):
        handler.handle_event_exception(RuntimeError("poison"), 3, "event-3")
        handler.handle_on_start_exception(RuntimeError("start"))
        handler.handle_on_shutdown_exception(RuntimeError("shutdown"))
    assert "skipping sequence 3" in caplog.records[0].getMessage()
    assert len(caplog.records) == 3
