"""Fixtures for the tests of Sluice beyond one process: a Spark standalone cluster, several
collector processes on one metastore."""

from tests.support.airflow import airflow_home
from tests.support.airflow_env import ensure_airflow_env

# Normally done by tests/conftest.py in pytest_configure; a no-op then (see airflow_env.py).
ensure_airflow_env()

__all__ = ["airflow_home"]
