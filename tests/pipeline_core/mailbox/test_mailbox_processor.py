from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError
from functools import partial

import pytest

from pipeline_core.mailbox import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    IllegalThreadError,
    MailboxClosedException,
    MailboxDefaultAction,
    MailboxProcessor,
    MailboxState,
    RejectedExecutionError,
    ReportedThrowableError,
    TaskMailbox,
)
from pipeline_core.testing import wait_until
from tests.pipeline_core.mailbox.support import (
    JOIN_TIMEOUT,
    LockHolder,
    ScriptedAction,
    Step,
    Worker,
    after,
    complete,
    noop,
    run_on_other_thread,
    suspend,
)

Controller = MailboxDefaultAction.Controller


class Done(Exception):
    """Raised by a test's default action to leave the loop without any mail."""


def processor_with(action: ScriptedAction) -> tuple[MailboxProcessor, list[object]]:
    assert action.log is not None
    return MailboxProcessor(action), action.log


# -- stepping ---------------------------------------------------------------------------------


def test_a_step_runs_one_waiting_mail_before_any_default_action() -> None:
    processor, log = processor_with(ScriptedAction(log=[]))
    executor = processor.get_main_mailbox_executor()
    executor.execute(lambda: log.append("m1"), "m1")
    executor.execute(lambda: log.append("m2"), "m2")

    assert processor.run_mailbox_step()
    assert log == ["m1"]
    assert processor.run_mailbox_step()
    assert log == ["m1", "m2"]
    assert processor.run_mailbox_step()
    assert log == ["m1", "m2", "action#0"]


def test_a_step_with_a_suspended_default_action_and_no_mail_does_nothing() -> None:
    processor, log = processor_with(ScriptedAction(suspend, log=[]))
    assert processor.run_mailbox_step()
    assert not processor.is_default_action_available()
    assert not processor.run_mailbox_step()
    assert log == ["action#0"]


def test_a_step_runs_mail_while_the_default_action_is_suspended() -> None:
    processor, log = processor_with(ScriptedAction(suspend, log=[]))
    processor.run_mailbox_step()
    processor.get_main_mailbox_executor().execute(lambda: log.append("mail"), "mail")
    assert processor.run_mailbox_step()
    assert log == ["action#0", "mail"]


# -- the loop ---------------------------------------------------------------------------------


def test_the_loop_runs_every_waiting_mail_then_one_default_action() -> None:
    log: list[object] = []

    def put(*names: str) -> Step:
        def step(controller: Controller) -> None:
            for name in names:
                executor.execute(partial(log.append, name), name)

        return step

    processor = MailboxProcessor(ScriptedAction(put("a", "b"), put("c"), complete, log=log))
    executor = processor.get_main_mailbox_executor()

    processor.run_mailbox_loop()

    assert log == ["action#0", "a", "b", "action#1", "c", "action#2"]


def test_mail_put_while_mails_run_waits_for_the_next_default_action() -> None:
    processor, log = processor_with(ScriptedAction(noop, complete, log=[]))
    executor = processor.get_main_mailbox_executor()

    def first() -> None:
        log.append("first")
        executor.execute(lambda: log.append("second"), "second")

    executor.execute(first, "first")
    processor.run_mailbox_loop()

    assert log == ["first", "action#0", "second", "action#1"]


def test_a_plain_function_is_a_default_action() -> None:
    calls: list[Controller] = []

    def action(controller: Controller) -> None:
        calls.append(controller)
        controller.all_actions_completed()

    MailboxProcessor(action).run_mailbox_loop()
    assert len(calls) == 1


def test_all_actions_completed_ends_the_loop_for_good() -> None:
    processor, log = processor_with(ScriptedAction(complete, log=[]))
    processor.run_mailbox_loop()
    assert not processor.is_mailbox_loop_running()

    processor.run_mailbox_loop()

    assert log == ["action#0"]


def test_all_actions_completed_leaves_queued_mails_for_drain() -> None:
    def complete_then_queue(controller: Controller) -> None:
        executor.execute(lambda: log.append("queued"), "queued")
        controller.all_actions_completed()

    processor, log = processor_with(ScriptedAction(complete_then_queue, log=[]))
    executor = processor.get_main_mailbox_executor()
    processor.run_mailbox_loop()
    assert log == ["action#0"]

    processor.prepare_close()
    with pytest.raises(RejectedExecutionError):
        executor.execute(lambda: log.append("too late"), "too late")
    processor.drain()

    assert log == ["action#0", "queued"]


