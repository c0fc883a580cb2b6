"""SluicePlugin: a valid Airflow 3 plugin: macros that work in task templates, the web app
and its UI link, the DAG run listener."""

from __future__ import annotations

import sys
from typing import Any

from airflow import plugins_manager
from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperator
from fastapi.testclient import TestClient
from sluice_airflow import listeners
from sluice_airflow.plugin import SluicePlugin, checkpoint_dir, checkpoint_state
from sluice_airflow.web import LazyWebApp, web_app

from pipeline_core.operations import CheckpointState
from tests.support.fake_pipeline import FakePipeline, make_context

CONFIG = "/etc/sluice/web_access.yaml"


def test_plugin_is_valid_and_named_sluice() -> None:
    assert issubclass(SluicePlugin, AirflowPlugin)
    SluicePlugin.validate()  # type: ignore[no-untyped-call]
    assert SluicePlugin.name == "sluice"
    assert set(SluicePlugin.macros) == {checkpoint_dir, checkpoint_state}


def test_plugin_mounts_the_web_app_links_it_from_browse_and_listens_to_dag_runs() -> None:
    assert SluicePlugin.fastapi_apps == [
        {"app": web_app, "url_prefix": "/sluice", "name": "Sluice"}
    ]
    assert SluicePlugin.external_views == [
        {
            "name": "Sluice",
            "href": "sluice/",
            "destination": "nav",
            "category": "browse",
            "url_route": "sluice",
        }
    ]
    assert SluicePlugin.listeners == [listeners]


def test_the_mounted_app_refuses_requests_without_an_airflow_user() -> None:
    client = TestClient(SluicePlugin.fastapi_apps[0]["app"])

    for path in ("/", "/api/pipelines", "/api/pipelines/web_access"):
        assert client.get(path).status_code == 401, path


def test_the_web_app_is_built_on_its_first_request_only() -> None:
    lazy = LazyWebApp()
    assert lazy._app is None

    assert lazy.app is lazy.app
    assert {route.path for route in lazy.app.routes} >= {  # type: ignore[attr-defined]
        "/",
        "/api/pipelines",
        "/api/pipelines/{name}",
    }


def test_macros_answer_from_the_pipeline(fake_pipeline: FakePipeline) -> None:
    fake_pipeline.add_checkpoint(CheckpointState.SEALED)

    assert checkpoint_dir(CONFIG, "1") == "/staging/web_access/00000001"
    assert checkpoint_state(CONFIG, 1) == "sealed"


def test_airflow_loads_the_plugin_once_from_the_package_entry_point() -> None:
    info = {plugin["name"]: plugin for plugin in plugins_manager.get_plugin_info()}

    assert "sluice" in info
    assert "sluice_airflow.plugin:SluicePlugin" in str(info["sluice"]["source"])
    assert info["sluice"]["fastapi_apps"] == [
        {"app": "sluice_airflow.web.LazyWebApp", "url_prefix": "/sluice", "name": "Sluice"}
    ]
    assert [view["name"] for view in info["sluice"]["external_views"]] == ["Sluice"]
    assert info["sluice"]["listeners"] == ["sluice_airflow.listeners"]
    assert plugins_manager.get_import_errors() == {}
    # Nothing of the package is imported a second time as a top-level module.
    assert "sluice" not in sys.modules
    assert "__init__" not in sys.modules
    assert not {"listeners", "app", "auth", "dag_runs"} & set(sys.modules)


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
