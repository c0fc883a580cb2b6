"""Penalty and backoff state of the sinks of a group, kept across collector restarts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SinkHealth:
    """What a sink processor knows about one sink's recent failures.

    Attributes:
        consecutive_failures: failures since its last success (Flume's sequential failures).
        excluded_until: epoch seconds before which the sink is not tried (0: not excluded).
        last_error: the last failure's message, for operators.
        last_failure_at: epoch seconds of the last failure (0: none).
    """

    consecutive_failures: int = 0
    excluded_until: float = 0.0
    last_error: str | None = None
    last_failure_at: float = 0.0


HEALTHY = SinkHealth()


class SinkStateStore(Protocol):
    """Where a sink group's penalty/backoff state lives (the metastore in the collector).

    ``load`` is called once when the processor starts; ``save`` after every change. An
    implementation coalesces: it may keep the latest state in memory and write it later.
    """

    def load(self, group: str) -> Mapping[str, SinkHealth]: ...

    def save(self, group: str, sink: str, health: SinkHealth) -> None: ...


class InMemorySinkStateStore:
    """A ``SinkStateStore`` that forgets on restart (tests, and groups with no metastore)."""

    def __init__(self) -> None:
        self.states: dict[tuple[str, str], SinkHealth] = {}

    def load(self, group: str) -> Mapping[str, SinkHealth]:
        return {sink: health for (g, sink), health in self.states.items() if g == group}

    def save(self, group: str, sink: str, health: SinkHealth) -> None:
        self.states[(group, sink)] = health
