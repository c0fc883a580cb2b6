#!/usr/bin/env bash
# PgBouncer for the test of a metastore behind a transaction-mode connection pooler
# (tests/pipeline_core/metastore/test_pooled_postgres.py): Debian's pgbouncer package.
#
# Usage: scripts/pgbouncer.sh {install|paths|status}
#
#   install   install Debian's pgbouncer package unless its binary is there
#   paths     print the binary's path (exit 1 when it is missing)
#   status    exit 0 when the binary is there, 3 when it is not
#
# The package's service is not started (no pooler on port 6432): the test runs its own
# pgbouncer, unprivileged, on a free loopback port in front of a private PostgreSQL server
# (tests/support/pgbouncer.py). Only the path goes to stdout.
#
# Environment: none.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS=(pgbouncer)

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

# package_of TOOL: the Debian package that brings TOOL.
package_of() { echo "$1"; }

cmd_install() {
    tools_install "pgbouncer" || return
    log "ready: $("$(tool_path pgbouncer)" --version | head -n 1)"
}

case "${1:-}" in
install) cmd_install ;;
paths) tools_paths ;;
status) tools_status ;;
*) usage ;;
esac
