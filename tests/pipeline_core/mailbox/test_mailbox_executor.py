from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

import pytest

from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    IllegalThreadError,
    MailboxClosedException,
    MailboxExecutor,
    MailboxProcessor,
    RejectedExecutionError,
    TaskMailbox,
)
from tests.pipeline_core.mailbox.support import (
    Worker,
    after,
    complete,
    mail,
    run_on_other_thread,
    suspend,
)


@pytest.fixture
def mailbox() -> TaskMailbox:
    return TaskMailbox()


def test_execute_puts_a_mail_at_the_executor_priority(mailbox: TaskMailbox) -> None:
    MailboxExecutor(mailbox, 7).execute(lambda: None, "tick %d", 1)
    taken = mailbox.take(7)
    assert taken.priority == 7
    assert str(taken) == "tick 1"


@pytest.mark.timeout(10)
def test_execute_from_another_thread_runs_the_command_on_the_mailbox_thread(
    mailbox: TaskMailbox,
) -> None:
    ran_on: list[threading.Thread] = []
    executor = MailboxExecutor(mailbox, MIN_PRIORITY)
    run_on_other_thread(
        lambda: executor.execute(lambda: ran_on.append(threading.current_thread()), "who")
    )
    mailbox.take(MIN_PRIORITY).run()
    assert ran_on == [threading.current_thread()]


def test_submit_completes_the_future_with_the_result(mailbox: TaskMailbox) -> None:
    future = MailboxExecutor(mailbox, MIN_PRIORITY).submit(lambda: "done", "work")
    assert not future.done()
    mailbox.take(MIN_PRIORITY).run()
    assert future.result(timeout=0) == "done"


def test_an_exception_of_a_submitted_task_goes_to_the_future_only() -> None:
    def fail() -> int:
        raise LookupError("no such file")

    processor = MailboxProcessor(complete)
    future = processor.get_main_mailbox_executor().submit(fail, "fail")
    processor.run_mailbox_loop()  # does not raise
    assert isinstance(future.exception(timeout=0), LookupError)


SUBMISSIONS: dict[str, Callable[[MailboxExecutor], object]] = {
    "execute": lambda executor: executor.execute(lambda: None, "rejected"),
    "submit": lambda executor: executor.submit(lambda: None, "rejected"),
}


@pytest.mark.parametrize("lifecycle", ["quiesce", "close"])
@pytest.mark.parametrize("submission", sorted(SUBMISSIONS))
def test_submissions_are_rejected_once_the_mailbox_is_not_open(
    mailbox: TaskMailbox, lifecycle: str, submission: str
) -> None:
    getattr(mailbox, lifecycle)()
    with pytest.raises(RejectedExecutionError, match="rejected") as rejected:
        SUBMISSIONS[submission](MailboxExecutor(mailbox, MIN_PRIORITY))
    assert isinstance(rejected.value.__cause__, MailboxClosedException)


@pytest.mark.parametrize("priority", [MIN_PRIORITY - 1, MAX_PRIORITY + 1])
def test_a_priority_out_of_range_is_rejected(mailbox: TaskMailbox, priority: int) -> None:
    with pytest.raises(ValueError, match="priority"):
        MailboxExecutor(mailbox, priority)


# -- yield ------------------------------------------------------------------------------------


def test_yield_runs_the_first_mail_of_at_least_its_priority(mailbox: TaskMailbox) -> None:
    log: list[str] = []
    MailboxExecutor(mailbox, 0).execute(partial(log.append, "low"), "low")
    MailboxExecutor(mailbox, 5).execute(partial(log.append, "high"), "high")

    MailboxExecutor(mailbox, 5).yield_()

    assert log == ["high"]
    assert mailbox.size() == 1


@pytest.mark.timeout(10)
def test_yield_waits_for_a_qualifying_mail_from_another_thread(mailbox: TaskMailbox) -> None:
    log: list[str] = []
    checkpoints = MailboxExecutor(mailbox, MAX_PRIORITY)
    MailboxExecutor(mailbox, MIN_PRIORITY).execute(partial(log.append, "low"), "low")
    producer = after(0.05, partial(checkpoints.execute, partial(log.append, "checkpoint"), "cp"))

    checkpoints.yield_()

    producer.join()
    assert log == ["checkpoint"]


@pytest.mark.timeout(10)
def test_close_from_another_thread_wakes_a_waiting_yield(mailbox: TaskMailbox) -> None:
    closer = after(0.05, mailbox.close, name="closer")
    with pytest.raises(MailboxClosedException):
        MailboxExecutor(mailbox, MIN_PRIORITY).yield_()
    closer.join()


