"""Many producers against one mailbox thread: nothing lost, nothing duplicated, order kept."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from pipeline_core.mailbox import MIN_PRIORITY, Mail, MailboxClosedException, TaskMailbox
from pipeline_core.testing import wait_until
from tests.pipeline_core.mailbox.support import Worker

PRODUCERS = 8
MAILS_PER_PRODUCER = 12_500  # 100k mails in all


Key = tuple[int, int]


def produce(
    mailbox: TaskMailbox, producer: int, count: int, start: threading.Event, log: list[object]
) -> list[tuple[Key, Mail]]:
    """Put ``count`` mails logging ``(producer, seq)``; return those the mailbox accepted."""
    accepted: list[tuple[Key, Mail]] = []
    start.wait()
    for seq in range(count):
        key = (producer, seq)
        put = Mail(partial(log.append, key), MIN_PRIORITY, "%s", key)
        try:
            mailbox.put(put)
        except MailboxClosedException:
            break
        accepted.append((key, put))
    return accepted


@pytest.mark.timeout(120)
def test_many_producers_put_100k_mails_none_lost_duplicated_or_reordered() -> None:
    total = PRODUCERS * MAILS_PER_PRODUCER
    log: list[object] = []

    def consume() -> None:
        # Alternate the batch path and the blocking path, as the processor does.
        while len(log) < total:
            if owned.create_batch():
                while (batched := owned.try_take_from_batch()) is not None:
                    batched.run()
            else:
                owned.take(MIN_PRIORITY).run()

    consumer = Worker(consume, name="mailbox")
    owned = TaskMailbox(owner_thread=consumer.thread)
    start = threading.Event()
    producers = [
        Worker(partial(produce, owned, p, MAILS_PER_PRODUCER, start, log), name=f"p{p}")
        for p in range(PRODUCERS)
    ]
    consumer.start()
    for producer in producers:
        producer.start()
    start.set()
    for producer in producers:
        assert len(producer.join(timeout=60)) == MAILS_PER_PRODUCER
    consumer.join(timeout=60)

    assert len(log) == total
    assert len(set(log)) == total
    for p in range(PRODUCERS):
        in_run_order = [key for key in log if isinstance(key, tuple) and key[0] == p]
        assert in_run_order == [(p, seq) for seq in range(MAILS_PER_PRODUCER)]
    assert owned.size() == 0


@pytest.mark.timeout(120)
def test_close_racing_producers_and_the_taker_accounts_for_every_accepted_mail() -> None:
    log: list[object] = []
    close_after = 20_000

    def consume() -> None:
        try:
            while True:
                if owned.create_batch():
                    while (batched := owned.try_take_from_batch()) is not None:
                        batched.run()
                else:
                    owned.take(MIN_PRIORITY).run()
        except MailboxClosedException:
            pass

    consumer = Worker(consume, name="mailbox")
    owned = TaskMailbox(owner_thread=consumer.thread)
    start = threading.Event()
    producers = [
        Worker(partial(produce, owned, p, 50_000, start, log), name=f"p{p}")
        for p in range(PRODUCERS)
    ]
    consumer.start()
    for producer in producers:
        producer.start()
    start.set()
    wait_until(lambda: len(log) >= close_after)

    dropped = owned.close()

    accepted = [pair for producer in producers for pair in producer.join(timeout=60)]
    consumer.join(timeout=60)
    key_of = {id(put): key for key, put in accepted}
    dropped_keys = [key_of[id(put)] for put in dropped]
    assert len(log) + len(dropped_keys) == len(accepted)
    assert set(log) | set(dropped_keys) == {key for key, _ in accepted}
    assert not set(log) & set(dropped_keys)
