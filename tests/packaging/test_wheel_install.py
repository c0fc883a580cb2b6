"""The built wheel in a clean virtualenv beside a stock Airflow: what a platform team installs.

``pip install apache-airflow==<pinned> sluice-<version>.whl`` (uv here, for speed: the same
resolution from PyPI's ranges, not from ``requirements.lock``; the source-only pyspark found
built in ``scripts/wheelhouse.sh``'s folder) into a new virtualenv, then
Airflow, run from that virtualenv only, must find Sluice as a provider and a plugin, parse a
DAG folder holding just the factory's two lines, and run a pipeline DAG end to end with
``airflow dags test``: collect sample logs, seal, land with spark-submit, commit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.airflow import migrated_database
from tests.support.airflow_env import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.system]

DAG_FILE = """\
from sluice_airflow.dag_factory import pipeline_dags

globals().update(pipeline_dags())
"""
CONFIG = """\
name: shop
sources:
  - name: access
    paths: ["logs/access.log*"]
    format: nginx_combined
data_dir: data
schedule: "@daily"
"""
SAMPLE_LINES = 400
MALFORMED = 3


def pinned(requirement: str) -> str:
    match = re.search(
        rf"^{re.escape(requirement)}==(\S+)", (REPO_ROOT / "requirements.txt").read_text(), re.M
    )
    assert match, requirement
    return match.group(1)


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    assert os.access(found, os.X_OK), "uv is installed by scripts/bootstrap.sh"
    return found


def run(command: list[str], *, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    completed = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-60:])
        pytest.fail(f"{' '.join(command[:4])} ... exited {completed.returncode}:\n{tail}")
    return completed.stdout


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new virtualenv with only the stock Airflow and the wheel built from this checkout."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    # Build from a copy of the checkout's files (those git does not ignore): nothing is
    # written into the checkout, and nothing it ignores (.venv, data) leaks into the wheel.
    listing = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    tracked = run(["git", "-C", str(REPO_ROOT), *listing]).split("\0")
    for name in filter(None, tracked):
        target = source / name
        if (REPO_ROOT / name).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, target)
    run([uv(), "build", "--wheel", "--quiet", "--out-dir", str(root / "dist"), str(source)])
    [wheel] = (root / "dist").glob("sluice-*.whl")
    venv = root / "venv"
    run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)])
    python = venv / "bin" / "python"
    # pyspark's wheel as scripts/wheelhouse.sh built it once: the same version the ranges
    # resolve to, not built from its 450 MB source archive again.
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    run(["bash", str(REPO_ROOT / "scripts" / "wheelhouse.sh"), "--resolve", version])
    run(
        [
            uv(),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            f"apache-airflow=={pinned('apache-airflow')}",
            str(wheel),
        ],
        env={**os.environ, "UV_FIND_LINKS": str(REPO_ROOT / "data" / "wheelhouse")},
        timeout=1200,
    )
    yield venv


@pytest.fixture(scope="module")
def deployment(clean_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An Airflow home using the clean virtualenv: a DAG folder of two lines, one pipeline."""
    home = tmp_path_factory.mktemp("airflow_home")
    (home / "dags").mkdir()
    (home / "dags" / "sluice_dags.py").write_text(DAG_FILE)
    pipelines = home / "pipelines"
    pipelines.mkdir()
    (pipelines / "shop.yaml").write_text(CONFIG)
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not entry.startswith(str(REPO_ROOT))
    )
    env = {
        "HOME": os.environ.get("HOME", str(home)),
        "PATH": path,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[1]"}',
        "PYSPARK_PYTHON": str(clean_venv / "bin" / "python"),
    }
    for name in ("JAVA_HOME", "JAVA_TOOL_OPTIONS"):
        if name in os.environ:
            env[name] = os.environ[name]
    bin_dir = clean_venv / "bin"
    # The metadata database as `airflow db migrate` makes it for this Airflow version (the
    # suite's copy of one migration: a migration costs 20 to 30 s of CPU under load).
    migrated_database(home)
    run(
        [
            str(bin_dir / "sluice"),
            "sample-logs",
            str(pipelines / "logs"),
            "--lines",
            str(SAMPLE_LINES),
            "--malformed",
            str(MALFORMED),
        ],
        env=env,
    )
    return env


