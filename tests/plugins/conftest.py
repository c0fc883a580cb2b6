"""Fixtures for the tests of ``plugins/sluice_airflow`` (hooks, operators, sensors, plugin)."""

from tests.support.airflow import airflow_home
from tests.support.airflow_env import ensure_airflow_env
from tests.support.fake_pipeline import fake_pipeline

# Normally done by tests/conftest.py in pytest_configure; a no-op then (see airflow_env.py).
ensure_airflow_env()

__all__ = ["airflow_home", "fake_pipeline"]
