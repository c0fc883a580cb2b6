#!/usr/bin/env bash
# `make test`: lint, type checks, then the suite in two lanes side by side (most of the suite
# waits on processes, servers and I/O, so two lanes share the 2 cores well):
#   lane 1: the whole suite on SQLite (Python 3.11);
#   lane 2: the metastore tests again on PostgreSQL, then the fast tier on the other supported
#           Pythons (scripts/python-tiers.sh).
# Each lane has its own pytest temporary folder; lane 2's output is printed when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/airflow-env.sh
unset AIRFLOW_HOME  # the suite makes its own Airflow home

# The other Pythons' virtualenvs install (mostly downloads) while lint and the suite run.
mkdir -p data
rm -f data/python-tiers-install.status
{
    status=0
    bash scripts/python-tiers.sh --install >data/python-tiers-install.log 2>&1 || status=$?
    echo "$status" >data/python-tiers-install.status
} &
echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== browser, PostgreSQL and the rotation tools for the system tests"
bash scripts/browser.sh install
bash scripts/postgres.sh install
bash scripts/rotation-tools.sh install

TEMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")
LANE2_LOG=data/test-lane2.log

# The longest fault tests run once, against the metastore they stress most (markers
# postgres_pass and sqlite_pass); a plain `pytest` runs them on SQLite.
# Lane 2's PostgreSQL server is its own (folder, port): lane 1's system tests start and stop
# the default one for Airflow's metadata.
LANE2_PG_DIR="$PWD/data/postgres-lane2"
LANE2_PG_PORT=54339
lane2_postgres() { SLUICE_PG_DIR=$LANE2_PG_DIR SLUICE_PG_PORT=$LANE2_PG_PORT bash scripts/postgres.sh "$@"; }
lane2() {
    echo "== pytest (metastore: PostgreSQL)"
    SLUICE_TEST_POSTGRES_URL=$(lane2_postgres start)
    export SLUICE_TEST_POSTGRES_URL
    pytest -m "metastore and not sqlite_pass" --basetemp="$TEMP/postgres" --durations=30 "$@"
    lane2_postgres stop
    unset SLUICE_TEST_POSTGRES_URL  # the server is gone: the other Pythons' tiers use SQLite
    echo "== the fast tier on Python 3.10, 3.12 and 3.13"
    while [ ! -s data/python-tiers-install.status ]; do sleep 1; done
    [ "$(cat data/python-tiers-install.status)" = 0 ] || {
        cat data/python-tiers-install.log
        return 1
    }
    bash scripts/python-tiers.sh
}
echo "== lane 2 (PostgreSQL pass, then the other Pythons) runs beside lane 1; log: $LANE2_LOG"
lane2 "$@" >"$LANE2_LOG" 2>&1 &
LANE2=$!
cleanup() {
    kill "$LANE2" 2>/dev/null || true
    lane2_postgres stop || true
}
trap cleanup EXIT

echo "== pytest (metastore: SQLite)"
lane1=0
pytest -m "not postgres_pass" --basetemp="$TEMP/sqlite" --durations=30 "$@" || lane1=$?
lane2=0
wait "$LANE2" || lane2=$?
echo "==== lane 2 ===="
cat "$LANE2_LOG"
echo "== lane 1 (SQLite): $([ "$lane1" = 0 ] && echo passed || echo "FAILED ($lane1)")"
echo "== lane 2 (PostgreSQL, other Pythons): $([ "$lane2" = 0 ] && echo passed || echo "FAILED ($lane2)")"
if [ "$lane1" != 0 ] || [ "$lane2" != 0 ]; then
    echo "== the tests' temporary folders are kept in $TEMP"
    exit 1
fi
rm -rf "$TEMP"
