#!/usr/bin/env bash
# The real web servers and rotation tools: Debian's nginx, logrotate and wrk for the rotation
# test (tests/system/test_real_rotation.py), nginx and Apache's httpd (apache2) for the access-log
# format tests (tests/spark_jobs/test_nginx_format.py, test_apache_formats.py).
#
# Usage: scripts/rotation-tools.sh {install|paths|status}
#
#   install   install the Debian packages of the tools whose binary is missing: nginx-light
#             (nginx where the release has no nginx-light), logrotate, wrk, apache2
#   paths     print each tool's binary, one a line (exit 1 when one is missing)
#   status    exit 0 when every tool is there, 3 when one is not
#
# The packages' services are not started (no nginx or Apache on port 80): the tests run their own
# servers on loopback. Only the paths go to stdout.
#
# Environment: none.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS=(nginx logrotate wrk apache2)

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"


# package_of TOOL: the Debian package that brings TOOL.
package_of() {
    if [[ "$1" == nginx ]]; then
        # Debian 13 dropped nginx-light; its nginx is as small.
        if has_candidate nginx-light; then echo nginx-light; else echo nginx; fi
    else
        echo "$1"
    fi
}

# cmd_install: the packages with their services kept from starting (the package would start
# the service: nginx or Apache on port 80).
cmd_install() {
    tools_install "nginx-light logrotate wrk apache2" || return
    log "ready: $("$(tool_path nginx)" -v 2>&1), $("$(tool_path logrotate)" --version | head -n 1)," \
        "$("$(tool_path apache2)" -v | head -n 1)"
}

case "${1:-}" in
install) cmd_install ;;
paths) tools_paths ;;
status) tools_status ;;
*) usage ;;
esac