def test_suspend_from_a_mail_stops_the_loop_and_a_new_run_continues() -> None:
    processor, log = processor_with(ScriptedAction(complete, log=[]))
    executor = processor.get_main_mailbox_executor()

    def suspend_loop() -> None:
        log.append("a")
        processor.suspend()

    executor.execute(suspend_loop, "a")
    executor.execute(lambda: log.append("b"), "b")

    processor.run_mailbox_loop()
    assert log == ["a"]
    assert processor.is_mailbox_loop_running()

    processor.run_mailbox_loop()
    assert log == ["a", "b", "action#0"]


@pytest.mark.timeout(10)
def test_suspend_from_another_thread_stops_a_busy_loop() -> None:
    started = threading.Event()

    def busy(controller: Controller) -> None:
        started.set()
        time.sleep(0.001)

    def suspend_once_busy() -> None:
        assert started.wait(JOIN_TIMEOUT)
        processor.suspend()

    processor = MailboxProcessor(busy)
    suspender = Worker(suspend_once_busy, name="suspender").start()

    processor.run_mailbox_loop()

    suspender.join()
    assert processor.is_mailbox_loop_running()


def test_an_exception_of_a_mail_leaves_the_loop_which_can_be_run_again() -> None:
    processor, log = processor_with(ScriptedAction(complete, log=[]))

    def fail() -> None:
        raise ValueError("bad mail")

    processor.get_main_mailbox_executor().execute(fail, "fail")
    with pytest.raises(ValueError, match="bad mail"):
        processor.run_mailbox_loop()

    processor.run_mailbox_loop()
    assert log == ["action#0"]


def test_run_mailbox_loop_off_the_mailbox_thread_is_refused() -> None:
    processor = MailboxProcessor(complete)
    with pytest.raises(IllegalThreadError, match="run_mailbox_loop"):
        run_on_other_thread(processor.run_mailbox_loop)


@pytest.mark.parametrize("close", ["prepare_close", "close"])
def test_run_mailbox_loop_needs_an_open_mailbox(close: str) -> None:
    processor = MailboxProcessor(complete)
    getattr(processor, close)()
    with pytest.raises(MailboxClosedException, match="OPEN"):
        processor.run_mailbox_loop()


@pytest.mark.timeout(20)
def test_the_loop_checks_for_mail_without_the_lock_when_none_arrived() -> None:
    action = ScriptedAction(otherwise=lambda controller: None)

    def run_until_done(controller: Controller) -> None:
        action(controller)
        if action.calls == 1000:
            raise Done

    worker = Worker(lambda: processor.run_mailbox_loop(), name="mailbox")
    processor = MailboxProcessor(run_until_done, TaskMailbox(owner_thread=worker.thread))
    with LockHolder(processor.mailbox):
        assert isinstance(worker.start().join_error(), Done)
    assert action.calls == 1000


# -- default action suspension ----------------------------------------------------------------


@pytest.mark.timeout(10)
def test_a_suspended_default_action_blocks_the_loop_until_resumed_from_another_thread() -> None:
    resumers: list[Worker[None]] = []

    def suspend_and_resume_later(controller: Controller) -> None:
        suspension = controller.suspend_default_action()
        resumers.append(after(0.1, suspension.resume, name="resumer"))

    action = ScriptedAction(suspend_and_resume_later, complete, log=[])
    processor = MailboxProcessor(action)

    processor.run_mailbox_loop()

    resumers[0].join()
    assert action.log == ["action#0", "action#1"]  # no spinning while suspended
    assert processor.metrics().time_suspended >= 0.09


@pytest.mark.timeout(10)
def test_a_suspension_with_a_timeout_resumes_by_itself() -> None:
    def suspend_briefly(controller: Controller) -> None:
        controller.suspend_default_action(resume_after=0.05)

    action = ScriptedAction(suspend_briefly, complete, log=[])
    processor = MailboxProcessor(action)
    started = time.monotonic()

    processor.run_mailbox_loop()

    assert action.log == ["action#0", "action#1"]
    assert time.monotonic() - started >= 0.05


@pytest.mark.timeout(10)
def test_a_suspension_with_a_timeout_still_runs_mail_and_can_be_resumed_sooner() -> None:
    resumers: list[Worker[None]] = []

    def suspend_long_resume_soon(controller: Controller) -> None:
        suspension = controller.suspend_default_action(resume_after=30.0)
        resumers.append(after(0.05, suspension.resume, name="resumer"))

    action = ScriptedAction(suspend_long_resume_soon, complete, log=[])
    processor = MailboxProcessor(action)
    started = time.monotonic()

    processor.run_mailbox_loop()

    resumers[0].join()
    assert action.log == ["action#0", "action#1"]
    assert time.monotonic() - started < 10


