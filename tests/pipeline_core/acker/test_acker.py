"""The XOR acker: trees complete at 0 whatever the order, fails, timeouts, O(1) state."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field

import pytest

from pipeline_core.acker import Acker, TreeOutcome, TreeSource, new_id


@dataclass
class Listener:
    acked: list[int] = field(default_factory=list)
    failed: list[tuple[int, TreeOutcome]] = field(default_factory=list)

    def on_tree_acked(self, tree_id: int, source: TreeSource) -> None:
        self.acked.append(tree_id)

    def on_tree_failed(self, tree_id: int, source: TreeSource, outcome: TreeOutcome) -> None:
        self.failed.append((tree_id, outcome))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


SOURCE = TreeSource("access", "fp", 0, 100, 3)


def acker(timeout: float = 30.0) -> tuple[Acker, Listener, Clock]:
    listener, clock = Listener(), Clock()
    return Acker(listener, timeout=timeout, clock=clock), listener, clock


def test_should_complete_a_tree_when_every_anchored_id_is_acked() -> None:
    subject, listener, _ = acker()
    root, a, b = new_id(), new_id(), new_id()
    subject.init(1, root, SOURCE)
    subject.ack(1, root ^ a ^ b)  # the send stage: acks the root, anchors one id per group
    subject.ack(1, a)
    assert listener.acked == []
    subject.ack(1, b)
    assert listener.acked == [1]
    assert subject.pending == 0


def test_should_complete_whatever_order_the_acks_arrive_in() -> None:
    rng = random.Random(7)
    for _ in range(50):
        subject, listener, _ = acker()
        root = new_id()
        children = [new_id() for _ in range(rng.randint(1, 5))]
        grandchildren = {c: [new_id() for _ in range(rng.randint(0, 3))] for c in children}
        messages = [("ack", root ^ _xor(children))]
        for child, below in grandchildren.items():
            messages.append(("ack", child ^ _xor(below)))
            messages += [("ack", g) for g in below]
        messages.append(("init", root))
        rng.shuffle(messages)
        for kind, value in messages:
            if kind == "init":
                subject.init(9, value, SOURCE)
            else:
                subject.ack(9, value)
        assert listener.acked == [9]


def _xor(values: list[int]) -> int:
    result = 0
    for value in values:
        result ^= value
    return result


def test_should_fail_a_tree_at_once() -> None:
    subject, listener, _ = acker()
    subject.init(1, new_id(), SOURCE)
    subject.fail(1)
    assert listener.failed == [(1, TreeOutcome.FAILED)]
    assert subject.pending == 0


def test_should_keep_a_fail_that_arrives_before_the_init() -> None:
    subject, listener, _ = acker()
    subject.fail(1)
    assert listener.failed == []
    subject.init(1, new_id(), SOURCE)
    assert listener.failed == [(1, TreeOutcome.FAILED)]


def test_should_not_complete_a_failed_tree_when_its_acks_arrive_later() -> None:
    subject, listener, _ = acker()
    root = new_id()
    subject.fail(1)
    subject.init(1, root, SOURCE)
    subject.ack(1, root)
    assert listener.acked == []


def test_should_time_out_trees_older_than_the_timeout() -> None:
    subject, listener, clock = acker(timeout=30)
    subject.init(1, new_id(), SOURCE)
    clock.now += 10
    subject.init(2, new_id(), SOURCE)
    clock.now += 20
    assert subject.sweep() == 1
    assert listener.failed == [(1, TreeOutcome.TIMED_OUT)]
    assert subject.pending == 1


def test_should_drop_acks_for_a_tree_never_initialised_at_the_timeout() -> None:
    subject, listener, clock = acker(timeout=30)
    subject.ack(5, new_id())
    clock.now += 31
    assert subject.sweep() == 0
    assert listener.failed == []
    assert subject.in_flight() == []


def test_should_refuse_a_second_init_of_one_tree() -> None:
    subject, _, _ = acker()
    subject.init(1, new_id(), SOURCE)
    with pytest.raises(ValueError, match="twice"):
        subject.init(1, new_id(), SOURCE)


def test_should_list_in_flight_trees_with_their_value_and_age() -> None:
    subject, _, clock = acker()
    root = new_id()
    subject.init(1, root, SOURCE)
    clock.now += 4
    (record,) = subject.in_flight()
    assert (record.tree_id, record.value, record.source, record.age_seconds) == (1, root, SOURCE, 4)


def test_should_keep_the_state_of_a_tree_small() -> None:
    subject, _, _ = acker()
    subject.init(1, new_id(), SOURCE)
    tree = next(iter(subject._trees.values()))
    assert not hasattr(tree, "__dict__")
    assert sys.getsizeof(tree) <= 80


def test_should_draw_non_zero_64_bit_ids() -> None:
    ids = {new_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(0 < value < 2**64 for value in ids)
