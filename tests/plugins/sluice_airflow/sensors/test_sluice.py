"""CheckpointSealedSensor: defers (or pokes) until SEALED/COMMITTED, fails at once on FAILED."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import conf
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowRescheduleException,
    AirflowSkipException,
    TaskDeferred,
)
from sluice_airflow.sensors.sluice import CheckpointNeverSealedError, CheckpointSealedSensor
from sluice_airflow.triggers.sluice import CheckpointSealedTrigger

from pipeline_core.metastore import Metastore
from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.testing import append
from tests.support.fake_pipeline import FakePipeline, FakeTaskInstance, make_context
from tests.support.lease_holders import waiting_for_a_killed_host
from tests.support.pipelines import write_config

CONFIG = "/etc/sluice/web_access.yaml"
DEFAULT_DEFERRABLE_ENV = "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"
SHOW_DEFAULT_DEFERRABLE = """
from sluice_airflow.sensors.sluice import CheckpointSealedSensor
print(CheckpointSealedSensor(task_id="w", config_path="/x.yaml", checkpoint_id=1).deferrable)
"""
LINE = b'10.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET /item/1 HTTP/1.1" 200 12 "-" "t/1"'


def sensor(**kwargs: Any) -> CheckpointSealedSensor:
    """A poking sensor (``deferrable=False``) unless told otherwise."""
    arguments: dict[str, Any] = {
        "task_id": "wait_sealed",
        "config_path": CONFIG,
        "checkpoint_id": 1,
        "deferrable": False,
    }
    return CheckpointSealedSensor(**(arguments | kwargs))


def deferring(**kwargs: Any) -> CheckpointSealedSensor:
    return sensor(deferrable=True, **kwargs)


def test_init_does_no_io(fake_pipeline: FakePipeline) -> None:
    CheckpointSealedSensor(task_id="wait_sealed", config_path="/missing.yaml", checkpoint_id=1)

    assert fake_pipeline.opened == []


def test_defaults_to_airflows_default_deferrable_with_a_short_poke_interval() -> None:
    waiting = CheckpointSealedSensor(task_id="wait_sealed", config_path=CONFIG, checkpoint_id=1)

    assert waiting.deferrable is conf.getboolean("operators", "default_deferrable", fallback=False)
    assert waiting.poke_interval == 5.0
    assert waiting.mode == "poke"


@pytest.mark.parametrize(
    ("configured", "deferrable"), [("True", True), ("False", False), (None, False)]
)
def test_deferrable_defaults_to_operators_default_deferrable(
    configured: str | None, deferrable: bool
) -> None:
    """``[operators] default_deferrable`` (here from its environment variable) is read when the
    sensor's module is imported, as by Airflow's own sensors: a fresh process shows it."""
    env = {k: v for k, v in os.environ.items() if k != DEFAULT_DEFERRABLE_ENV}
    if configured is not None:
        env[DEFAULT_DEFERRABLE_ENV] = configured
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_DEFAULT_DEFERRABLE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert shown.stdout.split()[-1] == str(deferrable)


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

    with pytest.raises(
        CheckpointNeverSealedError, match="checkpoint 1 of pipeline web_access failed"
    ):
        sensor().poke(make_context())
    assert issubclass(CheckpointNeverSealedError, AirflowFailException)


def test_execute_pokes_until_sealed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()
    fake_pipeline.state_script[1] = [
        CheckpointState.REQUESTED,
        CheckpointState.REQUESTED,
        CheckpointState.SEALED,
    ]

    sensor(poke_interval=0.01, timeout=10).execute(make_context())

    # Each look at a requested checkpoint also excuses the hosts whose lease lapsed (none).
    looks_while_requested = [("checkpoint", 1), ("excuse_lapsed_hosts", 1)]
    assert fake_pipeline.calls == [*looks_while_requested * 2, ("checkpoint", 1)]


def test_poke_stops_waiting_for_hosts_whose_lease_lapsed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()

    assert sensor().poke(make_context()) is False
    fake_pipeline.lapsed_hosts[1] = ("host-b",)
    assert sensor().poke(make_context()) is True
    assert fake_pipeline.checkpoints[1].state is CheckpointState.SEALED


def test_poke_does_not_excuse_hosts_of_a_sealed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    assert sensor().poke(make_context()) is True
    assert fake_pipeline.calls == [("checkpoint", 1)]


def test_execute_fails_at_once_when_the_checkpoint_fails(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()
    fake_pipeline.state_script[1] = [CheckpointState.REQUESTED, CheckpointState.FAILED]

    with pytest.raises(CheckpointNeverSealedError):
        sensor(poke_interval=0.01, timeout=10).execute(make_context())


def test_soft_fail_skips_on_a_failed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.FAILED)

    with pytest.raises(AirflowSkipException):
        sensor(soft_fail=True).execute(make_context())


def test_reschedule_mode_reschedules_while_not_sealed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()

    with pytest.raises(AirflowRescheduleException):
        sensor(mode="reschedule").execute(make_context())


@pytest.mark.parametrize("value", ["[1, 2]", [1, 2]])
def test_poke_waits_for_every_checkpoint_of_a_list(
    fake_pipeline: FakePipeline, value: str | list[int]
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.REQUESTED)

    assert sensor(checkpoint_id=value).poke(make_context()) is False
    fake_pipeline.set_state(2, CheckpointState.COMMITTED)
    assert sensor(checkpoint_id=value).poke(make_context()) is True


def test_an_empty_list_is_sealed_at_once(fake_pipeline: FakePipeline) -> None:
    assert sensor(checkpoint_id="[]").poke(make_context()) is True
    assert deferring(checkpoint_id="[]").execute(make_context()) is None
    assert fake_pipeline.calls == []


# --- deferrable -------------------------------------------------------------------------------


def test_deferrable_does_not_defer_when_already_sealed(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    deferring().execute(make_context())

    assert fake_pipeline.calls == [("checkpoint", 1)]


def test_deferrable_defers_to_the_trigger_while_requested(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint()

    with pytest.raises(TaskDeferred) as deferred:
        deferring(checkpoint_id="1", poke_interval=2, timeout=600).execute(make_context())

    trigger = deferred.value.trigger
    assert isinstance(trigger, CheckpointSealedTrigger)
    assert trigger.serialize()[1] == {
        "config_path": CONFIG,
        "checkpoint_id": 1,
        "poll_interval": 2.0,
    }
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout is not None
    assert deferred.value.timeout.total_seconds() == 600


def test_deferrable_does_not_defer_when_excusing_lapsed_hosts_seals_it(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint()
    fake_pipeline.lapsed_hosts[1] = ("host-b",)

    deferring().execute(make_context())

    assert fake_pipeline.calls == [("checkpoint", 1), ("excuse_lapsed_hosts", 1), ("checkpoint", 1)]


def test_deferrable_defers_on_the_first_unsealed_checkpoint_of_a_list(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.REQUESTED)

    with pytest.raises(TaskDeferred) as deferred:
        deferring(checkpoint_id="[1, 2]").execute(make_context())

    assert deferred.value.trigger.serialize()[1]["checkpoint_id"] == 2


def test_deferrable_fails_at_once_on_a_failed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.FAILED)

    with pytest.raises(CheckpointNeverSealedError):
        deferring().execute(make_context())


def test_deferrable_soft_fail_skips_on_a_failed_checkpoint(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.FAILED)

    with pytest.raises(AirflowSkipException):
        deferring(soft_fail=True).execute(make_context())


def test_execute_complete_succeeds_on_a_sealed_event(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    event = {"status": "sealed", "checkpoint_id": 1, "state": "sealed", "reason": None}

    deferring().execute_complete(make_context(), event)

    assert fake_pipeline.calls == [("checkpoint", 1)]


def test_execute_complete_defers_again_for_the_rest_of_a_list(
    fake_pipeline: FakePipeline,
) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)
    fake_pipeline.add_checkpoint(CheckpointState.REQUESTED)
    event = {"status": "sealed", "checkpoint_id": 1, "state": "sealed", "reason": None}

    with pytest.raises(TaskDeferred) as deferred:
        deferring(checkpoint_id="[1, 2]").execute_complete(make_context(), event)

    assert deferred.value.trigger.serialize()[1]["checkpoint_id"] == 2


def test_execute_complete_fails_with_the_reason_on_a_failed_event() -> None:
    event = {
        "status": "failed",
        "checkpoint_id": 1,
        "pipeline": "web_access",
        "state": "failed",
        "reason": "sink lake gave up",
    }

    with pytest.raises(
        CheckpointNeverSealedError,
        match=r"checkpoint 1 of pipeline web_access failed.*sink lake gave up",
    ):
        deferring().execute_complete(make_context(), event)


def test_execute_complete_fails_on_an_error_event() -> None:
    event = {"status": "error", "checkpoint_id": 9, "reason": "there is no checkpoint 9"}

    with pytest.raises(AirflowException, match="there is no checkpoint 9"):
        deferring().execute_complete(make_context(), event)


# --- against a real metastore -----------------------------------------------------------------


@pytest.mark.timeout(120)
def test_poke_stops_waiting_for_a_killed_host_once_its_lease_lapses(
    tmp_path: Path, metastore_url: str
) -> None:
    """The non-deferrable path: a checkpoint waiting for a host whose collector was killed is
    sealed with this host's batch by the first poke after the dead host's lease lapsed."""
    config = write_config(tmp_path, metastore_url)
    append(tmp_path / "logs" / "access.log", LINE, LINE)
    operations = PipelineOperations(config)
    lease_seconds = 2.0
    checkpoint_id, lapses_at = waiting_for_a_killed_host(operations, metastore_url, lease_seconds)
    waiting = sensor(config_path=str(config), checkpoint_id=checkpoint_id)
    if time.monotonic() < lapses_at - 0.5:  # (a busy machine may have taken longer to get here)
        assert waiting.poke(make_context()) is False  # host-b's lease has not lapsed yet

    while not waiting.poke(make_context()):
        assert time.monotonic() < lapses_at + 5, "still waiting for host-b"
        time.sleep(0.1)

    assert time.monotonic() >= lapses_at - 0.5  # not before host-b's lease could lapse
    sealed = operations.checkpoint(checkpoint_id)
    assert sealed.state is CheckpointState.SEALED
    assert sealed.hosts == ("test-host",)
    assert sealed.line_count == 2
    store = Metastore.open(metastore_url)
    try:
        assert store.unsealed_for_host("web_access", "host-b") == []  # not this checkpoint
    finally:
        store.close()
