from __future__ import annotations

import threading

import pytest

from pipeline_core.ring import INITIAL_CURSOR_VALUE, FixedSequenceGroup, Sequence


def test_should_start_at_initial_cursor_value() -> None:
    assert INITIAL_CURSOR_VALUE == -1
    assert Sequence().get() == INITIAL_CURSOR_VALUE
    assert Sequence(41).get() == 41


def test_should_store_value_with_set() -> None:
    sequence = Sequence()
    sequence.set(7)
    assert sequence.get() == 7


def test_should_compare_and_set_only_when_expected_value_matches() -> None:
    sequence = Sequence(3)
    assert sequence.compare_and_set(3, 4) is True
    assert sequence.get() == 4
    assert sequence.compare_and_set(3, 9) is False
    assert sequence.get() == 4


def test_should_increment_and_add_returning_new_value() -> None:
    sequence = Sequence()
    assert sequence.increment_and_get() == 0
    assert sequence.add_and_get(10) == 10
    assert sequence.get() == 10


@pytest.mark.timeout(30)
def test_should_not_lose_concurrent_increments() -> None:
    sequence = Sequence(0)
    per_thread = 20_000

    def add() -> None:
        for _ in range(per_thread):
            sequence.increment_and_get()

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert sequence.get() == 4 * per_thread


@pytest.mark.timeout(30)
def test_should_let_exactly_one_compare_and_set_win_per_value() -> None:
    sequence = Sequence(0)
    wins: list[int] = []
    lock = threading.Lock()

    def race() -> None:
        for expected in range(5_000):
            if sequence.compare_and_set(expected, expected + 1):
                with lock:
                    wins.append(expected)

    threads = [threading.Thread(target=race) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert sorted(wins) == list(range(5_000))
    assert sequence.get() == 5_000


def test_group_should_report_minimum_of_its_sequences() -> None:
    first, second = Sequence(5), Sequence(3)
    group = FixedSequenceGroup([first, second])
    assert group.get() == 3
    second.set(9)
    assert group.get() == 5


def test_group_should_be_read_only() -> None:
    group = FixedSequenceGroup([Sequence(1)])
    with pytest.raises(NotImplementedError):
        group.set(2)
    with pytest.raises(NotImplementedError):
        group.compare_and_set(1, 2)
    with pytest.raises(NotImplementedError):
        group.increment_and_get()


def test_group_should_need_at_least_one_sequence() -> None:
    with pytest.raises(ValueError):
        FixedSequenceGroup([])
