#!/usr/bin/env bash
# Headless browser for the system tests (tests/system): Debian's Chromium driven by Playwright.
#
# Usage: scripts/browser.sh {install|path|status}
#
#   install   install Debian's `chromium` package unless the binary exists, and the pinned
#             `playwright` Python package into .venv unless it is importable there
#   path      print the Chromium binary's path on stdout (exit 1 when there is none)
#   status    exit 0 when both Chromium and Playwright are usable, 3 when not
#
# Environment:
#   SLUICE_CHROMIUM   Chromium binary (default: /usr/bin/chromium, then chromium on PATH)
#
# Playwright's own browser downloads (`playwright install`) are never used: the tests launch
# the Debian binary through `executable_path`. Only the path goes to stdout.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_PYTHON="$REPO_ROOT/.venv/bin/python"

# shellcheck source=scripts/lib.sh
. "$REPO_ROOT/scripts/lib.sh"


# chromium_path: print the Chromium binary, or fail.
chromium_path() {
    local candidate
    for candidate in "${SLUICE_CHROMIUM:-}" /usr/bin/chromium "$(command -v chromium 2>/dev/null || true)"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# playwright_pin: the playwright version pinned in requirements-dev.txt.
playwright_pin() {
    sed -n 's/^playwright==\([^[:space:]]*\).*/\1/p' "$REPO_ROOT/requirements-dev.txt" | head -n 1
}

playwright_ok() { [[ -x "$VENV_PYTHON" ]] && "$VENV_PYTHON" -c 'import playwright.sync_api' 2>/dev/null; }

install_chromium() {
    if chromium_path >/dev/null; then
        return 0
    fi
    need_apt Chromium chromium "set SLUICE_CHROMIUM"
    apt_install chromium
    chromium_path >/dev/null || die "chromium installed but no binary found"
}

install_playwright() {
    local pin
    if playwright_ok; then
        return 0
    fi
    [[ -x "$VENV_PYTHON" ]] || die ".venv is missing; run: make setup"
    pin="$(playwright_pin)"
    [[ -n "$pin" ]] || die "requirements-dev.txt pins no playwright version"
    log "installing playwright==$pin into .venv"
    if [[ -x "$REPO_ROOT/.venv/bin/uv" ]]; then
        "$REPO_ROOT/.venv/bin/uv" pip install --quiet --python "$VENV_PYTHON" "playwright==$pin" >&2
    else
        "$VENV_PYTHON" -m pip install --quiet --disable-pip-version-check "playwright==$pin" >&2
    fi
}

cmd_install() {
    install_chromium
    install_playwright
    log "ready: $("$(chromium_path)" --version 2>/dev/null || chromium_path), playwright $(
        "$VENV_PYTHON" -c 'from importlib.metadata import version; print(version("playwright"))'
    )"
}

cmd_status() {
    if chromium_path >/dev/null && playwright_ok; then
        exit 0
    fi
    exit 3
}

case "${1:-}" in
install) cmd_install ;;
path) chromium_path || exit 1 ;;
status) cmd_status ;;
*) usage ;;
esac