@pytest.mark.timeout(10)
def test_mails_still_run_while_the_default_action_is_suspended() -> None:
    producers: list[Worker[None]] = []

    def suspend_and_start_producing(controller: Controller) -> None:
        controller.suspend_default_action()
        producers.append(Worker(produce).start())

    def produce() -> None:
        for n in range(3):
            executor.execute(partial(log.append, n), "mail %d", n)
            time.sleep(0.01)
        processor.all_actions_completed()

    processor, log = processor_with(ScriptedAction(suspend_and_start_producing, log=[]))
    executor = processor.get_main_mailbox_executor()
    processor.run_mailbox_loop()
    producers[0].join()

    assert log == ["action#0", 0, 1, 2]
    assert not processor.is_default_action_available()


def test_resume_on_the_mailbox_thread_takes_effect_at_once() -> None:
    def suspend_and_resume(controller: Controller) -> None:
        controller.suspend_default_action().resume()

    processor, log = processor_with(ScriptedAction(suspend_and_resume, complete, log=[]))
    processor.run_mailbox_loop()
    assert log == ["action#0", "action#1"]


def test_resume_default_action_resumes_the_current_suspension_if_any() -> None:
    processor, log = processor_with(ScriptedAction(suspend, complete, log=[]))
    processor.resume_default_action()  # not suspended: nothing to do
    processor.run_mailbox_step()
    assert not processor.is_default_action_available()

    processor.resume_default_action()

    assert processor.is_default_action_available()
    processor.run_mailbox_loop()
    assert log == ["action#0", "action#1"]


def test_resume_default_action_off_the_mailbox_thread_is_refused() -> None:
    processor = MailboxProcessor(lambda controller: None)
    with pytest.raises(IllegalThreadError, match=r"MailboxProcessor\.resume_default_action"):
        run_on_other_thread(processor.resume_default_action)


def test_suspending_twice_returns_the_same_suspension() -> None:
    suspensions: list[MailboxDefaultAction.Suspension] = []

    def suspend_twice(controller: Controller) -> None:
        suspensions.append(controller.suspend_default_action())
        suspensions.append(controller.suspend_default_action())

    processor = MailboxProcessor(suspend_twice)
    processor.run_mailbox_step()
    assert suspensions[0] is suspensions[1]


def test_resuming_a_stale_suspension_does_not_resume_a_newer_one() -> None:
    stale: list[MailboxDefaultAction.Suspension] = []

    def suspend_resume_suspend(controller: Controller) -> None:
        first = controller.suspend_default_action()
        first.resume()
        controller.suspend_default_action()
        first.resume()
        stale.append(first)

    processor = MailboxProcessor(suspend_resume_suspend)
    processor.run_mailbox_step()
    assert not processor.is_default_action_available()
    run_on_other_thread(stale[0].resume)
    processor.run_mailbox_step()  # runs the resume mail
    assert not processor.is_default_action_available()


def test_suspend_default_action_off_the_mailbox_thread_is_refused() -> None:
    controllers: list[Controller] = []
    processor = MailboxProcessor(lambda controller: controllers.append(controller))
    processor.run_mailbox_step()
    with pytest.raises(IllegalThreadError, match="suspend_default_action"):
        run_on_other_thread(controllers[0].suspend_default_action)


def test_resume_after_close_is_ignored() -> None:
    suspensions: list[MailboxDefaultAction.Suspension] = []
    processor = MailboxProcessor(lambda c: suspensions.append(c.suspend_default_action()))
    processor.run_mailbox_step()
    processor.close()
    run_on_other_thread(suspensions[0].resume)  # does not raise


# -- priorities and latency -------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_a_max_priority_mail_runs_within_one_slice_while_the_default_action_is_busy() -> None:
    slices_started = 0
    observed: list[tuple[int, int]] = []  # (slices started at put, slices started at run)
    done = threading.Event()

    def busy_slice(controller: Controller) -> None:
        nonlocal slices_started
        slices_started += 1
        if done.is_set():
            controller.all_actions_completed()
            return
        deadline = time.perf_counter() + 0.01
        while time.perf_counter() < deadline:
            pass

    processor = MailboxProcessor(busy_slice)
    checkpoints = processor.get_mailbox_executor(MAX_PRIORITY)

    def request_checkpoints() -> None:
        for n in range(10):
            time.sleep(0.003 * (n % 4))
            at_put = slices_started
            ran = threading.Event()

            def checkpoint(at_put: int = at_put, ran: threading.Event = ran) -> None:
                observed.append((at_put, slices_started))
                ran.set()

            checkpoints.execute(checkpoint, "checkpoint %d", n)
            assert ran.wait(5)
        done.set()

    requester = Worker(request_checkpoints, name="checkpointer").start()
    processor.run_mailbox_loop()
    requester.join()

    assert len(observed) == 10
    assert all(at_run - at_put <= 1 for at_put, at_run in observed), observed


