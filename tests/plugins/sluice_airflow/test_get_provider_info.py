"""get_provider_info: what Airflow's ProvidersManager learns of the installed distribution."""

from __future__ import annotations

import importlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import airflow
import jsonschema
import pytest
from airflow.plugins_manager import AirflowPlugin
from airflow.providers_manager import ProvidersManager
from sluice_airflow.get_provider_info import get_provider_info
from sluice_airflow.hooks.sluice import SluiceHook

SCHEMA = Path(airflow.__file__).parent / "provider_info.schema.json"


def imported(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_info_is_valid_for_airflow() -> None:
    jsonschema.validate(get_provider_info(), json.loads(SCHEMA.read_text()))


def test_the_info_names_the_installed_version() -> None:
    assert get_provider_info()["versions"] == [metadata.version("sluice")]


@pytest.mark.parametrize("kind", ["hooks", "operators", "sensors", "triggers"])
def test_every_listed_module_imports(kind: str) -> None:
    modules = [name for entry in get_provider_info()[kind] for name in entry["python-modules"]]

    assert modules
    for name in modules:
        importlib.import_module(name)


def test_the_connection_type_is_the_hook_s() -> None:
    [connection] = get_provider_info()["connection-types"]

    assert imported(connection["hook-class-name"]) is SluiceHook
    assert connection["connection-type"] == SluiceHook.conn_type == "sluice"
    assert set(connection["conn-fields"]) == {"sqlalchemy_url", "lake_path"}


def test_the_entry_points_of_the_installed_distribution() -> None:
    entry_points = metadata.distribution("sluice").entry_points

    [provider] = [e for e in entry_points if e.group == "apache_airflow_provider"]
    [plugin] = [e for e in entry_points if e.group == "airflow.plugins"]
    assert provider.load() is get_provider_info
    assert plugin.load().name == "sluice"
    assert issubclass(plugin.load(), AirflowPlugin)
    assert "plugins" not in get_provider_info()  # the entry point alone: never loaded twice


def test_airflow_s_providers_manager_finds_sluice() -> None:
    manager = ProvidersManager()  # type: ignore[no-untyped-call]

    assert "sluice" in manager.providers
    assert manager.providers["sluice"].version == metadata.version("sluice")
    [(_, sections)] = [entry for entry in manager.provider_configs if entry[0] == "sluice"]
    assert sections["sluice"]["options"]["pipelines_dir"]["default"] == ""


def test_airflow_s_config_knows_the_sluice_section() -> None:
    from airflow.configuration import conf

    assert conf.get("sluice", "pipelines_dir") == ""


def test_one_sluice_distribution_is_on_the_import_path() -> None:
    # A second one (a build's sluice.egg-info in the checkout) doubles every entry point.
    found = [d for d in metadata.distributions() if d.metadata["Name"] == "sluice"]

    assert len(found) == 1, [str(getattr(d, "_path", d)) for d in found]
