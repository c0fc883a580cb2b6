#!/usr/bin/env bash
# `make test`: lint, type checks, then the suite in two lanes side by side. Much of the suite
# waits on processes, servers and I/O, so two lanes share the 2 cores well (a third one only
# made each lane slower, measured):
#   lane 1: the suite on SQLite (Python 3.11);
#   lane 2: the metastore tests again on PostgreSQL, on a server of the lane's own, and the
#           long tests marked postgres_pass.
# The lane that ends first then runs the fast tier on the other supported Pythons
# (scripts/python-tiers.sh). Lane 1's output streams; lane 2's log is printed at the end (and
# stays in data/test-lanes/). Each lane has its own pytest temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/airflow-env.sh
unset AIRFLOW_HOME  # the suite makes its own Airflow home

# Installs leave old builds in uv's cache (pyspark's sdist builds are about 1 GB each): runs
# on one machine filled its disk within a day until each run pruned them first.
uv cache prune --quiet
free_gib=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$free_gib" -lt 8 ]; then
    echo "make test: only ${free_gib} GiB free under ${TMPDIR:-/tmp}; the suite needs about 8" >&2
    exit 1
fi

# The other Pythons' virtualenvs install (mostly downloads) while lint and the suite run.
LANE_LOGS=data/test-lanes
rm -rf "$LANE_LOGS"
mkdir -p "$LANE_LOGS"
{
    status=0
    bash scripts/python-tiers.sh --install >"$LANE_LOGS/python-tiers-install.log" 2>&1 || status=$?
    echo "$status" >"$LANE_LOGS/python-tiers-install.status"
} &
# Java's class data archive of Spark's classes (tests/support/jvm.py) is made by a landing
# while lint and the installs run; the lanes' JVMs start with it.
python -m tests.support.jvm >"$LANE_LOGS/jvm-archive.log" 2>&1 &
JVM_ARCHIVE=$!
echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== browser, PostgreSQL, PgBouncer, the rotation tools and rsyslog for the system tests"
bash scripts/browser.sh install
bash scripts/postgres.sh install
bash scripts/pgbouncer.sh install
bash scripts/rotation-tools.sh install
bash scripts/syslog-tools.sh install

wait "$JVM_ARCHIVE" || true
cat "$LANE_LOGS/jvm-archive.log"

TEMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")

pytest_lane() {  # pytest_lane NAME ARGS...: a pytest run in a temporary folder of its own
    local name=$1
    shift
    echo "== pytest, lane $name"
    pytest --basetemp="$TEMP/$name" --durations=60 "$@"
}

other_pythons() {  # the fast tier on the other Pythons, run by the first lane to get here
    mkdir "$TEMP/other-pythons" 2>/dev/null || return 0
    echo "== the fast tier on Python 3.10, 3.12 and 3.13"
    while [ ! -s "$LANE_LOGS/python-tiers-install.status" ]; do sleep 1; done
    if [ "$(cat "$LANE_LOGS/python-tiers-install.status")" != 0 ]; then
        cat "$LANE_LOGS/python-tiers-install.log"
        return 1
    fi
    bash scripts/python-tiers.sh
}

lane() {  # lane NAME ARGS...: a pytest run, then the other Pythons if no lane took them yet
    local status=0
    pytest_lane "$@" || status=$?
    other_pythons || status=$?
    return "$status"
}

# The longest tests run once (markers postgres_pass and sqlite_pass): the fault tests against
# the metastore they stress most, a test that uses the metastore only as the lake's catalog on
# SQLite, and other long ones where the lanes come out about as long. A plain `pytest` runs
# them all on SQLite.
lane1() {
    lane sqlite -m "not postgres_pass" "$@"
}

# Lane 2's PostgreSQL server is its own (folder, port): lane 1's system tests start and stop
# the default one for Airflow's metadata. It stops before the other Pythons' tier (SQLite).
lane2_postgres() {
    SLUICE_PG_DIR="$PWD/data/postgres-lane2" SLUICE_PG_PORT=54339 bash scripts/postgres.sh "$@"
}
lane2() {
    local status=0 url
    url=$(lane2_postgres start) || return 1
    SLUICE_TEST_POSTGRES_URL=$url pytest_lane postgres \
        -m "(metastore or postgres_pass) and not sqlite_pass" "$@" || status=$?
    lane2_postgres stop || status=$?
    other_pythons || status=$?
    return "$status"
}

echo "== lane 2 (PostgreSQL) runs beside lane 1; its log: $LANE_LOGS/lane2.log"
lane2 "$@" >"$LANE_LOGS/lane2.log" 2>&1 &
LANE2=$!
cleanup() {
    kill "$LANE2" 2>/dev/null || true
    lane2_postgres stop || true
}
trap cleanup EXIT

status1=0
lane1 "$@" || status1=$?
status2=0
wait "$LANE2" || status2=$?
trap - EXIT
echo "==== lane 2 ($LANE_LOGS/lane2.log) ===="
cat "$LANE_LOGS/lane2.log"
verdict() { if [ "$1" = 0 ]; then echo passed; else echo "FAILED ($1)"; fi; }
echo "== lane 1 (SQLite): $(verdict "$status1")"
echo "== lane 2 (PostgreSQL): $(verdict "$status2")"
if [ "$status1" != 0 ] || [ "$status2" != 0 ]; then
    echo "== the tests' temporary folders are kept in $TEMP"
    exit 1
fi
rm -rf "$TEMP"