# -- report_throwable -------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_a_reported_throwable_is_raised_by_the_loop_with_its_cause() -> None:
    processor = MailboxProcessor(suspend)
    reported = OSError("sink failed")
    reporter = after(0.05, partial(processor.report_throwable, reported), name="reporter")

    with pytest.raises(ReportedThrowableError) as caught:
        processor.run_mailbox_loop()

    reporter.join()
    assert caught.value.__cause__ is reported
    assert caught.value.reported is reported


def test_report_throwable_on_a_closed_mailbox_raises() -> None:
    processor = MailboxProcessor(complete)
    processor.close()
    with pytest.raises(MailboxClosedException):
        processor.report_throwable(RuntimeError("late"))


# -- executors --------------------------------------------------------------------------------


def test_the_main_executor_has_the_lowest_priority_unless_configured() -> None:
    assert MailboxProcessor(complete).get_main_mailbox_executor().priority == MIN_PRIORITY
    configured = MailboxProcessor(complete, main_executor_priority=3)
    assert configured.get_main_mailbox_executor().priority == 3
    assert configured.get_mailbox_executor(MAX_PRIORITY).priority == MAX_PRIORITY


def test_a_submitted_callable_completes_its_future_on_the_mailbox_thread() -> None:
    processor = MailboxProcessor(complete)
    future = processor.get_main_mailbox_executor().submit(threading.current_thread, "whoami")
    processor.run_mailbox_loop()
    assert future.result(timeout=0) is threading.current_thread()


# -- closing ----------------------------------------------------------------------------------


def test_close_cancels_the_futures_of_mails_never_run() -> None:
    processor = MailboxProcessor(complete)
    executor = processor.get_main_mailbox_executor()
    future = executor.submit(lambda: 1, "never run")

    processor.close()

    with pytest.raises(CancelledError):
        future.result(timeout=0)
    with pytest.raises(RejectedExecutionError) as rejected:
        executor.execute(lambda: None, "after close")
    assert isinstance(rejected.value.__cause__, MailboxClosedException)


@pytest.mark.timeout(10)
def test_close_from_another_thread_wakes_a_loop_waiting_for_mail() -> None:
    processor = MailboxProcessor(suspend)
    closer = after(0.05, processor.close, name="closer")
    with pytest.raises(MailboxClosedException):
        processor.run_mailbox_loop()
    closer.join()


@pytest.mark.timeout(10)
def test_close_from_another_thread_stops_a_busy_loop_after_its_current_slice() -> None:
    slices = ScriptedAction(otherwise=lambda controller: time.sleep(0.001))
    processor = MailboxProcessor(slices)
    closer = after(0.05, processor.close, name="closer")
    with pytest.raises(MailboxClosedException):
        processor.run_mailbox_loop()
    closer.join()
    assert slices.calls > 0


def test_the_processor_closes_its_mailbox_on_exiting_a_with_block() -> None:
    with MailboxProcessor(complete) as processor:
        processor.run_mailbox_loop()
    assert processor.mailbox.state is MailboxState.CLOSED


# -- metrics ----------------------------------------------------------------------------------


def test_metrics_count_mails_and_put_to_run_latency() -> None:
    processor = MailboxProcessor(ScriptedAction(otherwise=complete))
    executor = processor.get_main_mailbox_executor()
    for n in range(5):
        executor.execute(lambda: None, "mail %d", n)

    assert processor.metrics().mails_processed == 0
    processor.run_mailbox_loop()
    metrics = processor.metrics()

    assert metrics.mails_processed == 6  # five mails and the completion control mail
    assert metrics.latency_count == 6
    assert metrics.latency_window == 6
    assert 0.0 < metrics.latency_p50 <= metrics.latency_p99 <= metrics.latency_max
    assert metrics.latency_mean > 0.0
    assert metrics.time_suspended == 0.0


@pytest.mark.timeout(10)
def test_time_suspended_includes_a_suspension_in_progress() -> None:
    processor = MailboxProcessor(suspend)
    processor.run_mailbox_step()
    time.sleep(0.05)
    assert processor.metrics().time_suspended >= 0.04
    wait_until(lambda: processor.metrics().time_suspended >= 0.05)
