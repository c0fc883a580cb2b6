#!/usr/bin/env bash
# Private PostgreSQL server for the test suite.
#
# Usage: scripts/postgres.sh {install|start|stop|status|url|reset-db}
#
#   install   install Debian's `postgresql` package unless server binaries exist
#   start     create (once) and start a throwaway cluster on 127.0.0.1, create
#             the `sluice` database, print its SQLAlchemy URL on stdout
#   stop      stop that server (quiet if it is not running)
#   status    exit 0 if the server is running, 3 if not
#   url       print the SQLAlchemy URL
#   reset-db  drop and recreate the `sluice` database (server must be running)
#
# Environment:
#   SLUICE_PG_DIR     cluster data directory (default: <repo>/data/postgres)
#   SLUICE_PG_PORT    TCP port on 127.0.0.1 (default: 54329)
#   SLUICE_PG_BINDIR  directory holding pg_ctl/initdb/postgres (default: newest
#                     /usr/lib/postgresql/*/bin, then PATH)
#
# Only the URL goes to stdout; everything else goes to stderr.
#
# When run as root, the server runs as the `postgres` system user (PostgreSQL
# refuses to run as root); otherwise it runs as the current user. The cluster
# has trust authentication and durability switched off: it is for tests only.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PG_PORT="${SLUICE_PG_PORT:-54329}"
PG_DB=sluice
PG_SUPERUSER=sluice
PG_HOST=127.0.0.1
PG_OS_USER=postgres

# Variables that would redirect libpq or pg_ctl elsewhere.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGSSLMODE PGTZ PGCLIENTENCODING

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

