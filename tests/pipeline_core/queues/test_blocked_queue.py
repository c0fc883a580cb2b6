"""BlockedQueue: refused items wait per key and go back in order on the target's feedback."""

from __future__ import annotations

from pipeline_core.queues import BlockedQueue, Placement, QueueLevel


def target_with(keys: str, high: int = 3, low: int = 1) -> QueueLevel[str]:
    level: QueueLevel[str] = QueueLevel("target")
    for key in keys:
        level.add_queue(key, high, low)
    return level


def test_submit_delivers_while_the_target_is_writable() -> None:
    target = target_with("a")
    blocked = BlockedQueue(target)
    assert blocked.submit("a", "a1") is Placement.DELIVERED
    assert (target.size("a"), blocked.parked("a")) == (1, 0)


def test_submit_parks_when_the_target_is_full() -> None:
    target = target_with("a")
    blocked = BlockedQueue(target)
    placements = [blocked.submit("a", f"a{i}") for i in range(5)]
    assert placements == [Placement.DELIVERED] * 3 + [Placement.PARKED] * 2
    assert (blocked.parked("a"), blocked.total_parked(), blocked.parks) == (2, 2, 2)


def test_parked_items_return_in_order_on_feedback_until_full_again() -> None:
    target = target_with("a")
    blocked = BlockedQueue(target)
    for i in range(8):
        blocked.submit("a", f"a{i}")
    taken = [target.find_job(), target.find_job()]  # 3 -> 1: feedback, 2 parked items move in
    assert taken == [("a", "a0"), ("a", "a1")]
    assert blocked.moved == 2
    assert (target.size("a"), blocked.parked("a")) == (3, 3)
    received = [item for _, item in iter(target.find_job, None)]
    assert received == [f"a{i}" for i in range(2, 8)]
    assert blocked.total_parked() == 0


def test_submit_parks_behind_already_parked_items_of_its_key() -> None:
    target = target_with("ab", high=1, low=0)
    blocked = BlockedQueue(target)
    blocked.submit("a", "a1")
    blocked.submit("a", "a2")
    blocked.park("a", "a3")
    assert blocked.submit("b", "b1") is Placement.DELIVERED
    target.find_job()  # a1 out; feedback for "a" moves a2 in
    assert blocked.parked("a") == 1
    received = [item for _, item in iter(target.find_job, None)]
    assert received == ["b1", "a2", "a3"]


def test_feedback_for_another_key_moves_nothing() -> None:
    target = target_with("ab", high=1, low=0)
    blocked = BlockedQueue(target)
    blocked.submit("a", "a1")
    blocked.submit("a", "a2")
    blocked.submit("b", "b1")
    assert blocked.on_writable("b") == 0
    assert blocked.parked("a") == 1


def test_urgent_submit_passes_the_high_watermark() -> None:
    target = target_with("a")
    blocked = BlockedQueue(target)
    for i in range(3):
        blocked.submit("a", f"a{i}")
    assert blocked.submit("a", "barrier", urgent=True) is Placement.DELIVERED
    assert (target.size("a"), blocked.parked("a")) == (4, 0)


def test_urgent_submit_parks_behind_parked_items_of_its_key() -> None:
    target = target_with("a")
    blocked = BlockedQueue(target)
    for i in range(4):
        blocked.submit("a", f"a{i}")
    assert blocked.submit("a", "barrier", urgent=True) is Placement.PARKED
    received = [item for _, item in iter(target.find_job, None)]
    assert received == ["a0", "a1", "a2", "a3", "barrier"]
