from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial

import pytest

from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    IllegalThreadError,
    Mail,
    MailboxClosedException,
    MailboxState,
    TaskMailbox,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.mailbox.support import (
    LockHolder,
    Worker,
    after,
    logging_mail,
    mail,
    run_on_other_thread,
)

State = MailboxState


def run_all(mailbox: TaskMailbox) -> None:
    while (next_mail := mailbox.try_take(MIN_PRIORITY)) is not None:
        next_mail.run()


@pytest.fixture
def mailbox() -> TaskMailbox:
    return TaskMailbox()


# -- ordering and priorities ------------------------------------------------------------------


def test_take_returns_mails_in_put_order(mailbox: TaskMailbox) -> None:
    log: list[object] = []
    for value in range(5):
        mailbox.put(logging_mail(log, value))
    for _ in range(5):
        mailbox.take(MIN_PRIORITY).run()
    assert log == [0, 1, 2, 3, 4]


def test_try_take_on_an_empty_mailbox_returns_none(mailbox: TaskMailbox) -> None:
    assert mailbox.try_take(MIN_PRIORITY) is None


def test_take_returns_the_first_mail_of_at_least_the_requested_priority(
    mailbox: TaskMailbox,
) -> None:
    for name, priority in [("low-a", 0), ("high-a", 5), ("low-b", 0), ("max", MAX_PRIORITY)]:
        mailbox.put(mail(priority=priority, description=name))

    assert str(mailbox.take(5)) == "high-a"
    assert str(mailbox.take(5)) == "max"
    assert mailbox.try_take(5) is None
    assert [str(mailbox.take(MIN_PRIORITY)) for _ in range(2)] == ["low-a", "low-b"]


def test_priority_take_searches_the_batch_before_the_queue(mailbox: TaskMailbox) -> None:
    mailbox.put(mail(priority=1, description="in-batch"))
    mailbox.create_batch()
    mailbox.put(mail(priority=1, description="in-queue"))
    assert str(mailbox.try_take(1)) == "in-batch"
    assert str(mailbox.try_take(1)) == "in-queue"


def test_put_first_on_the_mailbox_thread_goes_to_the_head_of_the_batch(
    mailbox: TaskMailbox,
) -> None:
    log: list[object] = []
    mailbox.put(logging_mail(log, "a"))
    mailbox.put(logging_mail(log, "b"))
    mailbox.create_batch()
    mailbox.put(logging_mail(log, "queued"))
    mailbox.put_first(logging_mail(log, "first"))

    next_mail = mailbox.try_take_from_batch()
    assert next_mail is not None
    next_mail.run()
    run_all(mailbox)
    assert log == ["first", "a", "b", "queued"]


def test_put_first_from_another_thread_goes_to_the_head_of_the_queue(
    mailbox: TaskMailbox,
) -> None:
    log: list[object] = []
    mailbox.put(logging_mail(log, "a"))
    run_on_other_thread(lambda: mailbox.put_first(logging_mail(log, "first")))
    run_all(mailbox)
    assert log == ["first", "a"]


def test_put_first_from_another_thread_stays_behind_the_batch_already_taken(
    mailbox: TaskMailbox,
) -> None:
    log: list[object] = []
    mailbox.put(logging_mail(log, "batched"))
    mailbox.create_batch()
    mailbox.put(logging_mail(log, "queued"))
    run_on_other_thread(lambda: mailbox.put_first(logging_mail(log, "first")))
    run_all(mailbox)
    assert log == ["batched", "first", "queued"]


@pytest.mark.timeout(30)
def test_a_mail_put_without_waking_leaves_a_waiting_taker_asleep_until_woken() -> None:
    log: list[object] = []
    owner: list[TaskMailbox] = []
    taker = Worker(lambda: owner[0].poll(MIN_PRIORITY, 10.0), name="taker")
    box = TaskMailbox(owner_thread=taker.thread)
    owner.append(box)
    taker.start()
    wait_until(lambda: box._takers_waiting == 1)
    run_on_other_thread(lambda: box.put(logging_mail(log, "quiet"), wake=False))
    time.sleep(0.2)
    assert taker.thread.is_alive()  # still asleep: nothing woke it
    started = time.monotonic()
    run_on_other_thread(box.wake)
    taken = taker.join()
    assert time.monotonic() - started < 5.0
    assert taken is not None
    taken.run()
    assert log == ["quiet"]


