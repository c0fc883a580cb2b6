"""The Sluice page as a person sees it: sign in to a real Airflow, open Browse > Sluice.

A real ``airflow api-server`` with the project's plugins serves a pipeline that ran once for a
real (queued) DAG run; Debian's Chromium, driven by Playwright, signs in through Airflow's
login page and checks that the page shows the pipeline's real state: its file, the unread
bytes behind it, the checkpoint and the DAG run that requested it. The screenshot is kept
under the test's tmp dir and copied to ``data/artifacts/sluice-page.png``.

Needs Chromium (``scripts/browser.sh install``); the test is skipped only when the binary is
missing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from pipeline_core.operations import PipelineOperations
from tests.support.airflow_env import REPO_ROOT
from tests.support.pipelines import append, write_config
from tests.system.airflow_site import AirflowSite, http_status

CHROMIUM = Path(os.environ.get("SLUICE_CHROMIUM", "/usr/bin/chromium"))
ARTIFACT = REPO_ROOT / "data" / "artifacts" / "sluice-page.png"
RUN_ID = "manual__sluice_system_test"
LINES = [
    f'127.0.0.1 - - [22/Nov/2026:10:00:{i:02d} +0000] "GET /page/{i} HTTP/1.1" 200 512 "-" "curl"'
    for i in range(25)
]
TAIL = b'127.0.0.1 - - [22/Nov/2026:10:01:00 +0000] "GET /late HTTP/1.1" 404 0 "-" "curl"'

pytestmark = [
    pytest.mark.slow,
    pytest.mark.system,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"no Chromium at {CHROMIUM}: install it with scripts/browser.sh install",
    ),
]


@pytest.mark.timeout(600)
def test_a_signed_in_user_sees_the_pipelines_real_state(
    airflow_site: AirflowSite, tmp_path: Path
) -> None:
    config = write_config(airflow_site.pipelines, f"sqlite:///{tmp_path / 'sluice.db'}")
    log = airflow_site.pipelines / "logs" / "access.log"
    append(log, *(line.encode() for line in LINES))
    airflow_site.airflow("dags", "reserialize")
    airflow_site.airflow("dags", "trigger", "sluice_web_access", "--run-id", RUN_ID)
    operations = PipelineOperations(config)
    checkpoint = operations.request_checkpoint(run_id=RUN_ID)
    (sealed,) = operations.collect_once().sealed
    append(log, TAIL)
    unread = len(TAIL) + 1
    assert sealed.checkpoint_id == checkpoint.checkpoint_id

    plugins = json.loads(airflow_site.airflow("plugins", "--output", "json"))
    sluice = next(p for p in plugins if p["name"] == "sluice")
    assert sluice["fastapi_apps"][0]["url_prefix"] == "/sluice"
    assert sluice["external_views"][0]["name"] == "Sluice"
    assert http_status(f"{airflow_site.url}/sluice/api/pipelines") == 401

    screenshot = tmp_path / "sluice-page.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            sign_in(page, airflow_site)

            section = page.locator('section[data-pipeline="web_access"]')
            expect(section).to_be_visible()
            expect(section.locator("table.files")).to_contain_text(str(log))
            expect(section.locator("td.unread")).to_have_text(str(unread))
            expect(section.locator(".unread-total")).to_have_text(str(unread))
            row = section.locator(f'tr[data-checkpoint="{checkpoint.checkpoint_id}"]')
            expect(row).to_contain_text(RUN_ID)
            expect(row).to_contain_text("queued")  # the DAG run's state, read from Airflow
            expect(row).to_contain_text(f"{len(LINES)} lines")
            page.screenshot(path=str(screenshot), full_page=True)

            open_from_the_browse_menu(page, airflow_site)
        finally:
            browser.close()

    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(screenshot, ARTIFACT)
    assert screenshot.stat().st_size > 10_000


def sign_in(page: Page, site: AirflowSite) -> None:
    """Open the Sluice page: Airflow's login page comes first, then back to the page."""
    page.goto(f"{site.url}/sluice/")
    assert urlsplit(page.url).path == "/auth/login"
    page.get_by_label("Username").fill(site.username)
    page.get_by_label("Password").fill(site.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{site.url}/sluice/", timeout=60_000)
    expect(page).to_have_title("Sluice pipelines")


def open_from_the_browse_menu(page: Page, site: AirflowSite) -> None:
    """Airflow's UI links the page under Browse and shows it in a frame."""
    page.goto(f"{site.url}/")
    page.get_by_role("button", name="Browse").click()
    link = page.get_by_role("menuitem", name="Sluice")
    expect(link).to_have_attribute("href", "/plugin/sluice")
    link.click()
    frame = page.frame_locator('iframe[src*="sluice/"]')
    expect(frame.locator('section[data-pipeline="web_access"]')).to_be_visible(timeout=30_000)
