from __future__ import annotations

import sys
from concurrent.futures import CancelledError, Future

import pytest

from pipeline_core.mailbox import MAX_PRIORITY, MIN_PRIORITY, Mail


def test_priority_bounds_are_minus_one_and_the_largest_int() -> None:
    assert MIN_PRIORITY == -1
    assert sys.maxsize == MAX_PRIORITY


def test_run_calls_the_action() -> None:
    calls: list[int] = []
    Mail(lambda: calls.append(1), MIN_PRIORITY, "append").run()
    assert calls == [1]


def test_run_without_future_propagates_the_exception() -> None:
    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        Mail(fail, MIN_PRIORITY, "fail").run()


def test_str_renders_the_description_with_its_arguments() -> None:
    assert str(Mail(lambda: None, 3, "checkpoint %d for %s", 7, "dag")) == "checkpoint 7 for dag"


def test_str_without_arguments_is_the_format_verbatim() -> None:
    assert str(Mail(lambda: None, 3, "100% done")) == "100% done"


def test_str_survives_a_format_that_does_not_match_its_arguments() -> None:
    assert str(Mail(lambda: None, 3, "no placeholder", 42)) == "no placeholder (42)"


def test_repr_names_description_and_priority() -> None:
    assert repr(Mail(lambda: None, 5, "tick %d", 1)) == "Mail('tick 1', priority=5)"


@pytest.mark.parametrize("priority", [MIN_PRIORITY - 1, MAX_PRIORITY + 1])
def test_priority_out_of_range_is_rejected(priority: int) -> None:
    with pytest.raises(ValueError, match="priority"):
        Mail(lambda: None, priority, "bad")


def test_running_a_mail_with_a_future_completes_the_future() -> None:
    future: Future[int] = Future()
    Mail(lambda: 42, MIN_PRIORITY, "answer", future=future).run()
    assert future.result(timeout=0) == 42


def test_exception_of_a_mail_with_a_future_goes_to_the_future_not_the_caller() -> None:
    def fail() -> int:
        raise KeyError("missing")

    future: Future[int] = Future()
    Mail(fail, MIN_PRIORITY, "fail", future=future).run()
    with pytest.raises(KeyError, match="missing"):
        future.result(timeout=0)


def test_base_exception_of_a_mail_with_a_future_is_stored_and_reraised() -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    future: Future[None] = Future()
    with pytest.raises(KeyboardInterrupt):
        Mail(interrupt, MIN_PRIORITY, "interrupt", future=future).run()
    assert isinstance(future.exception(timeout=0), KeyboardInterrupt)


def test_a_cancelled_mail_does_not_run_its_action() -> None:
    calls: list[int] = []
    future: Future[None] = Future()
    mail = Mail(lambda: calls.append(1), MIN_PRIORITY, "append", future=future)
    assert mail.try_cancel()
    mail.run()
    assert calls == []
    with pytest.raises(CancelledError):
        future.result(timeout=0)


def test_try_cancel_without_future_is_false() -> None:
    assert not Mail(lambda: None, MIN_PRIORITY, "plain").try_cancel()
