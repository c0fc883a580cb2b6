"""Fixtures for the system tests (a real Airflow api-server, a headless browser)."""

from tests.system.airflow_site import airflow_site

__all__ = ["airflow_site"]
