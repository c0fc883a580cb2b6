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

# tool_path TOOL: print TOOL's binary (PATH, then /usr/sbin and /usr/bin, which a non-root
# PATH may lack), or fail.
tool_path() {
    local candidate
    for candidate in "$(command -v "$1" 2>/dev/null || true)" "/usr/sbin/$1" "/usr/bin/$1"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# package_of TOOL: the Debian package that brings TOOL.
package_of() {
    case "$1" in
    rsyslogd) echo rsyslog ;;
    logger) echo bsdutils ;;
    *) echo "$1" ;;
    esac
}

cmd_install() {
    local tool missing=() packages=()
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || missing+=("$tool")
    done
    ((${#missing[@]} > 0)) || return 0
    need_apt "${missing[*]}" "rsyslog bsdutils"
    block_service_starts # rsyslog's package would start the system's syslog daemon
    for tool in "${missing[@]}"; do
        packages+=("$(package_of "$tool")")
    done
    apt_install "${packages[@]}"
    for tool in "${missing[@]}"; do
        tool_path "$tool" >/dev/null || die "$(package_of "$tool") installed but no $tool binary found"
    done
    log "ready: $("$(tool_path rsyslogd)" -v | head -n 1), $("$(tool_path logger)" --version)"
}

cmd_paths() {
    local tool status=0
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" || {
            log "$tool not found; run: scripts/syslog-tools.sh install"
            status=1
        }
    done
    return "$status"
}

cmd_status() {
    local tool
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || exit 3
    done
}

case "${1:-}" in
install) cmd_install ;;
paths) cmd_paths ;;
status) cmd_status ;;
*) usage ;;
esac