def test_a_mail_put_without_waking_is_taken_in_order_at_the_next_look(
    mailbox: TaskMailbox,
) -> None:
    log: list[object] = []
    run_on_other_thread(lambda: mailbox.put(logging_mail(log, "quiet"), wake=False))
    run_on_other_thread(lambda: mailbox.put(logging_mail(log, "loud")))
    run_all(mailbox)
    assert log == ["quiet", "loud"]


def test_put_stamps_the_put_time(mailbox: TaskMailbox) -> None:
    before = time.perf_counter()
    mailbox.put(put := mail())
    assert before <= put.put_time <= time.perf_counter()


# -- batches and the lock-free hot path -------------------------------------------------------


def test_create_batch_moves_the_queue_and_clears_has_new_mail(mailbox: TaskMailbox) -> None:
    assert not mailbox.create_batch()
    mailbox.put(mail(description="one"))
    mailbox.put(mail(description="two"))
    assert mailbox.has_new_mail

    assert mailbox.create_batch()
    assert not mailbox.has_new_mail
    assert [str(mailbox.try_take_from_batch()) for _ in range(2)] == ["one", "two"]
    assert mailbox.try_take_from_batch() is None
    assert not mailbox.create_batch()


def test_try_take_from_batch_does_not_see_mail_put_after_the_batch(mailbox: TaskMailbox) -> None:
    mailbox.put(mail(description="later"))
    assert mailbox.try_take_from_batch() is None
    assert mailbox.has_mail()


def test_has_mail_sees_both_batch_and_queue(mailbox: TaskMailbox) -> None:
    assert not mailbox.has_mail()
    mailbox.put(mail())
    assert mailbox.has_mail()
    mailbox.create_batch()
    assert mailbox.has_mail()
    mailbox.try_take_from_batch()
    assert not mailbox.has_mail()


def test_size_counts_batch_and_queue(mailbox: TaskMailbox) -> None:
    mailbox.put(mail())
    mailbox.create_batch()
    mailbox.put(mail())
    assert mailbox.size() == 2


@pytest.mark.timeout(20)
def test_checking_for_mail_takes_no_lock_when_nothing_arrived() -> None:
    def check_many_times() -> None:
        for _ in range(1000):
            assert not owned.create_batch()
            assert not owned.has_mail()
            assert owned.try_take_from_batch() is None
            assert owned.try_take(MIN_PRIORITY) is None

    worker = Worker(check_many_times, name="mailbox")
    owned = TaskMailbox(owner_thread=worker.thread)
    with LockHolder(owned):
        worker.start().join()


# -- thread ownership -------------------------------------------------------------------------


