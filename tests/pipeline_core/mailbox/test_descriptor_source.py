"""A mailbox that waits on a descriptor beside its mail (``TaskMailbox.attach_source``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from pipeline_core.mailbox import (
    MIN_PRIORITY,
    IllegalThreadError,
    MailboxClosedException,
    TaskMailbox,
)
from tests.pipeline_core.mailbox.support import Worker, after, logging_mail, mail


class PipeSource:
    """A descriptor source over a pipe: each readable turn reads what was written and puts
    a mail saying it, on the thread that serves it."""

    def __init__(self, mailbox: TaskMailbox) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.mailbox = mailbox
        self.served_on: list[str] = []
        self.received: list[object] = []
        self.resting_until: float | None = None
        """While set and ahead: no descriptor to wait on, ask again then."""

    def wait_descriptor(self, now: float) -> tuple[int | None, float | None]:
        if self.resting_until is not None and now < self.resting_until:
            return None, self.resting_until
        return self.read_end, None

    def on_readable(self) -> None:
        self.served_on.append(threading.current_thread().name)
        data = os.read(self.read_end, 4096)
        self.mailbox.put(logging_mail(self.received, data))

    def write(self, data: bytes) -> None:
        os.write(self.write_end, data)

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


@pytest.fixture
def mailbox() -> TaskMailbox:
    return TaskMailbox()


@pytest.fixture
def source(mailbox: TaskMailbox) -> Iterator[PipeSource]:
    source = PipeSource(mailbox)
    mailbox.attach_source(source)
    yield source
    if mailbox.state.name != "CLOSED":
        mailbox.detach_source()
    source.close()


def test_a_readable_descriptor_is_served_on_the_mailbox_thread_while_it_waits(
    mailbox: TaskMailbox, source: PipeSource
) -> None:
    after(0.05, lambda: source.write(b"written"))
    taken = mailbox.poll(MIN_PRIORITY, 5.0)
    assert taken is not None
    taken.run()
    assert source.received == [b"written"]
    assert source.served_on == [threading.current_thread().name]


def test_a_mail_from_another_thread_wakes_a_mailbox_waiting_on_a_descriptor(
    mailbox: TaskMailbox, source: PipeSource
) -> None:
    log: list[object] = []
    after(0.05, lambda: mailbox.put(logging_mail(log, "from elsewhere")))
    started = time.monotonic()
    taken = mailbox.poll(MIN_PRIORITY, 10.0)
    assert taken is not None and time.monotonic() - started < 5.0
    taken.run()
    assert log == ["from elsewhere"]
    assert source.served_on == []


def test_a_mail_put_without_waking_waits_until_the_next_wake(
    mailbox: TaskMailbox, source: PipeSource
) -> None:
    log: list[object] = []
    after(0.02, lambda: mailbox.put(logging_mail(log, "quiet"), wake=False)).join()
    started = time.monotonic()
    taken = mailbox.poll(MIN_PRIORITY, 0.3)  # found at once: it looks before it waits
    assert taken is not None and time.monotonic() - started < 0.25
    after(0.02, lambda: mailbox.put(logging_mail(log, "quiet again"), wake=False))
    started = time.monotonic()
    taken = mailbox.poll(MIN_PRIORITY, 0.3)  # put while it waits: taken at the wait's end
    assert taken is not None and time.monotonic() - started >= 0.25
    taken.run()
    assert log == ["quiet again"]


def test_closing_the_mailbox_wakes_it_from_a_descriptor_wait(
    mailbox: TaskMailbox, source: PipeSource
) -> None:
    after(0.05, mailbox.close)
    with pytest.raises(MailboxClosedException):
        mailbox.poll(MIN_PRIORITY, 10.0)


def test_a_resting_source_is_not_served_until_it_asks_again(
    mailbox: TaskMailbox, source: PipeSource
) -> None:
    source.write(b"early")
    source.resting_until = time.monotonic() + 0.2
    started = time.monotonic()
    taken = mailbox.poll(MIN_PRIORITY, 5.0)
    waited = time.monotonic() - started
    assert taken is not None
    taken.run()
    assert source.received == [b"early"]
    assert 0.15 <= waited < 4.0  # served once it asked again, not at once


def test_attaching_is_for_the_mailbox_thread_and_once(mailbox: TaskMailbox) -> None:
    other = PipeSource(mailbox)
    try:
        error = Worker(lambda: mailbox.attach_source(other)).start().join_error()
        assert isinstance(error, IllegalThreadError)
        mailbox.attach_source(other)
        with pytest.raises(ValueError, match="attached already"):
            mailbox.attach_source(other)
        mailbox.detach_source()
    finally:
        other.close()


def test_a_detached_mailbox_waits_on_its_condition_again(mailbox: TaskMailbox) -> None:
    source = PipeSource(mailbox)
    mailbox.attach_source(source)
    mailbox.detach_source()
    source.write(b"ignored")
    after(0.05, lambda: mailbox.put(mail()))
    assert mailbox.poll(MIN_PRIORITY, 5.0) is not None
    assert source.served_on == []
    source.close()
