#!/usr/bin/env bash
# The real syslog programs for the syslog format tests (tests/spark_jobs/test_syslog_formats.py):
# Debian's rsyslog, receiving on loopback and writing files, and util-linux's logger, sending.
#
# Usage: scripts/syslog-tools.sh {install|paths|status}
#
#   install   install the Debian packages of the tools whose binary is missing: rsyslog
#             (rsyslogd), bsdutils (logger)
#   paths     print each tool's binary, one a line (exit 1 when one is missing)
#   status    exit 0 when every tool is there, 3 when one is not
#
# rsyslog's service is not started (no daemon on /dev/log): the tests run their own rsyslogd,
# unprivileged, listening on a free loopback port. Only the paths go to stdout.
#
# Environment: none.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS=(rsyslogd logger)

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

# package_of TOOL: the Debian package that brings TOOL.
package_of() {
    case "$1" in
    rsyslogd) echo rsyslog ;;
    logger) echo bsdutils ;;
    *) echo "$1" ;;
    esac
}

# cmd_install: the packages with their services kept from starting (the package would start
# the service: nginx on port 80, the system's syslog daemon).
cmd_install() {
    tools_install "rsyslog bsdutils" || return
    log "ready: $("$(tool_path rsyslogd)" -v | head -n 1), $("$(tool_path logger)" --version)"
}

case "${1:-}" in
install) cmd_install ;;
paths) tools_paths ;;
status) tools_status ;;
*) usage ;;
esac
