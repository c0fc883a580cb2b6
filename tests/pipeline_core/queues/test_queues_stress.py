"""Stress: many keys through two levels with small watermarks: nothing lost, per-key order kept."""

from __future__ import annotations

import threading

import pytest

from pipeline_core.queues import BlockedQueue, QueueLevel

KEYS = [f"config-{index}" for index in range(24)]
PER_KEY = 1_500
PRODUCERS = 3


@pytest.mark.timeout(30)
def test_two_levels_deliver_every_item_once_in_per_key_order() -> None:
    send: QueueLevel[tuple[str, int]] = QueueLevel("send")
    parse: QueueLevel[tuple[str, int]] = QueueLevel("parse", downstream=send)
    for index, key in enumerate(KEYS):
        parse.add_queue(key, high=4 + index % 5)
        send.add_queue(key, high=2 + index % 3, low=0 if index % 2 else None)
    to_parse = BlockedQueue(parse)
    to_send = BlockedQueue(send)
    received: dict[str, list[int]] = {key: [] for key in KEYS}
    errors: list[BaseException] = []

    def produce(keys: list[str]) -> None:
        for sequence in range(PER_KEY):
            for key in keys:
                to_parse.submit(key, (key, sequence))

    def stage() -> None:
        try:
            while (job := parse.wait_for_job(0.05)) is not None or not parse.closed:
                if job is not None:
                    to_send.submit(job[0], job[1])
        except BaseException as exc:
            errors.append(exc)

    def sink() -> None:
        try:
            while (job := send.wait_for_job(0.05)) is not None or not send.closed:
                if job is not None:
                    key, (item_key, sequence) = job
                    assert key == item_key
                    received[key].append(sequence)
        except BaseException as exc:
            errors.append(exc)

    producers = [
        threading.Thread(target=produce, args=(KEYS[index::PRODUCERS],))
        for index in range(PRODUCERS)
    ]
    consumers = [threading.Thread(target=stage), threading.Thread(target=sink)]
    for thread in producers + consumers:
        thread.start()
    for thread in producers:
        thread.join(timeout=25)
    total = len(KEYS) * PER_KEY

    def delivered() -> int:
        return sum(len(items) for items in received.values())

    deadline = threading.Event()
    for _ in range(2_500):
        if delivered() >= total or errors:
            break
        deadline.wait(0.01)
    parse.close()
    send.close()
    for thread in consumers:
        thread.join(timeout=10)
    assert not errors
    assert all(not thread.is_alive() for thread in producers + consumers)
    assert {key: items for key, items in received.items()} == {
        key: list(range(PER_KEY)) for key in KEYS
    }
    assert to_parse.total_parked() == to_send.total_parked() == 0
    assert to_parse.moved > 0
    assert sum(stats.feedbacks for stats in send.snapshot().values()) > 0
