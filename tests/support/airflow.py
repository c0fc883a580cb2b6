"""The ``airflow_home`` fixture: an initialised Airflow home for tests marked ``airflow``.

Register it in a folder's conftest with ``from tests.support.airflow import airflow_home``.
The environment itself is set by :mod:`tests.support.airflow_env` (see there for how the
top-level conftest must call it); this fixture checks that the imported Airflow agrees with it,
then runs ``airflow db migrate`` once per test session (about 15 s) and yields the home.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.airflow_env import REPO_ROOT, ensure_airflow_env

_migrated: set[Path] = set()


def check_airflow_configuration(home: Path) -> None:
    """Fail clearly when the imported Airflow reads another home, DAGs or plugins folder."""
    from airflow import settings
    from airflow.configuration import AIRFLOW_HOME, conf

    found = {
        "AIRFLOW_HOME": Path(AIRFLOW_HOME).resolve(),
        "dags_folder": Path(conf.get("core", "dags_folder")).resolve(),
        "plugins_folder": Path(str(settings.PLUGINS_FOLDER)).resolve(),
    }
    expected = {
        "AIRFLOW_HOME": home.resolve(),
        "dags_folder": REPO_ROOT / "dags",
        "plugins_folder": home.resolve() / "plugins",
    }
    wrong = {key: str(found[key]) for key in expected if found[key] != expected[key]}
    if wrong:
        pytest.fail(
            f"Airflow was configured before the test environment was set ({wrong}); call "
            "ensure_airflow_env() from pytest_configure in tests/conftest.py "
            "(see tests/support/airflow_env.py)",
            pytrace=False,
        )


def migrate_airflow_db(home: Path) -> float:
    """Run ``airflow db migrate`` for ``home`` once per process; return the seconds it took."""
    if home in _migrated:
        return 0.0
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-40:])
        pytest.fail(f"airflow db migrate failed ({completed.returncode}):\n{tail}", pytrace=False)
    _migrated.add(home)
    return time.monotonic() - started


@pytest.fixture(scope="session")
def airflow_home() -> Iterator[Path]:
    """The session's Airflow home, with its metadata database migrated."""
    home = ensure_airflow_env()
    check_airflow_configuration(home)
    migrate_airflow_db(home)
    yield home
