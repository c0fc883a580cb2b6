"""Point Airflow at a throw-away home for the test session, before anything imports it.

Airflow reads ``AIRFLOW_HOME`` and its ``AIRFLOW__*`` settings when ``airflow`` is first
imported (``airflow.configuration``), so the environment must be in place before the first
test module (or conftest) imports ``airflow``, a provider or ``sluice_airflow``. The variables
are the ones ``scripts/airflow-env.sh`` exports (the script is sourced in a child shell, so the
tests exercise it), with ``AIRFLOW_HOME`` in a temporary folder and ``SLUICE_PIPELINES_DIR`` an
empty folder inside it. Variables a developer has set (``AIRFLOW__*``, ``AIRFLOW_CONN_*``,
``AIRFLOW_VAR_*``) are removed for the session, so tests never touch a real Airflow database or
a real Spark cluster.

Wiring (``tests/conftest.py``, the top-level conftest) -- call it from ``pytest_configure``,
which runs before collection imports any test module::

    import pytest

    from tests.support.airflow_env import ensure_airflow_env


    def pytest_configure(config: pytest.Config) -> None:
        ensure_airflow_env()

``ensure_airflow_env()`` creates the temporary home (removed when the session's process
exits) and calls :func:`configure_airflow_env`; it is idempotent, and ``tests/plugins`` and
``tests/dags`` call it from their own conftests as a fallback, which works as long as no
earlier-collected module imported ``airflow``. To use a fixed home instead (for example to
inspect the database after a run), call ``configure_airflow_env(Path(...))`` in
``pytest_configure``. The ``airflow_home`` fixture (``tests/support/airflow.py``) checks that
Airflow really uses this home and runs ``airflow db migrate`` once per session.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_SCRIPT = REPO_ROOT / "scripts" / "airflow-env.sh"
HOME_MARKER = "SLUICE_TEST_AIRFLOW_HOME"
"""Set to the home :func:`configure_airflow_env` configured, so it is done once per session."""

_PLAIN_VARS = ("PATH", "PYTHONPATH", "PYSPARK_PYTHON")


def _is_airflow_var(name: str) -> bool:
    return name.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_")) or name in (
        "AIRFLOW_HOME",
        "AIRFLOW_CONFIG",
    )


def _managed(name: str) -> bool:
    return _is_airflow_var(name) or name.startswith("SLUICE_") or name in _PLAIN_VARS


def airflow_env(home: Path, pipelines_dir: Path | None = None) -> dict[str, str]:
    """The variables ``scripts/airflow-env.sh`` exports for ``home``, from a clean environment.

    :param home: the Airflow home (created if missing).
    :param pipelines_dir: ``SLUICE_PIPELINES_DIR``; default ``<home>/pipelines`` (created).
    """
    home = Path(home).resolve()
    pipelines = Path(pipelines_dir) if pipelines_dir is not None else home / "pipelines"
    home.mkdir(parents=True, exist_ok=True)
    pipelines.mkdir(parents=True, exist_ok=True)
    base = {
        name: value
        for name, value in os.environ.items()
        if not _is_airflow_var(name) and not name.startswith("SLUICE_")
    }
    base |= {
        "SLUICE_ROOT": str(REPO_ROOT),
        "AIRFLOW_HOME": str(home),
        "SLUICE_PIPELINES_DIR": str(pipelines),
    }
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    completed = subprocess.run(
        ["sh", "-c", '. "$1" && exec "$2" -c "$3"', "sh", str(ENV_SCRIPT), sys.executable, dump],
        env=base,
        capture_output=True,
        text=True,
        check=True,
    )
    exported: dict[str, str] = json.loads(completed.stdout)
    return {name: value for name, value in exported.items() if _managed(name)}


def configure_airflow_env(home: Path, pipelines_dir: Path | None = None) -> dict[str, str]:
    """Set ``os.environ`` so that Airflow, once imported, uses ``home``; return what was set.

    Must run before ``airflow`` is imported in this process.

    :raises RuntimeError: ``airflow`` was already imported with another home.
    """
    env = airflow_env(home, pipelines_dir)
    configuration = sys.modules.get("airflow.configuration")
    if configuration is not None and getattr(configuration, "AIRFLOW_HOME", None) != str(
        env["AIRFLOW_HOME"]
    ):
        raise RuntimeError(
            "airflow was imported before configure_airflow_env(); call ensure_airflow_env() "
            "from pytest_configure in tests/conftest.py (see tests/support/airflow_env.py)"
        )
    for name in [name for name in os.environ if _is_airflow_var(name)]:
        del os.environ[name]
    os.environ.update(env)
    os.environ[HOME_MARKER] = env["AIRFLOW_HOME"]
    return env


def ensure_airflow_env() -> Path:
    """Configure a temporary Airflow home for this session unless one is configured already."""
    configured = os.environ.get(HOME_MARKER)
    if configured and os.environ.get("AIRFLOW_HOME") == configured:
        return Path(configured)
    home = Path(tempfile.mkdtemp(prefix="sluice-airflow-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    configure_airflow_env(home)
    return home
