"""SluiceHook: lazy facade, delegation, checkpoint id parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sluice_airflow.hooks.sluice import SluiceHook, parse_checkpoint_id

from pipeline_core.operations import CheckpointState
from tests.support.fake_pipeline import FakePipeline


def test_creating_the_hook_opens_nothing(fake_pipeline: FakePipeline) -> None:
    SluiceHook(config_path="/does/not/exist.yaml")

    assert fake_pipeline.opened == []


def test_creating_the_hook_with_a_missing_config_does_not_raise() -> None:
    hook = SluiceHook(config_path="/does/not/exist.yaml")

    assert hook.config_path == "/does/not/exist.yaml"


def test_config_path_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        SluiceHook("/etc/sluice/web_access.yaml")  # type: ignore[call-arg]


def test_operations_are_created_once_on_first_use(fake_pipeline: FakePipeline) -> None:
    hook = SluiceHook(config_path="/etc/sluice/web_access.yaml")

    hook.worker_is_live()
    hook.worker_is_live()

    assert fake_pipeline.opened == ["/etc/sluice/web_access.yaml"]
    assert hook.get_conn() is hook.operations


def test_methods_delegate_to_the_pipeline(fake_pipeline: FakePipeline) -> None:
    hook = SluiceHook(config_path="/etc/sluice/web_access.yaml")
    interval = (
        datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
        datetime(2026, 11, 22, 10, 5, tzinfo=UTC),
    )

    requested = hook.request_checkpoint(run_id="run-1", data_interval=interval)
    report = hook.collect_once()
    sealed = hook.checkpoint(requested.checkpoint_id)
    pending = hook.pending_landings()
    spec = hook.landing_job(requested.checkpoint_id)
    committed = hook.commit(requested.checkpoint_id)

    assert requested.state == CheckpointState.REQUESTED
    assert [info.checkpoint_id for info in report.sealed] == [requested.checkpoint_id]
    assert sealed.state == CheckpointState.SEALED
    assert pending == [sealed]
    assert spec.application.endswith("land_checkpoint.py")
    assert committed.state == CheckpointState.COMMITTED
    assert fake_pipeline.calls[0] == ("request_checkpoint", "run-1", interval)


@pytest.mark.parametrize(("value", "expected"), [(7, 7), ("7", 7), (" 12 ", 12)])
def test_parse_checkpoint_id_accepts_rendered_integers(value: int | str, expected: int) -> None:
    assert parse_checkpoint_id(value) == expected


@pytest.mark.parametrize("value", ["None", "", "x", "0", "-1", "1.5"])
def test_parse_checkpoint_id_rejects_anything_else(value: str) -> None:
    with pytest.raises(ValueError, match="checkpoint id must be a positive integer"):
        parse_checkpoint_id(value)
