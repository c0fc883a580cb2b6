"""`make page`: the Sluice state page of this checkout's pipelines, as a screenshot.

Serves the Airflow home `make run` uses (scripts/airflow-env.sh) with `airflow api-server` on
a free loopback port, signs in as a throw-away admin in headless Chromium (Debian's, driven by
Playwright: scripts/browser.sh installs both), saves the page at
data/artifacts/state-page.png and its charts at data/artifacts/state-page-charts.png, then stops
the server. Run `make run` first, so that there is something to show.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "data" / "artifacts"
STARTUP_SECONDS = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the api-server exited ({server.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=2):
                return
        except OSError:
            time.sleep(1)
    sys.exit(f"the api-server did not answer within {STARTUP_SECONDS} s; see {log}")


def main() -> None:
    home = Path(os.environ["AIRFLOW_HOME"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port, password = free_port(), secrets.token_urlsafe(12)
    url = f"http://127.0.0.1:{port}"
    passwords = home / "state-page-passwords.json"
    passwords.write_text(json.dumps({"viewer": password}))
    env = os.environ | {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "viewer:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
        "AIRFLOW__API__BASE_URL": url,
    }
    log = home / "state-page-api-server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            ["airflow", "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_up(url, server, log)
        chromium = subprocess.run(
            ["bash", str(ROOT / "scripts" / "browser.sh"), "path"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, headless=True, args=["--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/sluice/")
            page.get_by_label("Username").fill("viewer")
            page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{url}/sluice/", timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "state-page.png"), full_page=True)
            charts = page.locator("section[data-pipeline] .charts").first
            if charts.count():
                charts.screenshot(path=str(ARTIFACTS / "state-page-charts.png"))
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        passwords.unlink(missing_ok=True)
    print(f"state page: {ARTIFACTS / 'state-page.png'}")


if __name__ == "__main__":
    main()
