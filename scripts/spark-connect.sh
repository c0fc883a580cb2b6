#!/usr/bin/env bash
# A long-running Spark Connect server on this machine: a warm Spark for landings, from the
# pyspark distribution installed in .venv (sbin/start-connect-server.sh).
#
# Usage: scripts/spark-connect.sh {start|stop|status|url}
#
#   start   start the server unless it runs, wait until it accepts sessions, print its URL
#           (sc://127.0.0.1:PORT) on stdout
#   stop    stop it by the PID recorded at start (SIGTERM, SIGKILL after 30 s)
#   status  exit 0 if it runs, 3 if not
#   url     print the URL of the running server (exit 3 if it is not running)
#
# Environment:
#   SLUICE_SPARK_CONNECT_DIR      run folder: PID, URL, logs, scratch space (no space in its path)
#                                 (default: <repo>/data/spark-connect)
#   SLUICE_SPARK_CONNECT_PORT     gRPC port (default: 15002)
#   SLUICE_SPARK_CONNECT_HOST     address it listens on (default: 127.0.0.1)
#   SLUICE_SPARK_CONNECT_MASTER   the server's Spark master (default: local[2])
#   SLUICE_SPARK_CONNECT_MEMORY   its driver memory (default: 1g)
#   SLUICE_SPARK_START_TIMEOUT    seconds to wait for it to accept sessions (default: 120)
#   SLUICE_PYTHON                 Python with pyspark installed, also the Python of its Python
#                                 workers (default: <repo>/.venv/bin/python)
#
# Only the URL goes to stdout; everything else goes to stderr. The server has the settings the
# landing job's spark-submit gets that hold for every session (the lake's SQL settings, no UI,
# no progress bar); its Python workers import the landing job from the archive each landing adds
# to its session (nothing of this checkout is on their path). Point Airflow at it with a
# connection of type spark_connect (`AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark_connect",
# "host": "sc://127.0.0.1", "port": 15002}'`), `sluice land` with --spark-connect URL.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${SLUICE_SPARK_CONNECT_DIR:-$REPO_ROOT/data/spark-connect}"
PYTHON="${SLUICE_PYTHON:-$REPO_ROOT/.venv/bin/python}"
PORT="${SLUICE_SPARK_CONNECT_PORT:-15002}"
HOST="${SLUICE_SPARK_CONNECT_HOST:-127.0.0.1}"
MASTER="${SLUICE_SPARK_CONNECT_MASTER:-local[2]}"
MEMORY="${SLUICE_SPARK_CONNECT_MEMORY:-1g}"
START_TIMEOUT="${SLUICE_SPARK_START_TIMEOUT:-120}"
SERVER_CLASS=org.apache.spark.sql.connect.service.SparkConnectServer
IDENT=sluice

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