if ! [[ "$PG_PORT" =~ ^[0-9]{1,5}$ ]] || ((10#$PG_PORT < 1 || 10#$PG_PORT > 65535)); then
    die "SLUICE_PG_PORT must be a TCP port number, got '$PG_PORT'"
fi

# A locale that always exists on Debian; an unset or ungenerated LANG would
# otherwise make initdb fail or fall back unpredictably.
if locale -a 2>/dev/null | grep -qixE 'c\.utf-?8'; then
    PG_LOCALE=C.UTF-8
else
    PG_LOCALE=C
fi
export LC_ALL="$PG_LOCALE"
unset LANGUAGE

pg_url() {
    printf 'postgresql+psycopg://%s@%s:%s/%s\n' "$PG_SUPERUSER" "$PG_HOST" "${1:-$PG_PORT}" "$PG_DB"
}


# ---------------------------------------------------------------------------
# Binaries

# bindir_ok DIR: DIR holds a usable server installation.
bindir_ok() { [[ -x "$1/pg_ctl" && -x "$1/initdb" && -x "$1/postgres" ]]; }

# find_bindir: print the server bin directory: $SLUICE_PG_BINDIR, else the
# newest /usr/lib/postgresql/*/bin, else the directory of pg_ctl on PATH.
find_bindir() {
    local dir best="" resolved
    if [[ -n "${SLUICE_PG_BINDIR:-}" ]]; then
        bindir_ok "$SLUICE_PG_BINDIR" || return 1
        printf '%s\n' "$SLUICE_PG_BINDIR"
        return 0
    fi
    while IFS= read -r dir; do
        bindir_ok "$dir" && best="$dir"
    done < <(compgen -G '/usr/lib/postgresql/*/bin' | sort -V)
    if [[ -z "$best" ]] && resolved="$(command -v pg_ctl 2>/dev/null)"; then
        dir="$(dirname "$(readlink -f "$resolved")")"
        bindir_ok "$dir" && best="$dir"
    fi
    [[ -n "$best" ]] || return 1
    printf '%s\n' "$best"
}

# server_major DIR: major version of DIR/postgres ("15").
server_major() {
    "$1/postgres" --version | awk '{print $3}' | cut -d. -f1
}

require_bindir() {
    BINDIR="$(find_bindir)" ||
        die "PostgreSQL server binaries not found; run: scripts/postgres.sh install"
    set_psql
}

# use_cluster_bindir MAJOR: switch to the binaries of the PostgreSQL major
# version that created the cluster, if they are not the ones found.
use_cluster_bindir() {
    local major="$1"
    [[ "$(server_major "$BINDIR")" == "$major" ]] && return 0
    if [[ -z "${SLUICE_PG_BINDIR:-}" ]] && bindir_ok "/usr/lib/postgresql/$major/bin"; then
        BINDIR="/usr/lib/postgresql/$major/bin"
        set_psql
        return 0
    fi
    die "the cluster in $PG_DIR was created by PostgreSQL $major but $BINDIR is PostgreSQL $(server_major "$BINDIR"); delete $PG_DIR to recreate it"
}

set_psql() {
    PSQL="$BINDIR/psql"
    if [[ ! -x "$PSQL" ]]; then
        PSQL="$(command -v psql 2>/dev/null)" || die "psql not found"
    fi
}

# ---------------------------------------------------------------------------
# Running things as the server's user

if ! is_root; then
    PG_OS_USER="$(id -un)"
fi

# as_pg CMD...: run CMD as the user that owns the cluster.
as_pg() {
    if ! is_root; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        (cd / && runuser -u "$PG_OS_USER" -- "$@")
    else
        (cd / && su -s /bin/bash "$PG_OS_USER" -c "$(printf '%q ' "$@")")
    fi
}

require_os_user() {
    is_root || return 0
    id -u "$PG_OS_USER" >/dev/null 2>&1 ||
        die "system user '$PG_OS_USER' does not exist (it comes with Debian's postgresql package: scripts/postgres.sh install)"
}

# ---------------------------------------------------------------------------
# Data directory

abs_path() {
    case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
    esac
}

# resolve_pg_dir [create]: set PG_DIR. As root, the postgres user must be able
# to reach the parent directory; if it cannot (e.g. a 0700 home directory on
# the way), use a directory under /tmp derived from the requested path.
resolve_pg_dir() {
    local requested parent sum
    requested="$(abs_path "${SLUICE_PG_DIR:-$REPO_ROOT/data/postgres}")"
    requested="${requested%/}"
    PG_DIR="$requested"
    is_root || return 0
    parent="$(dirname "$requested")"
    if [[ "${1:-}" == create && ! -d "$parent" ]]; then
        (umask 022 && mkdir -p "$parent")
    fi
    if [[ ! -d "$parent" ]]; then
        return 0 # nothing was ever created there
    fi
    if as_pg test -x "$parent" 2>/dev/null; then
        return 0
    fi
    sum="$(printf '%s' "$requested" | cksum | cut -d' ' -f1)"
    PG_DIR="/tmp/sluice-postgres-$sum"
    log "user '$PG_OS_USER' cannot reach $parent; using $PG_DIR instead of $requested"
}

# prepare_pg_dir: make PG_DIR exist, owned by the server user, mode 0700.
prepare_pg_dir() {
    if [[ -e "$PG_DIR" && ! -d "$PG_DIR" ]]; then
        die "$PG_DIR exists and is not a directory"
    fi
    (umask 077 && mkdir -p "$PG_DIR")
    if [[ -f "$PG_DIR/PG_VERSION" ]]; then
        if is_root && [[ "$(stat -c %U "$PG_DIR")" != "$PG_OS_USER" ]]; then
            log "giving $PG_DIR to user '$PG_OS_USER'"
            chown -R "$PG_OS_USER:" "$PG_DIR"
        fi
    else
        if [[ -n "$(ls -A "$PG_DIR")" ]]; then
            die "$PG_DIR is not empty and holds no PostgreSQL cluster; remove it or set SLUICE_PG_DIR"
        fi
        is_root && chown "$PG_OS_USER:" "$PG_DIR"
    fi
    chmod 0700 "$PG_DIR"
    as_pg test -w "$PG_DIR" -a -x "$PG_DIR" ||
        die "user '$PG_OS_USER' cannot write to $PG_DIR"
}

socket_dir() { printf '%s/run\n' "$PG_DIR"; }

# conf_quote VALUE: VALUE as a postgresql.conf string literal.
conf_quote() { printf "'%s'" "${1//\'/\'\'}"; }

init_cluster() {
    local out
    log "initializing cluster in $PG_DIR ($("$BINDIR/postgres" --version))"
    if ! out="$(as_pg "$BINDIR/initdb" -D "$PG_DIR" --auth=trust --username="$PG_SUPERUSER" \
        -E UTF8 --locale="$PG_LOCALE" --no-sync 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "initdb failed"
    fi
    as_pg tee -a "$PG_DIR/postgresql.conf" >/dev/null <<'EOF'

# scripts/postgres.sh: throwaway test server, durability switched off.
fsync = off
synchronous_commit = off
full_page_writes = off
# Address, port and socket directory, rewritten on every start.
include_if_exists = 'sluice_runtime.conf'
EOF
}

write_runtime_conf() {
    local sock
    sock="$(socket_dir)"
    # sun_path holds 107 bytes plus NUL.
    if ((${#sock} + ${#PG_PORT} + 10 > 107)); then
        die "socket path $sock is too long for a Unix socket; set SLUICE_PG_DIR to a shorter path"
    fi
    as_pg mkdir -p "$sock"
    as_pg tee "$PG_DIR/sluice_runtime.conf" >/dev/null <<EOF
listen_addresses = '$PG_HOST'
port = $PG_PORT
unix_socket_directories = $(conf_quote "$sock")
EOF
}

server_running() {
    [[ -f "$PG_DIR/PG_VERSION" ]] || return 1
    as_pg "$BINDIR/pg_ctl" status -D "$PG_DIR" >/dev/null 2>&1
}

# The port of the running server, from line 4 of postmaster.pid.
running_port() {
    sed -n '4p' "$PG_DIR/postmaster.pid" 2>/dev/null || true
}

cluster_major() {
    [[ -f "$PG_DIR/PG_VERSION" ]] && cat "$PG_DIR/PG_VERSION"
}

# psql_admin [PORT] -c SQL ...: run psql against the maintenance database.
psql_admin() {
    local port="$1"
    shift
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$port" -U "$PG_SUPERUSER" -d postgres "$@"
}

ensure_db() {
    local port="$1" exists
    exists="$(psql_admin "$port" -Atc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")"
    if [[ "$exists" != 1 ]]; then
        psql_admin "$port" -c "CREATE DATABASE $PG_DB"
        log "created database $PG_DB"
    fi
}

# ---------------------------------------------------------------------------
# Subcommands

cmd_install() {
    local started
    if find_bindir >/dev/null; then
        return 0
    fi
    need_apt PostgreSQL postgresql "set SLUICE_PG_BINDIR"
    started="$(date +%s)"
    # Do not let the package start a service or create its own cluster (the tests use a
    # private cluster); the guards are removed again on exit.
    block_service_starts
    if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
        local guard=/etc/postgresql-common/createcluster.d/00-sluice-no-main-cluster.conf
        INSTALL_GUARDS+=("$guard")
        "${SUDO[@]}" mkdir -p "$(dirname "$guard")"
        echo 'create_main_cluster = false' | "${SUDO[@]}" tee "$guard" >/dev/null
    fi
    apt_install postgresql
    local bindir
    bindir="$(find_bindir)" || die "postgresql installed but no server binaries under /usr/lib/postgresql/*/bin"
    log "installed $("$bindir/postgres" --version) in $(($(date +%s) - started))s"
}

cmd_start() {
    require_bindir
    require_os_user
    resolve_pg_dir create
    prepare_pg_dir
    local major port
    major="$(cluster_major || true)"
    if [[ -n "$major" ]]; then
        use_cluster_bindir "$major"
    else
        init_cluster
    fi
    if server_running; then
        port="$(running_port)"
        if [[ -n "$port" && "$port" != "$PG_PORT" ]]; then
            log "server on $PG_DIR is already running on port $port, not $PG_PORT"
        fi
        ensure_db "${port:-$PG_PORT}"
        pg_url "${port:-$PG_PORT}"
        return 0
    fi
    write_runtime_conf
    if ! as_pg "$BINDIR/pg_ctl" start -D "$PG_DIR" -l "$PG_DIR/server.log" -w -t 120 -s >&2; then
        log "server failed to start; end of $PG_DIR/server.log:"
        tail -n 20 "$PG_DIR/server.log" >&2 || true
        if command -v ss >/dev/null 2>&1 && ss -Hltn "sport = :$PG_PORT" | grep -q .; then
            log "port $PG_PORT is already in use; set SLUICE_PG_PORT to another port"
        fi
        exit 1
    fi
    log "server running on $PG_HOST:$PG_PORT (data: $PG_DIR)"
    ensure_db "$PG_PORT"
    pg_url
}

cmd_stop() {
    BINDIR="$(find_bindir)" || return 0
    is_root && ! id -u "$PG_OS_USER" >/dev/null 2>&1 && return 0
    resolve_pg_dir
    server_running || return 0
    as_pg "$BINDIR/pg_ctl" stop -D "$PG_DIR" -m fast -w -t 120 -s >&2
    log "server stopped (data: $PG_DIR)"
}

cmd_status() {
    BINDIR="$(find_bindir)" || exit 3
    is_root && ! id -u "$PG_OS_USER" >/dev/null 2>&1 && exit 3
    resolve_pg_dir
    if server_running; then
        log "running on $PG_HOST:$(running_port) (data: $PG_DIR)"
        return 0
    fi
    log "not running (data: $PG_DIR)"
    exit 3
}

# The URL of the running server (its own port), else of the one `start` would run.
cmd_url() {
    resolve_pg_dir
    pg_url "$(running_port)"
}

cmd_reset_db() {
    require_bindir
    require_os_user
    resolve_pg_dir
    server_running || die "server is not running; run: scripts/postgres.sh start"
    local port version
    port="$(running_port)"
    port="${port:-$PG_PORT}"
    version="$(psql_admin "$port" -Atc 'SHOW server_version_num')"
    if ((version >= 130000)); then
        psql_admin "$port" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)"
    else
        psql_admin "$port" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$PG_DB' AND pid <> pg_backend_pid()" >/dev/null
        psql_admin "$port" -c "DROP DATABASE IF EXISTS $PG_DB"
    fi
    psql_admin "$port" -c "CREATE DATABASE $PG_DB"
    log "database $PG_DB recreated"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
url) cmd_url ;;
reset-db) cmd_reset_db ;;
-h | --help | help) usage ;;
*) usage ;;
esac
