#!/usr/bin/env bash
# `make test`: lint, type checks, the whole suite on SQLite and again on PostgreSQL (Python 3.11),
# then the fast tier on the other supported Pythons (scripts/python-tiers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/airflow-env.sh
unset AIRFLOW_HOME  # the suite makes its own Airflow home

# The other Pythons' virtualenvs install (mostly downloads) while the main suite runs.
mkdir -p data
bash scripts/python-tiers.sh --install >data/python-tiers-install.log 2>&1 &
TIERS_INSTALL=$!
echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== browser, PostgreSQL and the rotation tools for the system tests"
bash scripts/browser.sh install
bash scripts/postgres.sh install
bash scripts/rotation-tools.sh install
# The longest fault tests run once, against the metastore they stress most (markers
# postgres_pass and sqlite_pass); a plain `pytest` runs them on SQLite.
echo "== pytest (metastore: SQLite)"
pytest -m "not postgres_pass" --durations=30 "$@"
echo "== pytest (metastore: PostgreSQL)"
SLUICE_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start)
export SLUICE_TEST_POSTGRES_URL
trap 'bash scripts/postgres.sh stop' EXIT
pytest -m "metastore and not sqlite_pass" --durations=30 "$@"
bash scripts/postgres.sh stop
trap - EXIT
unset SLUICE_TEST_POSTGRES_URL  # the server is gone: the other Pythons' tiers use SQLite
echo "== the fast tier on Python 3.10, 3.12 and 3.13"
wait "$TIERS_INSTALL" || { cat data/python-tiers-install.log; exit 1; }
bash scripts/python-tiers.sh
