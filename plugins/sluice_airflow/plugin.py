"""SluicePlugin: what Sluice registers with Airflow itself.

* **Macros**, in every template as ``macros.sluice.<name>``, e.g.::

      "{{ macros.sluice.checkpoint_dir('/etc/sluice/web_access.yaml', 3) }}"

* **A web app** mounted by the api-server under ``/sluice`` (:mod:`sluice_airflow.web`): the
  page ``<airflow>/sluice/`` and the JSON API ``/sluice/api/pipelines[/<name>]``, behind
  Airflow's authentication, linked from the UI's *Browse* menu as "Sluice".
* **A listener** (:mod:`sluice_airflow.listeners`): logs the outcome of each ``sluice_*`` DAG
  run against the checkpoint the run requested.

Operators, sensors and hooks are ordinary imports (Airflow 3 does not register them through
plugins).
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from sluice_airflow import listeners as sluice_listeners
from sluice_airflow.hooks.sluice import SluiceHook
from sluice_airflow.web import URL_PREFIX, web_app

PAGE_HREF = URL_PREFIX.lstrip("/") + "/"
"""The page, relative to Airflow's base URL (external views take no leading slash)."""


def checkpoint_dir(config_path: str, checkpoint_id: int | str) -> str:
    """Staging directory of a checkpoint (``<staging>/<pipeline>/<checkpoint:08d>``)."""
    from pipeline_core.runs import parse_checkpoint_id

    hook = SluiceHook(config_path=config_path)
    return hook.operations.checkpoint(parse_checkpoint_id(checkpoint_id)).staging


def checkpoint_state(config_path: str, checkpoint_id: int | str) -> str:
    """State of a checkpoint: ``requested``, ``sealed``, ``committed`` or ``failed``."""
    from pipeline_core.runs import parse_checkpoint_id

    hook = SluiceHook(config_path=config_path)
    return str(hook.operations.checkpoint(parse_checkpoint_id(checkpoint_id)).state.value)


class SluicePlugin(AirflowPlugin):
    """Registers Sluice's macros, web app, UI link and DAG run listener."""

    name = "sluice"
    macros: list[Any] = [checkpoint_dir, checkpoint_state]
    fastapi_apps: list[Any] = [{"app": web_app, "url_prefix": URL_PREFIX, "name": "Sluice"}]
    external_views: list[Any] = [
        {
            "name": "Sluice",
            "href": PAGE_HREF,
            "destination": "nav",
            "category": "browse",
            "url_route": "sluice",
        }
    ]
    listeners: list[Any] = [sluice_listeners]