def test_yield_propagates_the_exception_of_the_mail(mailbox: TaskMailbox) -> None:
    def fail() -> None:
        raise ArithmeticError("bad")

    executor = MailboxExecutor(mailbox, MIN_PRIORITY)
    executor.execute(fail, "fail")
    with pytest.raises(ArithmeticError):
        executor.yield_()


def test_try_yield_runs_a_waiting_mail_and_reports_it(mailbox: TaskMailbox) -> None:
    log: list[str] = []
    executor = MailboxExecutor(mailbox, 3)
    assert not executor.try_yield()
    MailboxExecutor(mailbox, 2).execute(partial(log.append, "too low"), "too low")
    assert not executor.try_yield()
    executor.execute(partial(log.append, "mine"), "mine")
    assert executor.try_yield()
    assert log == ["mine"]


def test_a_long_mail_can_yield_to_a_checkpoint_queued_behind_lower_mails() -> None:
    log: list[str] = []
    processor = MailboxProcessor(complete)
    main = processor.get_main_mailbox_executor()
    checkpoints = processor.get_mailbox_executor(MAX_PRIORITY)

    def long_mail() -> None:
        log.append("long: start")
        while checkpoints.try_yield():
            pass
        log.append("long: end")

    main.execute(long_mail, "long")
    main.execute(partial(log.append, "low"), "low")
    checkpoints.execute(partial(log.append, "checkpoint"), "checkpoint")

    processor.run_mailbox_step()
    assert log == ["long: start", "checkpoint", "long: end"]
    processor.run_mailbox_step()
    assert log[-1] == "low"
    assert processor.metrics().mails_processed == 3  # the yielded mail is counted


YIELD_OWNER_ONLY: dict[str, Callable[[MailboxExecutor], object]] = {
    "yield_": lambda executor: executor.yield_(),
    "try_yield": lambda executor: executor.try_yield(),
    "should_interrupt": lambda executor: executor.should_interrupt(),
    "is_idle": lambda executor: executor.is_idle(),
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize("method", sorted(YIELD_OWNER_ONLY))
def test_mailbox_thread_methods_are_refused_elsewhere(method: str) -> None:
    processor = MailboxProcessor(complete)
    executor = processor.get_main_mailbox_executor()
    executor.execute(lambda: None, "waiting")
    with pytest.raises(IllegalThreadError):
        run_on_other_thread(lambda: YIELD_OWNER_ONLY[method](executor))


# -- interruption and idleness ----------------------------------------------------------------


def test_should_interrupt_when_any_mail_waits(mailbox: TaskMailbox) -> None:
    executor = MailboxExecutor(mailbox, MAX_PRIORITY)
    assert not executor.should_interrupt()
    mailbox.put(mail(priority=MIN_PRIORITY))
    assert executor.should_interrupt()
    mailbox.create_batch()
    assert executor.should_interrupt()


def test_is_idle_when_suspended_without_mail_and_open() -> None:
    processor = MailboxProcessor(suspend)
    executor = processor.get_main_mailbox_executor()
    assert not executor.is_idle()  # default action available

    processor.run_mailbox_step()
    assert executor.is_idle()

    executor.execute(lambda: None, "work")
    assert not executor.is_idle()
    processor.run_mailbox_step()
    assert executor.is_idle()

    processor.prepare_close()
    assert not executor.is_idle()


def test_is_idle_needs_a_processor(mailbox: TaskMailbox) -> None:
    with pytest.raises(RuntimeError, match="MailboxProcessor"):
        MailboxExecutor(mailbox, MIN_PRIORITY).is_idle()


@pytest.mark.timeout(10)
def test_executors_from_many_threads_all_run_on_the_mailbox_thread() -> None:
    processor = MailboxProcessor(suspend)
    executor = processor.get_main_mailbox_executor()
    threads: set[threading.Thread] = set()
    per_producer = 500

    def produce() -> None:
        for _ in range(per_producer):
            executor.execute(lambda: threads.add(threading.current_thread()), "where")

    producers = [Worker(produce, name=f"producer-{n}").start() for n in range(4)]
    for producer in producers:
        producer.join()
    processor.all_actions_completed()
    processor.run_mailbox_loop()
    processor.prepare_close()
    processor.drain()

    assert threads == {threading.current_thread()}
    assert processor.metrics().mails_processed == 4 * per_producer + 1
