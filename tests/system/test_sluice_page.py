"""The Sluice page as a person sees it: sign in to a real Airflow, open Browse > Sluice.

A real ``airflow api-server`` with the project's plugins serves a pipeline that collected three
checkpoints: two landed by the real Spark job and committed, the third sealed for a real
(queued) DAG run. Debian's Chromium, driven by Playwright, signs in through Airflow's login
page and checks that the page shows the pipeline's real state: its file, the unread bytes
behind it, the checkpoint and the DAG run that requested it, and the charts drawn from what
the collector and the metastore recorded (read rate and lag over time, each checkpoint's
latencies, lines and rejects), against the page's own JSON. Screenshots of the page and of
its charts are kept under the test's tmp dir and copied to ``data/artifacts/sluice-page.png``
and ``data/artifacts/sluice-page-charts.png``.

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
from playwright.sync_api import Locator, Page, expect, sync_playwright
from pyspark.sql import SparkSession

from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append
from tests.support.airflow_env import REPO_ROOT
from tests.support.faults import land_and_commit_sealed
from tests.support.pipelines import write_config
from tests.system.airflow_site import AirflowSite, http_status

CHROMIUM = Path(os.environ.get("SLUICE_CHROMIUM", "/usr/bin/chromium"))
ARTIFACT = REPO_ROOT / "data" / "artifacts" / "sluice-page.png"
CHARTS_ARTIFACT = REPO_ROOT / "data" / "artifacts" / "sluice-page-charts.png"
RUN_ID = "manual__sluice_system_test"
LINES = [
    f'127.0.0.1 - - [22/Nov/2026:10:00:{i:02d} +0000] "GET /page/{i} HTTP/1.1" 200 512 "-" "curl"'
    for i in range(25)
]
TAIL = b'127.0.0.1 - - [22/Nov/2026:10:01:00 +0000] "GET /late HTTP/1.1" 404 0 "-" "curl"'
EARLIER = [  # (well-formed lines, malformed lines) of the two checkpoints landed before RUN_ID's
    (40, 3),
    (90, 1),
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.system,
    pytest.mark.spark,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"no Chromium at {CHROMIUM}: install it with scripts/browser.sh install",
    ),
]


@pytest.mark.timeout(600)
def test_a_signed_in_user_sees_the_pipelines_real_state(
    airflow_site: AirflowSite, tmp_path: Path, spark: SparkSession
) -> None:
    config = write_config(airflow_site.pipelines, f"sqlite:///{tmp_path / 'sluice.db'}")
    log = airflow_site.pipelines / "logs" / "access.log"
    operations = PipelineOperations(config)
    earlier = []
    for round_, (good, bad) in enumerate(EARLIER):
        append(log, *access_lines(f"r{round_}", good), *[b"not an access log line"] * bad)
        (collected,) = operations.collect_once().sealed
        earlier.append(collected.checkpoint_id)
    landed = land_and_commit_sealed(spark, config)
    assert [c["rejects"] for c in landed] == [{"no_match": bad} for _, bad in EARLIER]
    append(log, *(line.encode() for line in LINES))
    airflow_site.airflow("dags", "reserialize")
    airflow_site.airflow("dags", "trigger", "sluice_web_access", "--run-id", RUN_ID)
    checkpoint = operations.request_checkpoint(run_id=RUN_ID)
    (sealed,) = operations.collect_once().sealed
    append(log, TAIL)
    unread = len(TAIL) + 1
    assert sealed.checkpoint_id == checkpoint.checkpoint_id
    first, second = earlier

    plugins = json.loads(airflow_site.airflow("plugins", "--output", "json"))
    sluice = next(p for p in plugins if p["name"] == "sluice")
    assert sluice["fastapi_apps"][0]["url_prefix"] == "/sluice"
    assert sluice["external_views"][0]["name"] == "Sluice"
    assert http_status(f"{airflow_site.url}/sluice/api/pipelines") == 401

    screenshot = tmp_path / "sluice-page.png"
    charts_screenshot = tmp_path / "sluice-page-charts.png"
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

            charts = section.locator(".charts")
            expect(charts.locator("svg.chart")).to_have_count(6)
            snapshot = page.request.get(f"{airflow_site.url}/sluice/api/pipelines/web_access")
            assert snapshot.ok
            progress = snapshot.json()["read_progress"]
            assert sum(s["bytes_read"] for s in progress) == log.stat().st_size - unread
            assert len(progress) >= 6  # when each of the 3 runs began reading, and at its seal
            lag = chart(section, "unread-bytes").locator("circle.dot")
            expect(lag).to_have_count(len(progress))
            expect(lag.first).to_have_attribute("class", "mark dot tone-blue")
            rates = [s for s in progress if s["bytes_per_s"] is not None]
            expect(chart(section, "read-rate").locator("rect.step")).to_have_count(len(rates))
            expect(chart(section, "seal-latency").locator("rect.bar")).to_have_count(3)
            expect(chart(section, "commit-latency").locator("rect.bar")).to_have_count(2)
            assert hover_texts(chart(section, "commit-latency"), "line.missing") == [
                f"#{checkpoint.checkpoint_id}: sealed \u2192 committed: not committed yet"
            ]
            assert hover_texts(chart(section, "lines"), "rect.bar") == [
                f"#{first}: lines: {sum(EARLIER[0])}",
                f"#{second}: lines: {sum(EARLIER[1])}",
                f"#{checkpoint.checkpoint_id}: lines: {len(LINES)}",
            ]
            assert hover_texts(chart(section, "rejects"), "rect.bar") == [
                f"#{first}: rejects: {EARLIER[0][1]}",
                f"#{second}: rejects: {EARLIER[1][1]}",
            ]
            page.screenshot(path=str(screenshot), full_page=True)
            charts.screenshot(path=str(charts_screenshot))

            open_from_the_browse_menu(page, airflow_site)
        finally:
            browser.close()

    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(screenshot, ARTIFACT)
    shutil.copyfile(charts_screenshot, CHARTS_ARTIFACT)
    assert screenshot.stat().st_size > 10_000
    assert charts_screenshot.stat().st_size > 10_000


def access_lines(prefix: str, count: int) -> list[bytes]:
    return [
        f'127.0.0.1 - - [22/Nov/2026:09:{i % 60:02d}:00 +0000] "GET /{prefix}/{i} HTTP/1.1" '
        f'200 {100 + i} "-" "curl"'.encode()
        for i in range(count)
    ]


def chart(section: Locator, key: str) -> Locator:
    return section.locator(f'figure[data-chart="{key}"] svg.chart')


def hover_texts(svg: Locator, marks: str) -> list[str]:
    """What the browser shows on hovering each of the chart's ``marks``, left to right."""
    texts: list[str] = svg.locator(marks).evaluate_all(
        "marks => marks.map(mark => mark.querySelector('title').textContent)"
    )
    return texts


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
