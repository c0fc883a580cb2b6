"""Fixtures for the Sluice web app: Airflow's auth manager, signed-in users, a pipelines folder.

Tokens are real Airflow JWTs, validated by the real ``get_user`` dependency, which looks for
revoked tokens in Airflow's database: these tests use the session's migrated Airflow home.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from airflow.api_fastapi import app as airflow_app
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from fastapi.testclient import TestClient
from sluice_airflow.web.app import create_app


@dataclass(frozen=True)
class Tokens:
    """JWTs of a user who may read every DAG and of one with no role at all."""

    viewer: str
    stranger: str


@pytest.fixture
def tokens(airflow_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tokens]:
    """Airflow's (simple) auth manager, initialised as the api-server does, and two users."""
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "sluice-web-tests-" + "0" * 64)
    previous = airflow_app._AuthManagerState.instance
    airflow_app._AuthManagerState.instance = None
    manager = airflow_app.create_auth_manager()
    manager.init()
    try:
        yield Tokens(
            viewer=manager.generate_jwt(SimpleAuthManagerUser(username="vera", role="VIEWER")),
            stranger=manager.generate_jwt(SimpleAuthManagerUser(username="sam", role=None)),
        )
    finally:
        airflow_app._AuthManagerState.instance = previous


@pytest.fixture
def pipelines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``$SLUICE_PIPELINES_DIR``."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    monkeypatch.setenv("SLUICE_PIPELINES_DIR", str(folder))
    return folder


@pytest.fixture
def client() -> TestClient:
    """A client of a fresh app, without credentials."""
    return TestClient(create_app())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