if ! [[ "$PORT" =~ ^[0-9]{1,5}$ ]] || ((10#$PORT < 1 || 10#$PORT > 65535)); then
    die "SLUICE_SPARK_CONNECT_PORT must be a TCP port number, got '$PORT'"
fi

# Spark's daemon scripts split their folders' paths at spaces (the server then exits at once).
case "$RUN_DIR" in
*[[:space:]]*) die "the server's folder must have no space in its path, got '$RUN_DIR'" \
        "(SLUICE_SPARK_CONNECT_DIR)" ;;
esac

# spark-daemon.sh's names for the server's PID file and log.
pid_file() { printf '%s/spark-%s-%s-1.pid\n' "$RUN_DIR" "$IDENT" "$SERVER_CLASS"; }
log_file() { printf '%s/logs/spark-%s-%s-1-%s.out\n' "$RUN_DIR" "$IDENT" "$SERVER_CLASS" "$HOSTNAME"; }

# running: exit 0 if the recorded PID is alive and is the Spark Connect server (a recycled PID
# belonging to another program does not count).
running() {
    local file pid
    file="$(pid_file)"
    [[ -f "$file" ]] || return 1
    pid="$(<"$file")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$SERVER_CLASS"
}

server_url() {
    [[ -f "$RUN_DIR/server.url" ]] || return 1
    cat "$RUN_DIR/server.url"
}

spark_home() {
    "$PYTHON" -c 'import os, pyspark; print(os.path.dirname(os.path.abspath(pyspark.__file__)))'
}

# accepts_sessions URL: a client opens a session and runs a query (then releases the session).
accepts_sessions() {
    env -u PYTHONPATH "$PYTHON" - "$1" >/dev/null 2>&1 <<'EOF'
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.remote(sys.argv[1]).create()
try:
    assert spark.range(1).count() == 1
finally:
    spark.stop()
EOF
}

# wait_until_ready PID URL: wait until the server logs that it listens and a client gets a
# session; fail if it dies or the time runs out.
wait_until_ready() {
    local pid="$1" url="$2" deadline
    deadline=$((SECONDS + START_TIMEOUT))
    until grep -q "Spark Connect server started" "$(log_file)" 2>/dev/null && accepts_sessions "$url"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$(log_file)" >&2 || true
            if command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$PORT" | grep -q .; then
                log "port $PORT is already in use; set SLUICE_SPARK_CONNECT_PORT to another port"
            fi
            die "the server exited during start-up (log: $(log_file))"
        fi
        if ((SECONDS > deadline)); then
            tail -n 30 "$(log_file)" >&2 || true
            die "the server did not accept sessions within ${START_TIMEOUT}s (log: $(log_file))"
        fi
        sleep 0.5
    done
}

cmd_start() {
    if running; then
        log "already running (pid $(<"$(pid_file)"))"
        server_url
        return 0
    fi
    [[ -x "$PYTHON" ]] || die "no Python at $PYTHON; run: make setup (or set SLUICE_PYTHON)"
    command -v java >/dev/null 2>&1 || die "Spark needs Java 17 (java not found on PATH)"
    SPARK_HOME="$(spark_home)" || die "pyspark is not installed for $PYTHON"
    [[ -x "$SPARK_HOME/sbin/start-connect-server.sh" ]] ||
        die "$SPARK_HOME/sbin/start-connect-server.sh not found (pyspark without Spark Connect)"
    mkdir -p "$RUN_DIR/logs" "$RUN_DIR/local" "$RUN_DIR/conf"
    rm -f "$RUN_DIR/server.url" "$(pid_file)"

    local url pid conf lake_conf
    url="sc://$HOST:$PORT"
    # Everything the server (and the Python workers it forks) needs; nothing from a developer's
    # SPARK_CONF_DIR, spark-env.sh or PYTHONPATH.
    export SPARK_HOME
    export SPARK_CONF_DIR="$RUN_DIR/conf"
    export SPARK_PID_DIR="$RUN_DIR"
    export SPARK_LOG_DIR="$RUN_DIR/logs"
    export SPARK_LOCAL_DIRS="$RUN_DIR/local"
    export SPARK_IDENT_STRING="$IDENT"
    export PYSPARK_PYTHON="$PYTHON"
    unset PYTHONPATH SPARK_REMOTE SPARK_CONNECT_MODE_ENABLED
    : >"$SPARK_CONF_DIR/spark-defaults.conf"
    # The landing job's settings that hold for every session: the lake's SQL settings
    # (pipeline_core.staging_contract.LAKE_SQL_CONF, which each landing sets on its session
    # too), no UI, no console progress bar.
    lake_conf="$(PYTHONPATH="$REPO_ROOT" "$PYTHON" -c 'from pipeline_core.staging_contract import LAKE_SQL_CONF
print(" ".join(f"{key}={value}" for key, value in LAKE_SQL_CONF.items()))')" ||
        die "cannot read the lake's Spark settings from $REPO_ROOT/pipeline_core"
    conf=()
    for setting in $lake_conf; do
        conf+=(--conf "$setting")
    done
    conf+=(
        --conf spark.ui.enabled=false
        --conf spark.ui.showConsoleProgress=false
        --conf "spark.connect.grpc.binding.address=$HOST"
        --conf "spark.connect.grpc.binding.port=$PORT"
        --conf spark.connect.grpc.port.maxRetries=0
        # Landings of one version of the job share a session (spark_jobs.connect): keep it
        # open through a day without landings, so its Python workers are not started again.
        --conf spark.connect.session.manager.defaultSessionTimeout=24h
        --conf spark.driver.host=127.0.0.1
        --conf spark.driver.bindAddress=127.0.0.1
    )
    "$SPARK_HOME/sbin/start-connect-server.sh" --master "$MASTER" --driver-memory "$MEMORY" \
        "${conf[@]}" >&2 </dev/null
    [[ -f "$(pid_file)" ]] || die "start-connect-server.sh recorded no PID (log: $(log_file))"
    pid="$(<"$(pid_file)")"
    wait_until_ready "$pid" "$url"
    printf '%s\n' "$url" >"$RUN_DIR/server.url"
    log "server running: $url (master $MASTER, pid $pid, log $(log_file))"
    printf '%s\n' "$url"
}

cmd_stop() {
    local file pid
    file="$(pid_file)"
    if ! running; then
        rm -f "$file" "$RUN_DIR/server.url"
        return 0
    fi
    pid="$(<"$file")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "the server (pid $pid) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file" "$RUN_DIR/server.url"
    log "server stopped (pid $pid)"
}

cmd_status() {
    if running; then
        log "running: $(server_url) (pid $(<"$(pid_file)"), run folder: $RUN_DIR)"
        return 0
    fi
    log "not running (run folder: $RUN_DIR)"
    exit 3
}

cmd_url() {
    running || {
        log "the server is not running; run: scripts/spark-connect.sh start"
        exit 3
    }
    server_url
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
url) cmd_url ;;
*) usage ;;
esac
