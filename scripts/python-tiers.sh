#!/usr/bin/env bash
# The fast test tier on the other Pythons the package supports (3.10, 3.12, 3.13 by default):
# for each, a virtualenv .venv-<version> with the package installed editable and its
# dependencies resolved from pyproject's ranges (not requirements.lock: what a user's pip would
# pick on that Python), then the tests that need neither Spark nor a running Airflow.
#
#     bash scripts/python-tiers.sh            # every other supported Python
#     bash scripts/python-tiers.sh 3.13       # one of them
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(3.10 3.12 3.13)
UV=.venv/bin/uv
FAST_TIER=(-m "not slow and not spark and not airflow and not system"
    tests/pipeline_core tests/plugins tests/dags tests/spark_jobs tests/faults tests/cluster)

find_python() {
    local version=$1 candidate
    for candidate in "python$version" \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python \
        /usr/bin/python"$version" /usr/local/bin/python"$version"; do
        if command -v "$candidate" >/dev/null 2>&1; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

for version in "${VERSIONS[@]}"; do
    python=$(find_python "$version") || {
        echo "python-tiers: Python $version not found (on PATH or under pyenv)" >&2
        exit 1
    }
    venv=".venv-$version"
    echo "== Python $version ($python): install, then the fast tier"
    [ -x "$venv/bin/python" ] || "$UV" venv --quiet --python "$python" "$venv"
    "$UV" pip install --quiet --python "$venv/bin/python" -e ".[test]"
    rm -rf ./*.egg-info build  # as in bootstrap.sh: never a second "sluice" on the import path
    "$venv/bin/python" -m pytest -p no:cacheprovider -q "${FAST_TIER[@]}"
done