OWNER_ONLY: dict[str, Callable[[TaskMailbox], object]] = {
    "take": lambda m: m.take(MIN_PRIORITY),
    "try_take": lambda m: m.try_take(MIN_PRIORITY),
    "create_batch": lambda m: m.create_batch(),
    "try_take_from_batch": lambda m: m.try_take_from_batch(),
    "has_mail": lambda m: m.has_mail(),
    "drain": lambda m: m.drain(),
    "quiesce": lambda m: m.quiesce(),
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize("method", sorted(OWNER_ONLY))
def test_owner_only_methods_raise_illegal_thread_error_elsewhere(
    mailbox: TaskMailbox, method: str
) -> None:
    mailbox.put(mail())
    with pytest.raises(IllegalThreadError, match=rf"TaskMailbox\.{method}\(\).*MainThread"):
        run_on_other_thread(lambda: OWNER_ONLY[method](mailbox))


def test_check_mailbox_thread_names_what_was_called_and_both_threads(
    mailbox: TaskMailbox,
) -> None:
    mailbox.check_mailbox_thread("Reader.on_mail()")  # the owner: nothing happens

    with pytest.raises(IllegalThreadError, match=r"Reader\.on_mail\(\).*'MainThread'.*'other'"):
        run_on_other_thread(lambda: mailbox.check_mailbox_thread("Reader.on_mail()"))


def test_the_owner_defaults_to_the_constructing_thread(mailbox: TaskMailbox) -> None:
    assert mailbox.owner_thread is threading.current_thread()
    assert mailbox.is_mailbox_thread()
    assert not run_on_other_thread(mailbox.is_mailbox_thread)


@pytest.mark.timeout(10)
def test_an_explicit_owner_thread_is_the_only_one_allowed_to_take() -> None:
    worker = Worker(lambda: str(owned.take(MIN_PRIORITY)), name="owner")
    owned = TaskMailbox(owner_thread=worker.thread)
    owned.put(mail(description="for the owner"))
    with pytest.raises(IllegalThreadError):
        owned.take(MIN_PRIORITY)
    assert worker.start().join() == "for the owner"


# -- run_exclusively --------------------------------------------------------------------------


def test_run_exclusively_returns_the_result_and_may_put(mailbox: TaskMailbox) -> None:
    def put_twice() -> int:
        mailbox.put(mail())
        mailbox.put_first(mail())
        return mailbox.size()

    assert mailbox.run_exclusively(put_twice) == 2


@pytest.mark.timeout(10)
def test_run_exclusively_holds_off_puts_from_other_threads(mailbox: TaskMailbox) -> None:
    with LockHolder(mailbox):
        producer = Worker(lambda: mailbox.put(mail()), name="producer").start()
        time.sleep(0.05)
        assert producer.thread.is_alive()
        assert mailbox.try_take_from_batch() is None
    producer.join()
    assert mailbox.size() == 1


# -- lifecycle --------------------------------------------------------------------------------


def test_a_new_mailbox_is_open(mailbox: TaskMailbox) -> None:
    assert mailbox.state is State.OPEN
    assert State.OPEN.is_accepting_mails()
    assert not State.QUIESCED.is_accepting_mails()
    assert not State.CLOSED.is_accepting_mails()


def test_quiesce_refuses_puts_but_still_hands_out_queued_mails(mailbox: TaskMailbox) -> None:
    mailbox.put(mail(description="queued"))
    mailbox.quiesce()

    assert mailbox.state is State.QUIESCED
    with pytest.raises(MailboxClosedException, match="QUIESCED"):
        mailbox.put(mail())
    with pytest.raises(MailboxClosedException):
        mailbox.put_first(mail())
    with pytest.raises(MailboxClosedException):
        run_on_other_thread(lambda: mailbox.put_first(mail()))
    assert str(mailbox.take(MIN_PRIORITY)) == "queued"


def test_quiesce_does_not_reopen_a_closed_mailbox(mailbox: TaskMailbox) -> None:
    mailbox.close()
    mailbox.quiesce()
    assert mailbox.state is State.CLOSED


def test_close_returns_the_dropped_mails_in_run_order(mailbox: TaskMailbox) -> None:
    mailbox.put(mail(description="batched"))
    mailbox.create_batch()
    mailbox.put(mail(description="queued"))
    mailbox.put_first(mail(description="first"))

    dropped = mailbox.close()

    assert [str(m) for m in dropped] == ["first", "batched", "queued"]
    assert mailbox.size() == 0
    assert mailbox.state is State.CLOSED


def test_close_cancels_the_futures_of_dropped_mails(mailbox: TaskMailbox) -> None:
    future: Future[int] = Future()
    mailbox.put(Mail(lambda: 1, MIN_PRIORITY, "submitted", future=future))
    mailbox.put(mail(description="plain"))

    mailbox.close()

    assert future.cancelled()


def test_close_a_second_time_drops_nothing(mailbox: TaskMailbox) -> None:
    mailbox.put(mail())
    assert len(mailbox.close()) == 1
    assert mailbox.close() == []


ANY_ACCESS: dict[str, Callable[[TaskMailbox], object]] = {
    "put": lambda m: m.put(mail()),
    "put_first": lambda m: m.put_first(mail()),
    "take": lambda m: m.take(MIN_PRIORITY),
    "try_take": lambda m: m.try_take(MIN_PRIORITY),
    "try_take_from_batch": lambda m: m.try_take_from_batch(),
    "create_batch": lambda m: m.create_batch(),
}


@pytest.mark.parametrize("operation", sorted(ANY_ACCESS))
def test_every_put_and_take_raises_once_closed(mailbox: TaskMailbox, operation: str) -> None:
    mailbox.close()
    with pytest.raises(MailboxClosedException, match="CLOSED"):
        ANY_ACCESS[operation](mailbox)


def test_drain_returns_every_mail_and_leaves_the_mailbox_open(mailbox: TaskMailbox) -> None:
    mailbox.put(mail(description="batched"))
    mailbox.create_batch()
    mailbox.put(mail(description="queued"))

    assert [str(m) for m in mailbox.drain()] == ["batched", "queued"]
    assert not mailbox.has_mail()
    assert mailbox.state is State.OPEN


# -- blocking takes ---------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_a_put_from_another_thread_wakes_a_blocked_take(mailbox: TaskMailbox) -> None:
    producer = after(0.05, partial(mailbox.put, mail(description="late")), name="producer")
    assert str(mailbox.take(MIN_PRIORITY)) == "late"
    producer.join()


@pytest.mark.timeout(10)
def test_a_blocked_priority_take_waits_past_lower_mails(mailbox: TaskMailbox) -> None:
    def produce() -> None:
        mailbox.put(mail(priority=0, description="low"))
        time.sleep(0.05)
        mailbox.put(mail(priority=9, description="high"))

    producer = Worker(produce).start()
    assert str(mailbox.take(9)) == "high"
    producer.join()
    assert str(mailbox.take(MIN_PRIORITY)) == "low"


@pytest.mark.timeout(10)
def test_poll_returns_none_once_its_timeout_passes(mailbox: TaskMailbox) -> None:
    started = time.monotonic()
    assert mailbox.poll(MIN_PRIORITY, 0.05) is None
    assert time.monotonic() - started >= 0.05


@pytest.mark.timeout(10)
def test_poll_returns_a_mail_put_while_it_waits(mailbox: TaskMailbox) -> None:
    producer = after(0.05, partial(mailbox.put, mail(description="late")), name="producer")
    assert str(mailbox.poll(MIN_PRIORITY, 5.0)) == "late"
    producer.join()


@pytest.mark.timeout(10)
def test_close_from_another_thread_wakes_a_blocked_taker() -> None:
    taker = Worker(lambda: owned.take(MIN_PRIORITY), name="mailbox")
    owned = TaskMailbox(owner_thread=taker.thread)
    taker.start()
    time.sleep(0.05)
    assert taker.thread.is_alive()  # blocked in take

    assert owned.close() == []

    assert isinstance(taker.join_error(), MailboxClosedException)


def test_has_urgent_mail_says_a_max_priority_mail_waits_until_the_next_batch(
    mailbox: TaskMailbox,
) -> None:
    mailbox.put(mail(priority=MIN_PRIORITY))
    mailbox.put(mail(priority=MAX_PRIORITY - 1))
    assert not mailbox.has_urgent_mail  # news, but nothing a turn should end for
    mailbox.put(mail(priority=MAX_PRIORITY), wake=False)
    assert mailbox.has_urgent_mail
    assert mailbox.create_batch()
    assert not mailbox.has_urgent_mail  # in the batch: run before the next turn
    run_on_other_thread(lambda: mailbox.put(mail(priority=MAX_PRIORITY)))
    assert mailbox.has_urgent_mail
    mailbox.drain()
    assert not mailbox.has_urgent_mail
