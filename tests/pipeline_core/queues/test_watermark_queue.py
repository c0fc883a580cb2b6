"""WatermarkQueue: refusals between the marks, urgent pushes, one feedback per crossing."""

from __future__ import annotations

import threading

import pytest

from pipeline_core.queues import PushResult, WatermarkQueue


def filled(high: int, low: int | None = None) -> tuple[WatermarkQueue[int], list[str]]:
    calls: list[str] = []
    queue: WatermarkQueue[int] = WatermarkQueue(high, low, key="k")
    queue.add_listener(calls.append)
    for value in range(high):
        assert queue.push(value) is PushResult.ACCEPTED
    return queue, calls


def test_default_low_watermark_is_two_thirds_of_high() -> None:
    assert WatermarkQueue[int](9).low_watermark == 6
    assert WatermarkQueue[int](1).low_watermark == 0


@pytest.mark.parametrize(("high", "low"), [(0, None), (4, 4), (4, -1), (4, 5)])
def test_rejects_out_of_range_watermarks(high: int, low: int | None) -> None:
    with pytest.raises(ValueError):
        WatermarkQueue[int](high, low)


def test_accepts_until_high_then_refuses() -> None:
    queue, _ = filled(3)
    assert not queue.is_writable()
    assert queue.push(99) is PushResult.FULL
    assert queue.size() == 3
    assert queue.stats().refusals == 1


def test_stays_refusing_until_drained_to_low() -> None:
    queue, calls = filled(6, 2)
    for _ in range(3):
        queue.pop()
    assert queue.size() == 3
    assert queue.push(99) is PushResult.FULL
    queue.pop()
    assert queue.is_writable()
    assert queue.push(99) is PushResult.ACCEPTED
    assert calls == ["k"]


def test_urgent_push_exceeds_high_watermark() -> None:
    queue, _ = filled(2)
    assert queue.push(7, urgent=True) is PushResult.ACCEPTED
    assert queue.size() == 3
    stats = queue.stats()
    assert (stats.pushes, stats.urgent_pushes, stats.refusals) == (3, 1, 0)


def test_urgent_push_blocks_a_writable_queue_at_high() -> None:
    queue: WatermarkQueue[int] = WatermarkQueue(2)
    queue.push(1)
    queue.push(2, urgent=True)
    assert queue.push(3) is PushResult.FULL


def test_pop_is_fifo_and_none_when_empty() -> None:
    queue: WatermarkQueue[int] = WatermarkQueue(5)
    for value in (1, 2, 3):
        queue.push(value)
    assert [queue.pop(), queue.pop(), queue.pop(), queue.pop()] == [1, 2, 3, None]


def test_feedback_fires_once_per_high_to_low_crossing() -> None:
    queue, calls = filled(3, 1)
    queue.pop()
    queue.pop()
    queue.pop()
    assert calls == ["k"]
    assert queue.pop() is None
    for value in range(3):
        queue.push(value)
    queue.pop()
    queue.pop()
    assert calls == ["k", "k"]
    assert queue.stats().feedbacks == 2


def test_no_feedback_when_high_was_never_reached() -> None:
    queue: WatermarkQueue[int] = WatermarkQueue(4, 1)
    calls: list[str] = []
    queue.add_listener(calls.append)
    for value in range(3):
        queue.push(value)
    while queue.pop() is not None:
        pass
    assert calls == []


def test_pop_batch_keeps_order_and_fires_feedback_once() -> None:
    queue, calls = filled(6, 4)
    assert queue.pop_batch(4) == [0, 1, 2, 3]
    assert queue.pop_batch(10) == [4, 5]
    assert queue.pop_batch(1) == []
    assert calls == ["k"]


def test_pop_batch_rejects_non_positive_sizes() -> None:
    with pytest.raises(ValueError):
        WatermarkQueue[int](2).pop_batch(0)


def test_feedback_runs_after_the_lock_is_released() -> None:
    queue, _ = filled(2, 0)
    seen: list[int] = []
    queue.add_listener(lambda key: seen.append(queue.size()))  # would deadlock under the lock
    queue.pop()
    queue.pop()
    assert seen == [0]


def test_every_listener_runs_even_when_one_raises() -> None:
    queue, calls = filled(1, 0)

    def broken(key: str) -> None:
        raise RuntimeError("boom")

    queue.add_listener(broken)
    queue.add_listener(calls.append)
    with pytest.raises(RuntimeError, match="boom"):
        queue.pop()
    assert calls == ["k", "k"]


@pytest.mark.timeout(30)
def test_concurrent_pushers_and_poppers_count_one_feedback_per_crossing() -> None:
    queue: WatermarkQueue[int] = WatermarkQueue(16, 4)
    feedbacks: list[str] = []
    queue.add_listener(feedbacks.append)
    total = 20_000
    received: list[int] = []
    done = threading.Event()

    def produce(start: int) -> None:
        value = start
        while value < total:
            if queue.push(value) is PushResult.ACCEPTED:
                value += 2

    def consume() -> None:
        while len(received) < total:
            received.extend(queue.pop_batch(8))
        done.set()

    threads = [
        threading.Thread(target=produce, args=(0,)),
        threading.Thread(target=produce, args=(1,)),
        threading.Thread(target=consume),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=25)
    assert done.is_set()
    assert sorted(received) == list(range(total))
    assert [v for v in received if v % 2 == 0] == list(range(0, total, 2))
    assert len(feedbacks) == queue.stats().feedbacks
