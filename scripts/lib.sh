# shellcheck shell=bash
# Helpers shared by the scripts in this folder; source it (bash):
#     . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Messages are prefixed with the sourcing script's name.

log() { printf '%s: %s\n' "$(basename "${BASH_SOURCE[-1]}")" "$*" >&2; }

die() {
    log "error: $*"
    exit 1
}

# Print the script's header comment (from line 2 up to "# Environment:") and exit 2.
usage() {
    sed -n '2,/^# Environment:/{/^# Environment:/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[-1]}" >&2
    exit 2
}

# -- installing Debian packages ----------------------------------------------------------------

SUDO=()
INSTALL_GUARDS=()
APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600)

is_root() { ((EUID == 0)); }

# need_apt WHAT PACKAGES [HINT]: run as root (or through passwordless sudo) on a Debian system,
# or die saying that WHAT is missing and how to install it (HINT: what to do elsewhere).
need_apt() {
    if ! is_root; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n env DEBIAN_FRONTEND=noninteractive)
        else
            die "$1 is not installed and installing it needs root (apt-get install $2)"
        fi
    fi
    command -v apt-get >/dev/null 2>&1 ||
        die "$1 is not installed and this is not a Debian system${3:+; $3}"
    export DEBIAN_FRONTEND=noninteractive
}

# has_candidate PACKAGE: the package lists know PACKAGE.
has_candidate() {
    local candidate
    candidate="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')"
    [[ -n "$candidate" && "$candidate" != "(none)" ]]
}

remove_install_guards() {
    ((${#INSTALL_GUARDS[@]} == 0)) || "${SUDO[@]}" rm -f "${INSTALL_GUARDS[@]}"
}

# block_service_starts: packages installed from now on do not start their services (there is
# no systemd here); the guard is removed on exit, with any other INSTALL_GUARDS.
block_service_starts() {
    trap remove_install_guards EXIT
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        INSTALL_GUARDS+=(/usr/sbin/policy-rc.d)
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${SUDO[@]}" chmod 0755 /usr/sbin/policy-rc.d
    fi
}

# apt_install PACKAGE...: install without recommends; the package lists are refreshed first if
# they do not know a package, or once after a failed install (stale lists point at files the
# mirror no longer has).
apt_install() {
    local package updated=""
    for package in "$@"; do
        if ! has_candidate "$package"; then
            log "apt-get update (package lists do not know $package)"
            "${SUDO[@]}" apt-get "${APT_OPTS[@]}" update >&2
            updated=1
            break
        fi
    done
    log "apt-get install $*"
    if ! "${SUDO[@]}" apt-get "${APT_OPTS[@]}" install --no-install-recommends "$@" >&2; then
        [[ -z "$updated" ]] || die "apt-get install $* failed"
        log "apt-get install failed; refreshing package lists and retrying"
        "${SUDO[@]}" apt-get "${APT_OPTS[@]}" update >&2
        "${SUDO[@]}" apt-get "${APT_OPTS[@]}" install --no-install-recommends "$@" >&2
    fi
}

# -- a set of tools from Debian's packages (scripts/rotation-tools.sh, scripts/syslog-tools.sh) --
# The sourcing script sets TOOLS (the binaries) and defines package_of TOOL (the package that
# brings it), then runs: tools_main "$1" "PACKAGES TO NAME" "what the tools' services would do".

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

# tools_install PACKAGES: install the packages of the TOOLS whose binary is missing (services
# not started), and check each binary is there then.
tools_install() {
    local tool missing=() packages=()
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || missing+=("$tool")
    done
    ((${#missing[@]} > 0)) || return 0
    need_apt "${missing[*]}" "$1"
    block_service_starts
    for tool in "${missing[@]}"; do
        packages+=("$(package_of "$tool")")
    done
    apt_install "${packages[@]}"
    for tool in "${missing[@]}"; do
        tool_path "$tool" >/dev/null || die "$(package_of "$tool") installed but no $tool binary found"
    done
}

# tools_paths: print each tool's binary, one a line (fails when one is missing).
tools_paths() {
    local tool status=0
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" || {
            log "$tool not found; run: scripts/$(basename "${BASH_SOURCE[-1]}") install"
            status=1
        }
    done
    return "$status"
}

# tools_status: exit 0 when every tool is there, 3 when one is not.
tools_status() {
    local tool
    for tool in "${TOOLS[@]}"; do
        tool_path "$tool" >/dev/null || exit 3
    done
}
