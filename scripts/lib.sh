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
