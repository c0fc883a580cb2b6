"""CheckpointSealedSensor: pokes until SEALED/COMMITTED, fails at once on FAILED."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk.exceptions import (
    AirflowFailException,
    AirflowRescheduleException,
    AirflowSkipException,
)
from sluice_airflow.sensors.sluice import CheckpointFailedError, CheckpointSealedSensor

from pipeline_core.operations import CheckpointState
from tests.support.fake_pipeline import FakePipeline, FakeTaskInstance, make_context

CONFIG = "/etc/sluice/web_access.yaml"


def sensor(**kwargs: Any) -> CheckpointSealedSensor:
    arguments: dict[str, Any] = {
        "task_id": "wait_sealed",
        "config_path": CONFIG,
        "checkpoint_id": 1,
    }
    return CheckpointSealedSensor(**(arguments | kwargs))


def test_init_does_no_io(fake_pipeline: FakePipeline) -> None:
    CheckpointSealedSensor(task_id="wait_sealed", config_path="/missing.yaml", checkpoint_id=1)

    assert fake_pipeline.opened == []


def test_defaults_to_a_short_poke_interval_in_poke_mode() -> None:
    waiting = sensor()

    assert waiting.poke_interval == 5.0
    assert waiting.mode == "poke"


def test_reschedule_mode_can_be_chosen() -> None:
    assert sensor(mode="reschedule").reschedule is True


def test_template_fields() -> None:
    assert {"config_path", "checkpoint_id"} <= set(CheckpointSealedSensor.template_fields)


def test_checkpoint_id_is_rendered_from_xcom() -> None:
    waiting = sensor(checkpoint_id="{{ ti.xcom_pull(task_ids='request_checkpoint') }}")
    ti = FakeTaskInstance(xcoms={("request_checkpoint", "return_value"): 3})

    waiting.render_template_fields(make_context(ti))

    assert waiting.checkpoint_id == "3"


@pytest.mark.parametrize(
    ("state", "done"),
    [
        (CheckpointState.REQUESTED, False),
        (CheckpointState.SEALED, True),
        (CheckpointState.COMMITTED, True),
    ],
)
def test_poke_is_true_once_sealed(
    fake_pipeline: FakePipeline, state: CheckpointState, done: bool
) -> None:
    fake_pipeline.add_checkpoint(state)

    assert sensor(checkpoint_id="1").poke(make_context()) is done


def test_poke_raises_on_a_failed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.FAILED)

    with pytest.raises(CheckpointFailedError, match="checkpoint 1 of pipeline web_access failed"):
        sensor().poke(make_context())
    assert issubclass(CheckpointFailedError, AirflowFailException)


def test_execute_pokes_until_sealed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()
    fake_pipeline.state_script[1] = [
        CheckpointState.REQUESTED,
        CheckpointState.REQUESTED,
        CheckpointState.SEALED,
    ]

    sensor(poke_interval=0.01, timeout=10).execute(make_context())

    assert fake_pipeline.calls == [("checkpoint", 1)] * 3


def test_execute_fails_at_once_when_the_checkpoint_fails(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()
    fake_pipeline.state_script[1] = [CheckpointState.REQUESTED, CheckpointState.FAILED]

    with pytest.raises(CheckpointFailedError):
        sensor(poke_interval=0.01, timeout=10).execute(make_context())


def test_soft_fail_skips_on_a_failed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.FAILED)

    with pytest.raises(AirflowSkipException):
        sensor(soft_fail=True).execute(make_context())


def test_reschedule_mode_reschedules_while_not_sealed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()

    with pytest.raises(AirflowRescheduleException):
        sensor(mode="reschedule").execute(make_context())
