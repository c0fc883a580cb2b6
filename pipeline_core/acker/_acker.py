"""``Acker``: one XOR per message tree (Storm's acker), with fail, timeout and callbacks."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Storm's ``topology.message.timeout.secs``."""

_local = threading.local()


def new_id() -> int:
    """A random, non-zero 64-bit id (a thread-local generator: no lock on the hot path)."""
    generator: random.Random | None = getattr(_local, "random", None)
    if generator is None:
        generator = _local.random = random.Random()
    while True:
        value = generator.getrandbits(64)
        if value:
            return value


@dataclass(frozen=True, slots=True)
class TreeSource:
    """What a tree stands for: bytes ``[start, end)`` of one file, as read by the reader."""

    source: str
    fingerprint: str
    start: int
    end: int
    lines: int


class TreeOutcome(Enum):
    ACKED = "acked"
    FAILED = "failed"
    """A stage reported a failure: replay."""
    TIMED_OUT = "timed_out"
    """Not acked within the timeout: replay."""


@dataclass(frozen=True, slots=True)
class TreeRecord:
    """An in-flight tree as persisted in the metastore (so a restart knows what was in flight)."""

    tree_id: int
    value: int
    source: TreeSource
    age_seconds: float


class AckerListener(Protocol):
    """The source side: told when a tree is done or must be replayed (mailbox thread)."""

    def on_tree_acked(self, tree_id: int, source: TreeSource) -> None: ...

    def on_tree_failed(self, tree_id: int, source: TreeSource, outcome: TreeOutcome) -> None: ...


class _Tree:
    """O(1) state per tree: the XOR of the ids still owed, and where it came from."""

    __slots__ = ("failed", "source", "started", "value")

    def __init__(self, started: float) -> None:
        self.value = 0
        self.source: TreeSource | None = None
        self.started = started
        self.failed = False


class Acker:
    """Tracks message trees by XOR.

    * ``init(tree, root)`` starts a tree; ``ack(tree, x)`` XORs ``x`` (the id acked XOR the ids
      anchored on it) into its value; at 0 the tree is complete and ``on_tree_acked`` is called.
      Acks may arrive before the init (XOR is commutative): the tree completes once both are in.
    * ``fail(tree)`` fails it at once (``on_tree_failed``); a fail that arrives before the init
      is kept, and the init then fails the tree immediately.
    * ``sweep()`` times out trees older than ``timeout`` seconds (``on_tree_failed`` with
      ``TIMED_OUT``); entries that only ever got acks (their init never came: a tree already
      replayed under a new id, for example) are dropped silently.

    Threading model: owned by one thread (the collector's mailbox thread); other threads send
    their acks and fails to it as mail.
    """

    def __init__(
        self,
        listener: AckerListener,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._listener = listener
        self._timeout = timeout
        self._clock = clock
        self._trees: dict[int, _Tree] = {}
        self._initialised = 0
        self.acked = 0
        self.failed = 0
        self.timed_out = 0

    @property
    def pending(self) -> int:
        """Trees initialised and not yet acked, failed or timed out."""
        return self._initialised

    def init(self, tree_id: int, root_id: int, source: TreeSource) -> None:
        tree = self._trees.get(tree_id)
        if tree is None:
            tree = self._trees[tree_id] = _Tree(self._clock())
        elif tree.source is not None:
            raise ValueError(f"tree {tree_id:#x} was initialised twice")
        tree.source = source
        tree.value ^= root_id
        self._initialised += 1
        if tree.failed:
            self._finish(tree_id, tree, TreeOutcome.FAILED)
        elif tree.value == 0:
            self._finish(tree_id, tree, TreeOutcome.ACKED)

    def ack(self, tree_id: int, ack_value: int) -> None:
        tree = self._trees.get(tree_id)
        if tree is None:
            tree = self._trees[tree_id] = _Tree(self._clock())
        tree.value ^= ack_value
        if tree.value == 0 and tree.source is not None and not tree.failed:
            self._finish(tree_id, tree, TreeOutcome.ACKED)

    def ack_all(self, acks: Iterable[tuple[int, int]]) -> None:
        for tree_id, ack_value in acks:
            self.ack(tree_id, ack_value)

    def fail(self, tree_id: int) -> None:
        tree = self._trees.get(tree_id)
        if tree is None:
            tree = self._trees[tree_id] = _Tree(self._clock())
        tree.failed = True
        if tree.source is not None:
            self._finish(tree_id, tree, TreeOutcome.FAILED)

    def sweep(self) -> int:
        """Time out every tree older than the timeout; returns how many timed out."""
        deadline = self._clock() - self._timeout
        expired = [tid for tid, tree in self._trees.items() if tree.started <= deadline]
        timed_out = 0
        for tree_id in expired:
            tree = self._trees[tree_id]
            if tree.source is None:
                del self._trees[tree_id]  # acks or a fail for a tree never initialised here
                continue
            self._finish(tree_id, tree, TreeOutcome.TIMED_OUT)
            timed_out += 1
        return timed_out

    def in_flight(self) -> list[TreeRecord]:
        """Every initialised, unfinished tree (for the metastore)."""
        now = self._clock()
        return [
            TreeRecord(tree_id, tree.value, tree.source, now - tree.started)
            for tree_id, tree in self._trees.items()
            if tree.source is not None
        ]

    def _finish(self, tree_id: int, tree: _Tree, outcome: TreeOutcome) -> None:
        del self._trees[tree_id]
        self._initialised -= 1
        source = tree.source
        assert source is not None
        if outcome is TreeOutcome.ACKED:
            self.acked += 1
            self._listener.on_tree_acked(tree_id, source)
            return
        if outcome is TreeOutcome.FAILED:
            self.failed += 1
        else:
            self.timed_out += 1
        log.info(
            "tree %#x (%s bytes %d-%d) %s: replaying",
            tree_id,
            source.fingerprint,
            source.start,
            source.end,
            outcome.value,
        )
        self._listener.on_tree_failed(tree_id, source, outcome)
