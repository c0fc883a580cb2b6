#!/usr/bin/env bash
# The real rotation tools for the rotation test (tests/system/test_real_rotation.py): Debian's
# nginx, logrotate and wrk.
#
# Usage: scripts/rotation-tools.sh {install|paths|status}
#
#   install   install the Debian packages of the tools whose binary is missing: nginx-light
#             (nginx where the release has no nginx-light), logrotate, wrk
#   paths     print each tool's binary, one a line (exit 1 when one is missing)
#   status    exit 0 when every tool is there, 3 when one is not
#
# The packages' services are not started (no nginx on port 80): the test runs its own nginx
# on loopback. Only the paths go to stdout.
#
# Environment: none.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS=(nginx logrotate wrk)

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
    if [[ "$1" == nginx ]]; then
        # Debian 13 dropped nginx-light; its nginx is as small.
        if has_candidate nginx-light; then echo nginx-light; else echo nginx; fi
    else
        echo "$1"
    fi
}

cmd_install() {
    local tool missing=() packages=()
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || missing+=("$tool")
    done
    ((${#missing[@]} > 0)) || return 0
    need_apt "${missing[*]}" "nginx-light logrotate wrk"
    block_service_starts # nginx's package would start nginx on port 80
    for tool in "${missing[@]}"; do
        packages+=("$(package_of "$tool")")
    done
    apt_install "${packages[@]}"
    for tool in "${missing[@]}"; do
        tool_path "$tool" >/dev/null || die "$(package_of "$tool") installed but no $tool binary found"
    done
    log "ready: $("$(tool_path nginx)" -v 2>&1), $("$(tool_path logrotate)" --version | head -n 1)"
}

cmd_paths() {
    local tool status=0
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" || {
            log "$tool not found; run: scripts/rotation-tools.sh install"
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