def airflow(venv: Path, env: dict[str, str], *args: str, timeout: float = 600) -> str:
    return run([str(venv / "bin" / "airflow"), *args], env=env, timeout=timeout)


def json_output(text: str) -> object:
    """The JSON document an ``airflow ... -o json`` command printed last (after its logs)."""
    return json.loads(text.strip().splitlines()[-1])


def test_nothing_of_the_checkout_is_importable_in_the_clean_venv(clean_venv: Path) -> None:
    code = "import sluice_airflow, pipeline_core, spark_jobs; print(sluice_airflow.__file__)"
    located = run([str(clean_venv / "bin" / "python"), "-c", code], env={"PATH": "/usr/bin"})

    assert "site-packages" in located
    assert not located.startswith(str(REPO_ROOT))


def test_the_wheel_ships_the_jvm_readers_source_and_builds_its_jar(
    clean_venv: Path, tmp_path: Path
) -> None:
    code = (
        "import sys; from pathlib import Path; from pipeline_core.landing import _jar; "
        "jar = _jar.java_functions_jar(Path(sys.argv[1])); "
        "print(_jar.JAVA_SOURCES, jar)"
    )
    python = str(clean_venv / "bin" / "python")
    printed = run([python, "-I", "-c", code, str(tmp_path)], env={"PATH": os.environ["PATH"]})
    sources, jar = printed.split()

    assert "site-packages" in sources
    assert (Path(sources) / "sluice" / "spark" / "SegmentLines.java").is_file()
    assert Path(jar).parent == tmp_path and Path(jar).is_file()


def test_the_wheel_carries_the_compiled_parts(clean_venv: Path) -> None:
    """The wheel is built with the multiline presets' compiled tests and the manifest's
    compiled event columns (setup.py's optional extensions), which the installed package
    uses."""
    code = (
        "from pipeline_core.source import _preset_lines as p; "
        "from pipeline_core.staging_contract import _events as e; "
        "print(p.compiled(), p.compiled_module().__file__, e._int_lists.__file__)"
    )
    python = str(clean_venv / "bin" / "python")
    in_use, *modules = run([python, "-I", "-c", code], env={"PATH": os.environ["PATH"]}).split()

    assert in_use == "True"
    for module in modules:
        assert "site-packages" in module and module.endswith(".so")


def test_airflow_finds_sluice_as_a_provider_and_a_plugin(
    clean_venv: Path, deployment: dict[str, str]
) -> None:
    providers = json_output(airflow(clean_venv, deployment, "providers", "list", "-o", "json"))
    hooks = airflow(clean_venv, deployment, "providers", "hooks", "-o", "json")
    plugins = json_output(airflow(clean_venv, deployment, "plugins", "-o", "json"))
    option = airflow(clean_venv, deployment, "config", "get-value", "sluice", "pipelines_dir")

    assert isinstance(providers, list)
    assert isinstance(plugins, list)
    assert "sluice" in {provider["package_name"] for provider in providers}
    assert "sluice_airflow.hooks.sluice.SluiceHook" in hooks
    assert "sluice" in {plugin["name"] for plugin in plugins}
    assert option.strip() == ""


def test_a_pipeline_dag_runs_end_to_end_with_airflow_dags_test(
    clean_venv: Path, deployment: dict[str, str]
) -> None:
    listed = json_output(airflow(clean_venv, deployment, "dags", "list", "--local", "-o", "json"))
    assert isinstance(listed, list)
    assert {"sluice_shop", "sluice_shop_worker", "sluice_shop_maintenance"} <= {
        dag["dag_id"] for dag in listed
    }

    airflow(clean_venv, deployment, "dags", "test", "sluice_shop", timeout=900)

    config = str(Path(deployment["AIRFLOW_HOME"]) / "pipelines" / "shop.yaml")
    report = run([str(clean_venv / "bin" / "sluice"), "report", config], env=deployment)
    assert re.search(rf"\b{SAMPLE_LINES - MALFORMED}\b", report), report
    status = run([str(clean_venv / "bin" / "sluice"), "status", config], env=deployment)
    assert "committed" in status, status
