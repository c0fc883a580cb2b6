"""SluicePlugin: what Sluice registers with Airflow itself (today: template macros).

Operators, sensors and hooks are ordinary imports (Airflow 3 does not register them through
plugins). The macros are available in every template as ``macros.sluice.<name>``, e.g.::

    "{{ macros.sluice.checkpoint_dir('/etc/sluice/web_access.yaml', 3) }}"
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from sluice_airflow.hooks.sluice import SluiceHook, parse_checkpoint_id


def checkpoint_dir(config_path: str, checkpoint_id: int | str) -> str:
    """Staging directory of a checkpoint (``<staging>/<pipeline>/<checkpoint:08d>``)."""
    hook = SluiceHook(config_path=config_path)
    return str(hook.checkpoint(parse_checkpoint_id(checkpoint_id)).staging_dir)


def checkpoint_state(config_path: str, checkpoint_id: int | str) -> str:
    """State of a checkpoint: ``requested``, ``sealed``, ``committed`` or ``failed``."""
    hook = SluiceHook(config_path=config_path)
    return str(hook.checkpoint(parse_checkpoint_id(checkpoint_id)).state.value)


class SluicePlugin(AirflowPlugin):
    """Registers Sluice's macros under ``macros.sluice``."""

    name = "sluice"
    macros: list[Any] = [checkpoint_dir, checkpoint_state]
