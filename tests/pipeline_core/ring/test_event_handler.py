from __future__ import annotations

import pytest

from pipeline_core.ring import EventHandler, RewindableEventHandler, Sequence
from tests.pipeline_core.ring.support import StubEvent


class OnlyOnEvent(EventHandler[StubEvent]):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
        self.seen.append(sequence)


def test_should_need_only_on_event() -> None:
    handler = OnlyOnEvent()
    handler.on_start()
    handler.on_batch_start(3, 5)
    handler.on_event(StubEvent(), 0, True)
    handler.on_timeout(0)
    handler.set_sequence_callback(Sequence())
    handler.on_shutdown()
    assert handler.seen == [0]


def test_should_not_instantiate_without_on_event() -> None:
    with pytest.raises(TypeError):
        EventHandler()  # type: ignore[abstract]


def test_rewindable_handler_should_be_an_event_handler() -> None:
    class Rewinding(RewindableEventHandler[StubEvent]):
        def on_event(self, event: StubEvent, sequence: int, end_of_batch: bool) -> None:
            pass

    assert isinstance(Rewinding(), EventHandler)
    assert not isinstance(OnlyOnEvent(), RewindableEventHandler)
