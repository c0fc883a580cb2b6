"""A collector's run modes, and a pipeline's lifecycle inside a run as data: its states and the
legal moves between them.

::

    READING ─┬─► FINISHING ──(sealed)──► DONE
             ├─► REMOVING ───(sealed)──► REMOVED
             └─► REPLACING ──(sealed)──► REPLACED (served again from its new config)

    REMOVING ◄─► REPLACING    another change of its config while it seals (or the same again)
    REMOVING, REPLACING ─► FINISHING    a stop: it ends with the collector
    READING, REMOVING, REPLACING ─► DONE    the run ended first: closed with the collector

Every move goes through ``PipelineRegistry.move``, which checks it against :data:`TRANSITIONS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from pipeline_core.errors import SluiceError


class CollectorMode(Enum):
    ONCE = "once"
    """Read every file to its current end, seal the requested checkpoints, stop."""
    CONTINUOUS = "continuous"
    """Tail until stopped, sealing each checkpoint requested meanwhile; seal on stop."""


class PipelineState(Enum):
    """Lifecycle of a pipeline in a collector's run (the value is what metrics report)."""

    READING = "reading"
    """Tailing its files."""
    FINISHING = "finishing"
    """Barriers for its last checkpoints are in flight; no more reading. Then DONE."""
    REMOVING = "removing"
    """As FINISHING, then REMOVED: its config is gone (continuous mode)."""
    REPLACING = "replacing"
    """As FINISHING, then REPLACED: its config changed (continuous mode)."""
    DONE = "done"
    """Everything it read is sealed (or the run ended first); it stops with the collector."""
    REMOVED = "removed"
    """Sealed, stopped and no longer served."""
    REPLACED = "replaced"
    """Sealed and stopped; a pipeline of the same name is served from its new config."""

    @property
    def sealing(self) -> bool:
        """True while barriers for its last checkpoints are in flight (no more reading)."""
        return self in _ONCE_SEALED

    @property
    def final(self) -> bool:
        """True when no move leaves the state."""
        return not TRANSITIONS[self]

    def once_sealed(self) -> PipelineState:
        """What a sealing pipeline becomes when its last batch is sealed.

        Raises:
            ValueError: the state is not a sealing one.
        """
        try:
            return _ONCE_SEALED[self]
        except KeyError:
            raise ValueError(f"a {self.value} pipeline is not sealing") from None

    def can_become(self, target: PipelineState) -> bool:
        return target in TRANSITIONS[self]

    def check_transition(self, pipeline: str, target: PipelineState) -> None:
        """Do nothing when ``pipeline``, in this state, may become ``target``.

        Raises:
            IllegalPipelineTransitionError: the lifecycle does not allow that move.
        """
        if not self.can_become(target):
            raise IllegalPipelineTransitionError(pipeline, self, target)


TRANSITIONS: Mapping[PipelineState, frozenset[PipelineState]] = {
    PipelineState.READING: frozenset(
        {
            PipelineState.FINISHING,
            PipelineState.REMOVING,
            PipelineState.REPLACING,
            PipelineState.DONE,
        }
    ),
    PipelineState.FINISHING: frozenset({PipelineState.DONE}),
    PipelineState.REMOVING: frozenset(
        {
            PipelineState.REMOVED,
            PipelineState.REMOVING,
            PipelineState.REPLACING,
            PipelineState.FINISHING,
            PipelineState.DONE,
        }
    ),
    PipelineState.REPLACING: frozenset(
        {
            PipelineState.REPLACED,
            PipelineState.REPLACING,
            PipelineState.REMOVING,
            PipelineState.FINISHING,
            PipelineState.DONE,
        }
    ),
    PipelineState.DONE: frozenset(),
    PipelineState.REMOVED: frozenset(),
    PipelineState.REPLACED: frozenset(),
}
"""The states each state may move to. A removal or change while sealing switches between
REMOVING and REPLACING (or repeats one: REPLACING again is a newer config); a stop turns both
into FINISHING (the pipeline then ends with the collector; the next run serves the config on
disk); a run that ends before a pipeline is sealed closes it as DONE."""

_ONCE_SEALED: Mapping[PipelineState, PipelineState] = {
    PipelineState.FINISHING: PipelineState.DONE,
    PipelineState.REMOVING: PipelineState.REMOVED,
    PipelineState.REPLACING: PipelineState.REPLACED,
}


class IllegalPipelineTransitionError(SluiceError):
    """A pipeline was asked to move to a state its lifecycle does not allow from its own.

    Always a programming error in the collector; the message names the pipeline and both
    states.
    """

    def __init__(self, pipeline: str, state: PipelineState, target: PipelineState) -> None:
        super().__init__(f"pipeline {pipeline!r} is {state.value}: it cannot become {target.value}")
        self.pipeline = pipeline
        self.state = state
        self.target = target
