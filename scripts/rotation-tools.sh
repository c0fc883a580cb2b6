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
SUDO=()
INSTALL_GUARDS=()

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"

is_root() { ((EUID == 0)); }

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

# has_candidate PACKAGE: the package lists know PACKAGE.
has_candidate() {
    local candidate
    candidate="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')"
    [[ -n "$candidate" && "$candidate" != "(none)" ]]
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

remove_install_guards() {
    ((${#INSTALL_GUARDS[@]} == 0)) || "${SUDO[@]}" rm -f "${INSTALL_GUARDS[@]}"
}

cmd_install() {
    local tool missing=() packages=() apt_opts updated=""
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || missing+=("$tool")
    done
    ((${#missing[@]} > 0)) || return 0
    if ! is_root; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n env DEBIAN_FRONTEND=noninteractive)
        else
            die "${missing[*]} not installed and installing needs root (apt-get install nginx-light logrotate wrk)"
        fi
    fi
    command -v apt-get >/dev/null 2>&1 ||
        die "${missing[*]} not installed and this is not a Debian system"
    export DEBIAN_FRONTEND=noninteractive
    apt_opts=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600)

    # Do not let the nginx package start its service (port 80, no systemd here); the guard
    # is removed again on exit.
    trap remove_install_guards EXIT
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        INSTALL_GUARDS+=(/usr/sbin/policy-rc.d)
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${SUDO[@]}" chmod 0755 /usr/sbin/policy-rc.d
    fi

    for tool in "${missing[@]}"; do
        if ! has_candidate "$(package_of "$tool")" && [[ -z "$updated" ]]; then
            log "apt-get update (package lists do not know $(package_of "$tool"))"
            "${SUDO[@]}" apt-get "${apt_opts[@]}" update >&2
            updated=1
        fi
        packages+=("$(package_of "$tool")")
    done
    log "apt-get install ${packages[*]}"
    if ! "${SUDO[@]}" apt-get "${apt_opts[@]}" install --no-install-recommends "${packages[@]}" >&2; then
        [[ -z "$updated" ]] || die "apt-get install ${packages[*]} failed"
        # Stale package lists point at files the mirror no longer has.
        log "apt-get install failed; refreshing package lists and retrying"
        "${SUDO[@]}" apt-get "${apt_opts[@]}" update >&2
        "${SUDO[@]}" apt-get "${apt_opts[@]}" install --no-install-recommends "${packages[@]}" >&2
    fi
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
