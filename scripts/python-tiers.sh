#!/usr/bin/env bash
# The fast test tier on the other Pythons the package supports (3.10, 3.12, 3.13 by default):
# for each, a virtualenv .venv-<version> with the package installed editable and its
# dependencies resolved from pyproject's ranges (not requirements.lock: what a user's pip would
# pick on that Python), then the tests that need neither Spark nor a running Airflow. The
# Pythons run side by side (most of the tier waits on processes and I/O); each one's output
# goes to data/python-tiers/<version>.log and its summary is printed.
#
# By default each Python runs a share of the tier (every n-th test, SLUICE_TEST_SHARD in
# tests/support/sharding.py) after collecting all of it, so every module is imported on every
# Python and every test runs on 3.11 (make test's main lane) and on one other Python: the
# whole tier on each of three Pythons tripled make test's time on 2 cores. --full runs the
# whole tier on each.
#
#     bash scripts/python-tiers.sh            # every other supported Python, a share each
#     bash scripts/python-tiers.sh --full     # the whole tier on each
#     bash scripts/python-tiers.sh 3.13       # one of them (the whole tier: one share of one)
#     bash scripts/python-tiers.sh --install  # only the virtualenvs (make test does this early,
#                                             # while the main suite runs)
set -euo pipefail
cd "$(dirname "$0")/.."

INSTALL_ONLY=false
SHARDED=true
case "${1:-}" in
--install)
    INSTALL_ONLY=true
    shift
    ;;
--full)
    SHARDED=false
    shift
    ;;
esac
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(3.10 3.12 3.13)
UV=.venv/bin/uv
LOGS=data/python-tiers
FAST_TIER=(-m "not slow and not spark and not airflow and not system"
    tests/pipeline_core tests/plugins tests/dags tests/spark_jobs)

find_python() {
    # pyenv's own install first: its shim on PATH fails for a version pyenv does not enable.
    local version=$1 candidate
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python \
        "$(command -v "python$version" 2>/dev/null || true)" \
        /usr/bin/python"$version" /usr/local/bin/python"$version"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "import sys" 2>/dev/null; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

mkdir -p "$LOGS"
# The versions of the source-only dependencies these Pythons resolve to, built once.
export UV_FIND_LINKS="$PWD/data/wheelhouse"
bash scripts/wheelhouse.sh --resolve "${VERSIONS[@]}"
for version in "${VERSIONS[@]}"; do
    python=$(find_python "$version") || {
        echo "python-tiers: Python $version not found (on PATH or under pyenv)" >&2
        exit 1
    }
    venv=".venv-$version"
    echo "== Python $version ($python): installing Sluice's dependencies into $venv"
    [ -x "$venv/bin/python" ] || "$UV" venv --quiet --python "$python" "$venv"
    # The dependencies alone (no build of the project: that would write sluice.egg-info into
    # the checkout while the main suite may be running).
    "$UV" pip install --quiet --python "$venv/bin/python" -r pyproject.toml --extra test
done
if $INSTALL_ONLY; then
    exit 0
fi
for version in "${VERSIONS[@]}"; do
    "$UV" pip install --quiet --python ".venv-$version/bin/python" --no-deps -e .
    rm -rf ./*.egg-info build  # as in bootstrap.sh: never a second "sluice" on the import path
done

declare -A RUNS=()
index=0
for version in "${VERSIONS[@]}"; do
    shard=
    if $SHARDED; then shard="$index/${#VERSIONS[@]}"; fi
    SLUICE_TEST_SHARD=$shard ".venv-$version/bin/python" -m pytest -p no:cacheprovider -q \
        "${FAST_TIER[@]}" >"$LOGS/$version.log" 2>&1 &
    RUNS[$version]=$!
    index=$((index + 1))
done
failed=()
for version in "${VERSIONS[@]}"; do
    if wait "${RUNS[$version]}"; then status=passed; else status=FAILED; failed+=("$version"); fi
    echo "== Python $version: $status ($(tail -n 1 "$LOGS/$version.log"))"
done
if [ ${#failed[@]} -gt 0 ]; then
    for version in "${failed[@]}"; do
        echo "---- Python $version: $LOGS/$version.log (last 60 lines)"
        tail -n 60 "$LOGS/$version.log"
    done
    exit 1
fi
