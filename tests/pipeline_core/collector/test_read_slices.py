"""The reading slice: rounds go on until the slice's time is up, or until a checkpoint's mail
waits (a request, a passed barrier): a checkpoint waits for no slice to end."""

from __future__ import annotations

import time
from typing import Any, cast

from pipeline_core.collector import CollectorMode
from pipeline_core.collector._scheduler import ReadScheduler, _Turn
from pipeline_core.mailbox import MAX_PRIORITY, MIN_PRIORITY, Mail, TaskMailbox

SLICE_SECONDS = 0.3


class Busy:
    """A pipeline that always has a chunk to read."""

    name = "busy"

    def mark_blocked(self, blocked: bool) -> None:
        pass


class AlwaysReading(ReadScheduler):
    """The scheduler, each turn reading a chunk; ``during(turn)`` runs at each turn."""

    def __init__(self, mailbox: TaskMailbox, during: Any) -> None:
        none = cast(Any, None)
        super().__init__(
            mailbox, none, none, none, None, CollectorMode.CONTINUOUS, slice_seconds=SLICE_SECONDS
        )
        self.turns = 0
        self._during = during

    def _serve(self, runtime: Any) -> _Turn:
        self.turns += 1
        self._during(self.turns)
        return _Turn.READ


def rounds(mailbox: TaskMailbox, put_at_turn: int, priority: int) -> tuple[int, float]:
    """Turns taken and seconds spent by one slice of rounds, with a mail of ``priority``
    put at turn ``put_at_turn``."""

    def during(turn: int) -> None:
        if turn == put_at_turn:
            mailbox.put(Mail(lambda: None, priority, "news"), wake=False)

    scheduler = AlwaysReading(mailbox, during)
    started = time.monotonic()
    assert scheduler._read_rounds([cast(Any, Busy())], started) is None  # the slice ended
    return scheduler.turns, time.monotonic() - started


def test_should_end_the_slice_when_a_checkpoint_mail_waits() -> None:
    turns, seconds = rounds(TaskMailbox(), put_at_turn=3, priority=MAX_PRIORITY)
    assert turns == 3
    assert seconds < SLICE_SECONDS


def test_should_read_on_for_the_whole_slice_past_other_mail() -> None:
    turns, seconds = rounds(TaskMailbox(), put_at_turn=3, priority=MIN_PRIORITY)
    assert turns > 3
    assert seconds >= SLICE_SECONDS
