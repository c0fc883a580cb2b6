#!/usr/bin/env bash
# A Spark standalone cluster on this machine: one master and one worker on 127.0.0.1, from the
# pyspark distribution installed in .venv.
#
# Usage: scripts/spark-standalone.sh {start|stop|status|url}
#
#   start   start the master and the worker (free ports unless set), wait until the worker
#           has registered, print the master URL (spark://127.0.0.1:PORT) on stdout
#   stop    stop the worker, then the master, by the PIDs recorded at start
#   status  exit 0 if both run, 3 if not
#   url     print the master URL of the running cluster (exit 3 if it is not running)
#
# Environment:
#   SLUICE_SPARK_RUN_DIR        run folder: PIDs, ports, logs, worker scratch space
#                               (default: <repo>/data/spark-standalone)
#   SLUICE_PYTHON               Python with pyspark installed (default: <repo>/.venv/bin/python)
#   SLUICE_SPARK_MASTER_PORT    master RPC port (default: a free port)
#   SLUICE_SPARK_WEBUI_PORT     master web UI port (default: a free port)
#   SLUICE_SPARK_WORKER_CORES   cores the worker offers (default: 2)
#   SLUICE_SPARK_WORKER_MEMORY  memory the worker offers to executors (default: 1g)
#   SLUICE_SPARK_START_TIMEOUT  seconds to wait for the master and the worker (default: 120)
#
# Only the URL goes to stdout; everything else goes to stderr. The master and the worker are
# plain JVMs started with bin/spark-class (the pip distribution of pyspark has no
# start-master.sh); their output is in <run folder>/logs. Executors run on this machine, so
# they see the same files as the driver; they import spark_jobs from this checkout (the
# worker's PYTHONPATH) with the virtualenv's Python (PYSPARK_PYTHON).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${SLUICE_SPARK_RUN_DIR:-$REPO_ROOT/data/spark-standalone}"
PYTHON="${SLUICE_PYTHON:-$REPO_ROOT/.venv/bin/python}"
HOST=127.0.0.1
WORKER_CORES="${SLUICE_SPARK_WORKER_CORES:-2}"
WORKER_MEMORY="${SLUICE_SPARK_WORKER_MEMORY:-1g}"
START_TIMEOUT="${SLUICE_SPARK_START_TIMEOUT:-120}"
MASTER_CLASS=org.apache.spark.deploy.master.Master
WORKER_CLASS=org.apache.spark.deploy.worker.Worker

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

# ---------------------------------------------------------------------------
# Processes, by the PIDs recorded in the run folder

pid_file() { printf '%s/%s.pid\n' "$RUN_DIR" "$1"; }

