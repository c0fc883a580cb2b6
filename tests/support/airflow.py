"""The ``airflow_home`` fixture: an initialised Airflow home for tests marked ``airflow``.

Register it in a folder's conftest with ``from tests.support.airflow import airflow_home``.
The environment itself is set by :mod:`tests.support.airflow_env` (see there for how the
top-level conftest must call it); this fixture checks that the imported Airflow agrees with it,
then gives it a migrated metadata database (a copy of one ``airflow db migrate`` made once per
test process: :func:`migrated_database`, also used by the tests' other Airflow homes) and
yields the home.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
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
    """Give ``home`` (the session's home, its metadata in ``airflow.db``, Airflow's default) a
    migrated database once per process (:func:`migrated_database`); return the seconds it
    took."""
    if home in _migrated:
        return 0.0
    started = time.monotonic()
    migrated_database(home)
    _migrated.add(home)
    return time.monotonic() - started


def run_airflow(env: dict[str, str], *args: str, timeout: float = 240) -> str:
    """Run the ``airflow`` command ``args`` with ``env``; its standard output. The test fails
    with the command's last lines if it exits otherwise than with 0."""
    completed = subprocess.run(
        [sys.executable, "-m", "airflow", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-40:])
        pytest.fail(
            f"airflow {' '.join(args)} failed ({completed.returncode}):\n{tail}", pytrace=False
        )
    return completed.stdout


_TEMPLATE: list[Path] = []
"""The folder of the database migrated once per process, once made."""


def migrated_database(home: Path) -> None:
    """Put a migrated metadata database into the Airflow home ``home`` (``airflow.db``, where
    Airflow keeps it by default): a copy of one that ``airflow db migrate`` made once per test
    process. A migration takes 12 s here and 20 to 30 s under the suite's load; what it writes
    holds nothing of its home (two homes' databases differ only in the times of their rows)."""
    if not _TEMPLATE:
        template = Path(tempfile.mkdtemp(prefix="sluice-airflow-db-"))
        atexit.register(shutil.rmtree, template, ignore_errors=True)
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("AIRFLOW", "SLUICE_"))
        }
        env |= {"AIRFLOW_HOME": str(template), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        run_airflow(env, "db", "migrate")
        _TEMPLATE.append(template)
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TEMPLATE[0] / "airflow.db", home / "airflow.db")


@pytest.fixture(scope="session")
def airflow_home() -> Iterator[Path]:
    """The session's Airflow home, with its metadata database migrated."""
    home = ensure_airflow_env()
    check_airflow_configuration(home)
    migrate_airflow_db(home)
    yield home
