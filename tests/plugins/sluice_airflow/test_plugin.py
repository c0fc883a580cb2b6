"""SluicePlugin: a valid Airflow 3 plugin whose macros work in task templates."""

from __future__ import annotations

import sys
from typing import Any

from airflow import plugins_manager
from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperator
from sluice_airflow.plugin import SluicePlugin, checkpoint_dir, checkpoint_state

from pipeline_core.operations import CheckpointState
from tests.support.airflow_env import REPO_ROOT
from tests.support.fake_pipeline import FakePipeline, make_context

CONFIG = "/etc/sluice/web_access.yaml"


def test_plugin_is_valid_and_named_sluice() -> None:
    assert issubclass(SluicePlugin, AirflowPlugin)
    SluicePlugin.validate()  # type: ignore[no-untyped-call]
    assert SluicePlugin.name == "sluice"
    assert set(SluicePlugin.macros) == {checkpoint_dir, checkpoint_state}


def test_macros_answer_from_the_pipeline(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    assert checkpoint_dir(CONFIG, "1") == "/staging/web_access/00000001"
    assert checkpoint_state(CONFIG, 1) == "sealed"


def test_airflow_loads_only_the_plugin_module_from_the_plugins_folder() -> None:
    info = {plugin["name"]: plugin for plugin in plugins_manager.get_plugin_info()}

    assert "sluice" in info
    assert str(info["sluice"]["source"]).endswith("sluice_airflow/plugin.py")
    assert not {
        path: error
        for path, error in plugins_manager.get_import_errors().items()
        if path.startswith(str(REPO_ROOT))
    }
    # .airflowignore keeps Airflow from importing hooks/operators/sensors/__init__ a second
    # time as top-level modules named "sluice" and "__init__".
    assert "sluice" not in sys.modules
    assert "__init__" not in sys.modules


def test_macros_render_in_task_templates(fake_pipeline: FakePipeline) -> None:
    from airflow.sdk.execution_time import macros
    from airflow.sdk.plugins_manager import integrate_macros_plugins

    integrate_macros_plugins()
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    class Echo(BaseOperator):
        template_fields = ("text",)

        def __init__(self, *, text: str, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.text = text

    task = Echo(
        task_id="echo",
        text=f"{{{{ macros.sluice.checkpoint_dir('{CONFIG}', 1) }}}}",
    )
    task.render_template_fields(make_context(macros=macros))

    assert task.text == "/staging/web_access/00000001"