# running ROLE CLASS: exit 0 if the PID recorded for ROLE is alive and is that Spark daemon
# (a recycled PID belonging to another program does not count).
running() {
    local file pid
    file="$(pid_file "$1")"
    [[ -f "$file" ]] || return 1
    pid="$(<"$file")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# stop_role ROLE CLASS: SIGTERM the recorded PID, SIGKILL it if it is still there after 30 s.
stop_role() {
    local role="$1" class="$2" file pid
    file="$(pid_file "$role")"
    if ! running "$role" "$class"; then
        rm -f "$file"
        return 0
    fi
    pid="$(<"$file")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$role (pid $pid) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
    log "$role stopped (pid $pid)"
}

# ---------------------------------------------------------------------------
# Start-up

free_port() {
    "$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

spark_home() {
    "$PYTHON" -c 'import os, pyspark; print(os.path.dirname(os.path.abspath(pyspark.__file__)))'
}

# wait_for_log ROLE PID PATTERN: wait until ROLE's log matches PATTERN; fail if it dies.
wait_for_log() {
    local role="$1" pid="$2" pattern="$3" deadline
    deadline=$((SECONDS + START_TIMEOUT))
    until grep -qE "$pattern" "$RUN_DIR/logs/$role.log" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$RUN_DIR/logs/$role.log" >&2 || true
            die "the $role exited during start-up (log: $RUN_DIR/logs/$role.log)"
        fi
        if ((SECONDS > deadline)); then
            tail -n 30 "$RUN_DIR/logs/$role.log" >&2 || true
            die "the $role did not start within ${START_TIMEOUT}s (log: $RUN_DIR/logs/$role.log)"
        fi
        sleep 0.2
    done
}

# launch ROLE CLASS ARGS...: run a Spark daemon in the background, record its PID.
launch() {
    local role="$1"
    shift
    # spark-class execs the JVM, so $! is the daemon's own PID.
    nohup "$SPARK_HOME/bin/spark-class" "$@" >"$RUN_DIR/logs/$role.log" 2>&1 </dev/null &
    echo "$!" >"$(pid_file "$role")"
    printf '%s\n' "$!"
}

master_url() {
    [[ -f "$RUN_DIR/master.url" ]] || return 1
    cat "$RUN_DIR/master.url"
}

cmd_start() {
    if running master "$MASTER_CLASS" && running worker "$WORKER_CLASS"; then
        log "already running"
        master_url
        return 0
    fi
    cmd_stop 2>/dev/null # a half-started cluster from an earlier attempt
    [[ -x "$PYTHON" ]] || die "no Python at $PYTHON; run: make setup (or set SLUICE_PYTHON)"
    command -v java >/dev/null 2>&1 || die "Spark needs Java 17 (java not found on PATH)"
    SPARK_HOME="$(spark_home)" || die "pyspark is not installed for $PYTHON"
    [[ -x "$SPARK_HOME/bin/spark-class" ]] || die "$SPARK_HOME/bin/spark-class not found"
    mkdir -p "$RUN_DIR/logs" "$RUN_DIR/work" "$RUN_DIR/local" "$RUN_DIR/conf"

    local master_port webui_port worker_port worker_webui_port url master_pid worker_pid
    master_port="${SLUICE_SPARK_MASTER_PORT:-$(free_port)}"
    webui_port="${SLUICE_SPARK_WEBUI_PORT:-$(free_port)}"
    worker_port="$(free_port)"
    worker_webui_port="$(free_port)"
    url="spark://$HOST:$master_port"
    # The daemons' properties: no REST submission server (it would take the fixed port 6066;
    # spark-submit in client mode talks to the master's RPC port).
    printf 'spark.master.rest.enabled false\n' >"$RUN_DIR/conf/spark-defaults.conf"

    # Everything the daemons (and the executors the worker forks) need; nothing from a
    # developer's SPARK_CONF_DIR or spark-env.sh.
    export SPARK_HOME
    export SPARK_CONF_DIR="$RUN_DIR/conf"
    export SPARK_LOCAL_IP="$HOST"
    export SPARK_LOCAL_DIRS="$RUN_DIR/local"
    export SPARK_WORKER_DIR="$RUN_DIR/work"
    export SPARK_DAEMON_MEMORY="${SPARK_DAEMON_MEMORY:-512m}"
    export SPARK_NO_DAEMONIZE=1
    export PYSPARK_PYTHON="$PYTHON"
    export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
    unset SPARK_MASTER_HOST SPARK_MASTER_PORT SPARK_MASTER_WEBUI_PORT SPARK_MASTER_OPTS \
        SPARK_WORKER_OPTS SPARK_WORKER_CORES SPARK_WORKER_MEMORY SPARK_WORKER_PORT \
        SPARK_WORKER_WEBUI_PORT

    master_pid="$(launch master "$MASTER_CLASS" --host "$HOST" --port "$master_port" \
        --webui-port "$webui_port")"
    wait_for_log master "$master_pid" "I have been elected leader"
    log "master running: $url (web UI http://$HOST:$webui_port, pid $master_pid)"

    worker_pid="$(launch worker "$WORKER_CLASS" --host "$HOST" --port "$worker_port" \
        --webui-port "$worker_webui_port" --cores "$WORKER_CORES" --memory "$WORKER_MEMORY" \
        --work-dir "$RUN_DIR/work" "$url")"
    wait_for_log worker "$worker_pid" "Successfully registered with master"
    log "worker registered: $WORKER_CORES cores, $WORKER_MEMORY (pid $worker_pid)"

    cat >"$RUN_DIR/ports" <<EOF
master=$master_port
master_webui=$webui_port
worker=$worker_port
worker_webui=$worker_webui_port
EOF
    printf '%s\n' "$url" >"$RUN_DIR/master.url"
    printf '%s\n' "$url"
}

cmd_stop() {
    stop_role worker "$WORKER_CLASS"
    stop_role master "$MASTER_CLASS"
    rm -f "$RUN_DIR/master.url" "$RUN_DIR/ports"
}

cmd_status() {
    if running master "$MASTER_CLASS" && running worker "$WORKER_CLASS"; then
        log "running: $(master_url) (run folder: $RUN_DIR)"
        return 0
    fi
    log "not running (run folder: $RUN_DIR)"
    exit 3
}

cmd_url() {
    running master "$MASTER_CLASS" || {
        log "the master is not running; run: scripts/spark-standalone.sh start"
        exit 3
    }
    master_url
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
url) cmd_url ;;
*) usage ;;
esac
