"""QueueLevel: per-key watermarks, fair round robin, downstream skipping, waiting, lifecycle."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline_core.queues import (
    DuplicateQueueError,
    PushResult,
    QueueClosedError,
    QueueLevel,
    UnknownQueueError,
)


def level_with(keys: str, high: int = 4, **kwargs: object) -> QueueLevel[str]:
    level: QueueLevel[str] = QueueLevel("test", **kwargs)  # type: ignore[arg-type]
    for key in keys:
        level.add_queue(key, high)
    return level


def drain(level: QueueLevel[str]) -> list[tuple[str, str]]:
    jobs = []
    while (job := level.find_job()) is not None:
        jobs.append(job)
    return jobs


def test_push_to_unknown_key_raises() -> None:
    with pytest.raises(UnknownQueueError):
        level_with("a").push("z", "x")


def test_adding_a_key_twice_raises() -> None:
    level = level_with("a")
    with pytest.raises(DuplicateQueueError):
        level.add_queue("a", 3)


def test_each_key_has_its_own_watermarks() -> None:
    level = level_with("ab", high=2)
    level.push("a", "a1")
    level.push("a", "a2")
    assert level.push("a", "a3") is PushResult.FULL
    assert level.push("b", "b1") is PushResult.ACCEPTED
    assert level.push("a", "a3", urgent=True) is PushResult.ACCEPTED
    assert (level.size("a"), level.is_writable("a"), level.is_writable("b")) == (3, False, True)


def test_find_job_round_robins_across_keys() -> None:
    level = level_with("abc")
    for key in "abc":
        level.push(key, f"{key}1")
        level.push(key, f"{key}2")
    assert [item for _, item in drain(level)] == ["a1", "b1", "c1", "a2", "b2", "c2"]


def test_find_job_resumes_after_the_last_served_key() -> None:
    level = level_with("abc")
    level.push("b", "b1")
    assert level.find_job() == ("b", "b1")
    for key in "abc":
        level.push(key, f"{key}2")
    assert level.find_job() == ("c", "c2")
    assert level.find_job() == ("a", "a2")


def test_find_job_returns_none_when_every_queue_is_empty() -> None:
    assert level_with("ab").find_job() is None
    assert QueueLevel[str]().find_job() is None


def test_removing_a_queue_returns_its_items_and_keeps_the_cursor_fair() -> None:
    level = level_with("abc")
    for key in "abc":
        level.push(key, f"{key}1")
    assert level.find_job() == ("a", "a1")
    assert level.find_job() == ("b", "b1")
    level.push("b", "b2")
    assert level.remove_queue("a") == []
    assert level.find_job() == ("c", "c1")
    assert level.remove_queue("b") == ["b2"]
    assert level.keys() == ["c"]
    with pytest.raises(UnknownQueueError):
        level.remove_queue("b")


def test_find_job_skips_keys_whose_downstream_queue_is_full() -> None:
    send = level_with("ab", high=1)
    parse = level_with("ab", downstream=send)
    send.push("a", "blocking")
    parse.push("a", "a1")
    parse.push("b", "b1")
    assert parse.find_job() == ("b", "b1")
    assert parse.find_job() is None
    assert parse.size("a") == 1


def test_skipped_key_is_served_again_after_downstream_feedback() -> None:
    send = level_with("a", high=1)
    parse = level_with("a", downstream=send)
    send.push("a", "blocking")
    parse.push("a", "a1")
    assert parse.find_job() is None
    assert send.find_job() == ("a", "blocking")
    assert parse.find_job() == ("a", "a1")


def test_a_key_missing_downstream_is_not_skipped() -> None:
    parse = level_with("a", downstream=QueueLevel[str]("send"))
    parse.push("a", "a1")
    assert parse.find_job() == ("a", "a1")


def test_level_feedback_names_the_key_that_drained() -> None:
    level = level_with("ab", high=3)
    calls: list[str] = []
    level.add_feedback_listener(calls.append)
    for value in range(3):
        level.push("b", str(value))
    drain(level)
    assert calls == ["b"]
    assert level.stats("b").feedbacks == 1
    assert level.snapshot()["a"].feedbacks == 0


def test_wait_for_job_times_out_with_none() -> None:
    start = time.monotonic()
    assert level_with("a").wait_for_job(0.05) is None
    assert time.monotonic() - start >= 0.05


@pytest.mark.timeout(30)
def test_wait_for_job_is_woken_by_a_push() -> None:
    level = level_with("a")
    jobs: list[tuple[str, str] | None] = []
    waiter = threading.Thread(target=lambda: jobs.append(level.wait_for_job(10)))
    waiter.start()
    time.sleep(0.05)
    level.push("a", "a1")
    waiter.join(timeout=10)
    assert jobs == [("a", "a1")]


@pytest.mark.timeout(30)
def test_wait_for_job_is_woken_by_downstream_feedback() -> None:
    send = level_with("a", high=1)
    parse = level_with("a", downstream=send)
    send.push("a", "blocking")
    parse.push("a", "a1")
    jobs: list[tuple[str, str] | None] = []
    waiter = threading.Thread(target=lambda: jobs.append(parse.wait_for_job(10)))
    waiter.start()
    time.sleep(0.05)
    assert jobs == []
    send.find_job()
    waiter.join(timeout=10)
    assert jobs == [("a", "a1")]


@pytest.mark.timeout(30)
def test_interrupt_makes_waiters_return_none_and_keeps_the_level_open() -> None:
    level = level_with("a")
    jobs: list[tuple[str, str] | None] = []
    waiter = threading.Thread(target=lambda: jobs.append(level.wait_for_job(20)))
    waiter.start()
    time.sleep(0.05)
    started = time.monotonic()

    level.interrupt()

    waiter.join(timeout=10)
    assert jobs == [None]
    assert time.monotonic() - started < 5
    assert not level.closed
    level.push("a", "a1")
    assert level.wait_for_job(1) == ("a", "a1")


@pytest.mark.timeout(30)
def test_close_wakes_waiters_and_refuses_pushes() -> None:
    level = level_with("a")
    jobs: list[tuple[str, str] | None] = []
    waiter = threading.Thread(target=lambda: jobs.append(level.wait_for_job()))
    waiter.start()
    time.sleep(0.05)
    level.close()
    waiter.join(timeout=10)
    assert jobs == [None]
    assert level.closed
    with pytest.raises(QueueClosedError):
        level.push("a", "late")


def test_closed_level_still_hands_out_remaining_jobs() -> None:
    level = level_with("a")
    level.push("a", "a1")
    level.close()
    assert level.wait_for_job() == ("a", "a1")
    assert level.wait_for_job() is None


def test_find_job_skips_keys_that_are_not_ready() -> None:
    ready = {"a": False, "b": True}
    level: QueueLevel[str] = QueueLevel("send", ready=lambda key: ready[key])
    level.add_queue("a", 4)
    level.add_queue("b", 4)
    level.push("a", "a1")
    level.push("b", "b1")
    assert level.find_job() == ("b", "b1")
    assert level.find_job() is None
    ready["a"] = True
    assert level.find_job() == ("a", "a1")
