"""What Airflow learns of Sluice as a provider (the ``apache_airflow_provider`` entry point).

Airflow's ``ProvidersManager`` calls :func:`get_provider_info` for every installed
distribution that declares the entry point: it lists the hooks, operators, sensors and
triggers (shown by ``airflow providers hooks`` and friends), the ``sluice`` connection type of
the connection form and the ``[sluice]`` config section with its defaults. The plugin is
registered by the ``airflow.plugins`` entry point alone: listed here too, Airflow would load it
a second time (where providers are not discovered lazily) and report the duplicate as a plugin
import error.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

DISTRIBUTION = "sluice"


def get_provider_info() -> dict[str, Any]:
    """The provider's description, in the shape of Airflow's ``provider_info.schema.json``."""
    return {
        "package-name": DISTRIBUTION,
        "name": "Sluice",
        "description": "Reliable log collection for Airflow and Spark platforms: tail logs on "
        "the hosts, seal a checkpoint per DAG run, land it into Apache Iceberg tables with "
        "Spark, every line exactly once.",
        "versions": [_version()],
        "integrations": [{"integration-name": "Sluice", "tags": ["software"]}],
        "hooks": [
            {"integration-name": "Sluice", "python-modules": ["sluice_airflow.hooks.sluice"]}
        ],
        "operators": [
            {
                "integration-name": "Sluice",
                "python-modules": [
                    "sluice_airflow.operators.sluice",
                    "sluice_airflow.operators.worker",
                    "sluice_airflow.operators.maintenance",
                ],
            }
        ],
        "sensors": [
            {"integration-name": "Sluice", "python-modules": ["sluice_airflow.sensors.sluice"]}
        ],
        "triggers": [
            {"integration-name": "Sluice", "python-modules": ["sluice_airflow.triggers.sluice"]}
        ],
        "connection-types": [
            {
                "hook-class-name": "sluice_airflow.hooks.sluice.SluiceHook",
                "hook-name": "Sluice pipeline",
                "connection-type": "sluice",
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "login", "password", "port"],
                    "relabeling": {},
                },
                "conn-fields": {
                    "sqlalchemy_url": {
                        "label": "Metastore URL",
                        "description": "SQLAlchemy URL of the metastore database, e.g. "
                        "postgresql+psycopg://sluice@db/sluice",
                        "schema": {"type": ["string", "null"]},
                    },
                    "lake_path": {
                        "label": "Lake path",
                        "description": "Root folder of the lake tables, shared by the Spark "
                        "driver and executors",
                        "schema": {"type": ["string", "null"]},
                    },
                },
            }
        ],
        "config": {
            "sluice": {
                "description": "Where the Sluice DAG factory finds pipeline configs.",
                "options": {
                    "pipelines_dir": {
                        "description": "Folder of pipeline configs (``*.yaml``), one set of "
                        "DAGs each. Empty: ``pipelines/`` beside the DAGs folder. "
                        "``$SLUICE_PIPELINES_DIR`` wins over this option.",
                        "version_added": "0.2.0",
                        "type": "string",
                        "example": "/etc/sluice/pipelines",
                        "default": "",
                    }
                },
            }
        },
    }


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
