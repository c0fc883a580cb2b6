"""Suite-wide set-up. Helpers live in tests/support; this file only registers them.

* Airflow is pointed at a throw-away home before anything imports it (``pytest_configure``).
* Every test that uses the metastore (directly or through a fixture) is marked ``metastore``;
  the PostgreSQL pass of ``make test`` runs exactly those again with
  ``SLUICE_TEST_POSTGRES_URL`` set.
* One SparkSession serves the whole session (``tests.support.spark``), and one Spark Connect
  server the tests that land on one (``tests.support.spark_connect``, started on first use).
* The JVMs the run starts use the client compiler alone (``tests.support.jvm``).
* ``SLUICE_TEST_SHARD=i/n`` runs a share of the selected tests (``tests.support.sharding``).
"""

from __future__ import annotations

import pytest

from tests.support.airflow_env import ensure_airflow_env
from tests.support.jvm import quick_start_jvms

pytest_plugins = [
    "pytester",
    "tests.support.cpu_costs",
    "tests.support.lake",
    "tests.support.log_programs",
    "tests.support.metastore",
    "tests.support.object_store",
    "tests.support.sharding",
    "tests.support.spark",
    "tests.support.spark_connect",
]
METASTORE_FIXTURES = {"metastore_url", "module_metastore_url"}


def pytest_configure(config: pytest.Config) -> None:
    ensure_airflow_env()
    quick_start_jvms()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if METASTORE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.metastore)
