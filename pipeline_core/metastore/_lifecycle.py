"""The checkpoint lifecycle as data: its states, which moves between them are legal, which
states can be landed.

::

    REQUESTED ──► SEALED ──► COMMITTED ──┐
        │            │           ▲       │ committed again (landed again)
        │            │           └───────┘
        └────────────┴──► FAILED (can no longer be sealed or landed; its error is stored)

Every state change the metastore writes is checked against :data:`TRANSITIONS`
(:meth:`CheckpointState.check_transition`); a checkpoint can be landed (again) exactly when it
may become COMMITTED.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline_core._compat import StrEnum
from pipeline_core.errors import CheckpointError


class CheckpointState(StrEnum):
    """Lifecycle of a checkpoint: REQUESTED -> SEALED -> COMMITTED (or FAILED)."""

    REQUESTED = "requested"
    """Asked for (by a DAG run, the CLI, a collector stopping); waits for its hosts' batches."""
    SEALED = "sealed"
    """Every host it waits for recorded its batch: ready to land."""
    COMMITTED = "committed"
    """Landed, with the landing job's counts; may be landed and committed again."""
    FAILED = "failed"
    """Can no longer be sealed or landed; ``error`` says why."""

    @property
    def landable(self) -> bool:
        """True when the Spark job can land the checkpoint's batches (again): it may become
        COMMITTED."""
        return self.can_become(CheckpointState.COMMITTED)

    def can_become(self, target: CheckpointState) -> bool:
        """True when the lifecycle allows the move from this state to ``target``."""
        return target in TRANSITIONS[self]

    def check_transition(self, checkpoint_id: int, target: CheckpointState) -> None:
        """Do nothing when checkpoint ``checkpoint_id``, in this state, may become ``target``.

        Raises:
            IllegalTransitionError: the lifecycle does not allow that move.
        """
        if not self.can_become(target):
            raise IllegalTransitionError(checkpoint_id, self, target)

    def check_landable(self, checkpoint_id: int, error: str | None = None) -> None:
        """Do nothing when checkpoint ``checkpoint_id``, in this state, can be landed.

        Raises:
            CheckpointFailedError: it is FAILED (``error`` is the one stored with it).
            CheckpointError: it is not sealed yet.
        """
        if self is CheckpointState.FAILED:
            raise CheckpointFailedError(checkpoint_id, error)
        if not self.landable:
            landable = " or ".join(state.value for state in CheckpointState if state.landable)
            raise CheckpointError(
                f"checkpoint {checkpoint_id} is {self.value}; only {landable} checkpoints can "
                "be landed"
            )


TRANSITIONS: Mapping[CheckpointState, frozenset[CheckpointState]] = {
    CheckpointState.REQUESTED: frozenset({CheckpointState.SEALED, CheckpointState.FAILED}),
    CheckpointState.SEALED: frozenset({CheckpointState.COMMITTED, CheckpointState.FAILED}),
    CheckpointState.COMMITTED: frozenset({CheckpointState.COMMITTED}),
    CheckpointState.FAILED: frozenset(),
}
"""The states each state may move to. COMMITTED -> COMMITTED is a landing committed again (a
reprocess or a backfill); FAILED is final."""


class IllegalTransitionError(CheckpointError):
    """A checkpoint was asked to move to a state its lifecycle does not allow from the one it
    is in (see :data:`TRANSITIONS`). The message names the checkpoint, its state and the one
    asked for."""

    def __init__(self, checkpoint_id: int, state: CheckpointState, target: CheckpointState) -> None:
        self.checkpoint_id = checkpoint_id
        self.state = state
        self.target = target
        sources = " or ".join(s.value for s in CheckpointState if s.can_become(target))
        allowed = f"only {sources} checkpoints can" if sources else "no checkpoint can"
        super().__init__(
            f"checkpoint {checkpoint_id} is {state.value}; {allowed} become {target.value}"
        )


class CheckpointFailedError(CheckpointError):
    """The checkpoint is FAILED: it can no longer be sealed or landed. The message holds the
    error stored with it."""

    def __init__(self, checkpoint_id: int, error: str | None) -> None:
        self.checkpoint_id = checkpoint_id
        self.error = error
        super().__init__(
            f"checkpoint {checkpoint_id} failed and can no longer be sealed or landed: "
            f"{error or 'no error was recorded'}"
        )
