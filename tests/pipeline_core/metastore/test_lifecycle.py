"""CheckpointState: the legal moves, what can be landed, and the errors for the rest."""

from __future__ import annotations

import pytest

from pipeline_core.errors import CheckpointError
from pipeline_core.metastore import (
    TRANSITIONS,
    CheckpointFailedError,
    CheckpointState,
    IllegalTransitionError,
)

REQUESTED, SEALED, COMMITTED, FAILED = (
    CheckpointState.REQUESTED,
    CheckpointState.SEALED,
    CheckpointState.COMMITTED,
    CheckpointState.FAILED,
)
LEGAL = {
    (REQUESTED, SEALED),
    (REQUESTED, FAILED),
    (SEALED, COMMITTED),
    (SEALED, FAILED),
    (COMMITTED, COMMITTED),
}


def test_should_name_every_state_in_the_transition_table() -> None:
    assert set(TRANSITIONS) == set(CheckpointState)


@pytest.mark.parametrize("state", list(CheckpointState))
@pytest.mark.parametrize("target", list(CheckpointState))
def test_should_allow_exactly_the_legal_moves(
    state: CheckpointState, target: CheckpointState
) -> None:
    assert state.can_become(target) is ((state, target) in LEGAL)


def test_should_land_only_sealed_or_committed_checkpoints() -> None:
    assert [state for state in CheckpointState if state.landable] == [SEALED, COMMITTED]


def test_should_keep_a_failed_checkpoint_failed_for_good() -> None:
    assert not any(FAILED.can_become(target) for target in CheckpointState)


def test_should_name_the_checkpoint_its_state_and_the_one_asked_for() -> None:
    with pytest.raises(IllegalTransitionError) as raised:
        COMMITTED.check_transition(7, FAILED)

    assert str(raised.value) == (
        "checkpoint 7 is committed; only requested or sealed checkpoints can become failed"
    )
    assert (raised.value.checkpoint_id, raised.value.state, raised.value.target) == (
        7,
        COMMITTED,
        FAILED,
    )
    assert isinstance(raised.value, CheckpointError)


def test_should_say_when_no_state_leads_to_the_one_asked_for() -> None:
    with pytest.raises(IllegalTransitionError, match="no checkpoint can become requested"):
        SEALED.check_transition(3, REQUESTED)


def test_should_pass_a_legal_move() -> None:
    REQUESTED.check_transition(3, SEALED)
    COMMITTED.check_transition(3, COMMITTED)


def test_should_refuse_to_land_a_requested_checkpoint() -> None:
    with pytest.raises(
        CheckpointError, match="checkpoint 3 is requested; only sealed or committed"
    ):
        REQUESTED.check_landable(3)


def test_should_refuse_to_land_a_failed_checkpoint_with_its_error() -> None:
    with pytest.raises(
        CheckpointFailedError, match=r"checkpoint 3 failed .*: batch gone"
    ) as raised:
        FAILED.check_landable(3, "batch gone")

    assert raised.value.error == "batch gone"


def test_should_land_sealed_and_committed_checkpoints() -> None:
    SEALED.check_landable(3)
    COMMITTED.check_landable(3)
