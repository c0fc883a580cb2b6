"""A pipeline's lifecycle in a collector: the transition table, and the registry that applies
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.collector import IllegalPipelineTransitionError, PipelineState
from pipeline_core.collector._launcher import lease_holder
from pipeline_core.collector._lifecycle import TRANSITIONS
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._registry import PipelineRegistry, Replacement
from pipeline_core.mailbox import IllegalThreadError, TaskMailbox
from pipeline_core.metastore import Metastore
from tests.support.pipelines import load

S = PipelineState


@pytest.mark.parametrize(
    ("state", "target"),
    [
        (S.READING, S.FINISHING),
        (S.READING, S.REMOVING),
        (S.READING, S.REPLACING),
        (S.READING, S.DONE),
        (S.FINISHING, S.DONE),
        (S.REMOVING, S.REMOVED),
        (S.REMOVING, S.REMOVING),
        (S.REMOVING, S.REPLACING),
        (S.REMOVING, S.FINISHING),
        (S.REPLACING, S.REPLACED),
        (S.REPLACING, S.REPLACING),
        (S.REPLACING, S.REMOVING),
        (S.REPLACING, S.FINISHING),
    ],
)
def test_should_allow_the_moves_of_the_lifecycle(state: S, target: S) -> None:
    assert state.can_become(target)
    state.check_transition("web", target)


@pytest.mark.parametrize(
    ("state", "target"),
    [
        (S.FINISHING, S.READING),
        (S.FINISHING, S.REMOVING),
        (S.READING, S.REMOVED),
        (S.READING, S.READING),
        (S.DONE, S.READING),
        (S.REMOVED, S.DONE),
        (S.REPLACED, S.REPLACING),
    ],
)
def test_should_refuse_a_move_the_lifecycle_does_not_allow(state: S, target: S) -> None:
    with pytest.raises(IllegalPipelineTransitionError) as refused:
        state.check_transition("web", target)
    assert (refused.value.pipeline, refused.value.state, refused.value.target) == (
        "web",
        state,
        target,
    )
    assert f"'web' is {state.value}: it cannot become {target.value}" in str(refused.value)


def test_should_end_every_sealing_state_in_its_own_final_state() -> None:
    assert {state: state.once_sealed() for state in S if state.sealing} == {
        S.FINISHING: S.DONE,
        S.REMOVING: S.REMOVED,
        S.REPLACING: S.REPLACED,
    }
    assert {state for state in S if state.final} == {S.DONE, S.REMOVED, S.REPLACED}
    assert set(TRANSITIONS) == set(S)
    with pytest.raises(ValueError, match="not sealing"):
        S.READING.once_sealed()


@pytest.fixture
def registry() -> PipelineRegistry:
    registry = PipelineRegistry()
    registry.bind(TaskMailbox())  # this thread is the mailbox thread
    return registry


def runtime(tmp_path: Path, metastore_url: str, metastore: Metastore, name: str) -> PipelineRuntime:
    config = load(tmp_path / name, metastore_url, name=name)
    return PipelineRuntime(config, metastore, lease_holder(config, "test"), None)


def test_should_move_a_pipeline_through_its_lifecycle_and_tell_listeners(
    registry: PipelineRegistry, tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    told: list[list[tuple[str, S]]] = []
    registry.subscribe(lambda served: told.append([(r.name, r.state) for r in served]))
    web = runtime(tmp_path, metastore_url, metastore, "web")
    changed = Replacement(web.config, metastore)

    registry.add(web)
    registry.move(web, S.REMOVING)
    registry.move(web, S.REPLACING, changed)
    assert registry.replacement("web") == changed
    registry.remove(web, S.REPLACED)

    assert told == [
        [("web", S.READING)],
        [("web", S.REMOVING)],
        [("web", S.REPLACING)],
        [],
    ]
    assert registry.get("web") is None and registry.replacement("web") is None
    web.watcher.close()


def test_should_refuse_an_illegal_move_and_leave_the_pipeline_as_it_was(
    registry: PipelineRegistry, tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    web = runtime(tmp_path, metastore_url, metastore, "web")
    registry.add(web)
    registry.move(web, S.FINISHING)

    with pytest.raises(IllegalPipelineTransitionError):
        registry.move(web, S.READING)
    with pytest.raises(IllegalPipelineTransitionError):
        registry.remove(web, S.REMOVED)
    assert web.state is S.FINISHING
    assert registry.names() == ["web"]
    web.watcher.close()


def test_should_keep_reading_order_and_refuse_pipelines_once_quiesced(
    registry: PipelineRegistry, tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    low = runtime(tmp_path, metastore_url, metastore, "low")
    high = runtime(tmp_path, metastore_url, metastore, "high")
    high.priority = 5
    registry.add(low)
    registry.add(high)
    registry.quiesce()
    late = runtime(tmp_path, metastore_url, metastore, "late")

    with pytest.raises(ValueError, match="stopping"):
        registry.add(late)
    assert registry.names() == ["high", "low"]
    assert [r.name for r in registry.runtimes()] == ["low", "high"]  # as added
    for served in (low, high, late):
        served.watcher.close()


def test_should_refuse_every_change_before_a_run_binds_it() -> None:
    with pytest.raises(IllegalThreadError, match="not running"):
        PipelineRegistry().quiesce()
