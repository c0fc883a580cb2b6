"""Penalty and backoff state of the sinks of a group, kept across collector restarts."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

log = logging.getLogger(__name__)


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


class SinkHealthBook:
    """The health of one group's sinks by name: every change is saved to the group's store;
    what the store saved before is read once, by :meth:`saved`.

    Threading model: used by the group's delivery thread only.
    """

    def __init__(self, group: str, names: Iterable[str], store: SinkStateStore | None) -> None:
        self._group = group
        self._store = store
        self._health: dict[str, SinkHealth] = dict.fromkeys(names, HEALTHY)
        self._read = False

    def __getitem__(self, name: str) -> SinkHealth:
        return self._health[name]

    def __contains__(self, name: object) -> bool:
        return name in self._health

    def as_dict(self) -> dict[str, SinkHealth]:
        return dict(self._health)

    def set(self, name: str, health: SinkHealth, *, save: bool = True) -> None:
        self._health[name] = health
        if save and self._store is not None:
            self._store.save(self._group, name, health)

    def bound(self, now: float, longest: float) -> list[str]:
        """Shorten to ``longest`` seconds from ``now`` every exclusion that runs longer: no
        penalty is ever longer, so such a one was set before this host's wall clock stepped
        back (or saved by a host whose clock was ahead). Returns the sinks shortened."""
        shortened = []
        for name, health in self._health.items():
            if health.excluded_until - now > longest:
                self.set(name, replace(health, excluded_until=now + longest))
                shortened.append(name)
        if shortened:
            log.warning(
                "sink group %r: the exclusion of %s ran past its longest (%.0f s): this "
                "host's wall clock stepped back; shortened to it",
                self._group,
                ", ".join(shortened),
                longest,
            )
        return shortened

    def saved(self) -> dict[str, SinkHealth]:
        """The store's saved health of this group's known sinks, the first time; ``{}`` then
        (and without a store)."""
        if self._read or self._store is None:
            self._read = True
            return {}
        self._read = True
        return {n: h for n, h in self._store.load(self._group).items() if n in self._health}
