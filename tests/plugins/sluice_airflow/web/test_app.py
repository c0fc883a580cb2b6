"""The Sluice app: Airflow's authentication, DAG permissions, the JSON API and the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from sluice_airflow.web.app import create_app, hours_label, human_bytes, when
from sluice_airflow.web.dag_runs import airflow_dag_runs

from pipeline_core.collector import PipelineMetrics, QueueMetrics, metrics_file
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append
from tests.plugins.sluice_airflow.web.conftest import Tokens, bearer
from tests.support.pipelines import write_config

pytestmark = pytest.mark.airflow

LINES = [f"GET /page/{i} 200".encode() for i in range(12)]
TAIL = b"a line appended after the seal"
RUN_ID = "manual__2026-11-22T10:00:00+00:00"


@pytest.fixture
def pipeline(pipelines: Path, metastore_url: str) -> Path:
    """Pipeline ``web_access``: checkpoint 1 sealed for DAG run RUN_ID, then one more line."""
    config = write_config(pipelines, metastore_url)
    append(pipelines / "logs" / "access.log", *LINES)
    operations = PipelineOperations(config)
    operations.request_checkpoint(run_id=RUN_ID)
    operations.collect_once()
    append(pipelines / "logs" / "access.log", TAIL)
    return config


@pytest.fixture
def failed_run(airflow_home: Path) -> Iterator[str]:
    """A failed run ``RUN_ID`` of DAG ``sluice_web_access`` in Airflow's database."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState

    with create_session() as session:
        session.add(
            DagRun(
                dag_id="sluice_web_access",
                run_id=RUN_ID,
                run_type="manual",
                state=DagRunState.FAILED,
                run_after=datetime(2026, 11, 22, 10, tzinfo=timezone.utc),
            )
        )
    try:
        yield RUN_ID
    finally:
        with create_session() as session:
            session.query(DagRun).filter(DagRun.dag_id == "sluice_web_access").delete()


def test_should_refuse_requests_without_credentials(client: TestClient, pipeline: Path) -> None:
    for path in ("/api/pipelines", "/api/pipelines/web_access", "/"):
        response = client.get(path, headers={"Accept": "application/json"})
        assert response.status_code == 401, path
        assert response.json() == {"detail": "Not authenticated"}


def test_should_send_a_browser_without_a_session_to_airflows_login_page(
    client: TestClient, tokens: Tokens
) -> None:
    response = client.get("/", headers={"Accept": "text/html"}, follow_redirects=False)

    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/auth/login"
    assert parse_qs(location.query)["next"] == ["http://testserver/"]


def test_should_refuse_an_invalid_token(client: TestClient, tokens: Tokens) -> None:
    response = client.get("/api/pipelines", headers=bearer("not-a-jwt"))

    assert response.status_code == 403


def test_should_list_the_pipelines_a_viewer_may_read(
    client: TestClient, tokens: Tokens, pipeline: Path
) -> None:
    response = client.get("/api/pipelines", headers=bearer(tokens.viewer))

    assert response.status_code == 200
    (summary,) = response.json()
    assert summary["name"] == "web_access" and summary["dag_id"] == "sluice_web_access"
    assert summary["unread_bytes"] == len(TAIL) + 1
    assert (summary["latest_checkpoint_id"], summary["latest_checkpoint_state"]) == (1, "sealed")


def test_should_answer_a_pipelines_snapshot_with_the_dag_run_of_each_checkpoint(
    client: TestClient, tokens: Tokens, pipeline: Path, failed_run: str
) -> None:
    response = client.get("/api/pipelines/web_access", headers=bearer(tokens.viewer))

    assert response.status_code == 200
    snapshot = response.json()
    (file,) = snapshot["files"]
    assert file["path"].endswith("logs/access.log") and file["unread_bytes"] == len(TAIL) + 1
    (checkpoint,) = snapshot["checkpoints"]
    assert (checkpoint["checkpoint_id"], checkpoint["state"], checkpoint["lines"]) == (
        1,
        "sealed",
        len(LINES),
    )
    assert checkpoint["dag_run"]["run_id"] == failed_run
    assert checkpoint["dag_run"]["state"] == "failed"
    assert checkpoint["batches"][0]["host"] == "test-host"


def test_should_read_dag_runs_from_airflows_database(failed_run: str) -> None:
    runs = airflow_dag_runs("sluice_web_access", [failed_run, "manual__unknown"])

    assert list(runs) == [failed_run]
    assert (runs[failed_run].state, runs[failed_run].run_type) == ("failed", "manual")
    assert airflow_dag_runs("sluice_web_access", []) == {}


def test_should_hide_pipelines_from_a_user_who_may_not_read_their_dag(
    client: TestClient, tokens: Tokens, pipeline: Path
) -> None:
    assert client.get("/api/pipelines", headers=bearer(tokens.stranger)).json() == []
    detail = client.get("/api/pipelines/web_access", headers=bearer(tokens.stranger))
    assert detail.status_code == 403
    page = client.get("/", headers=bearer(tokens.stranger))
    assert page.status_code == 200 and "No pipelines to show" in page.text


def test_should_answer_404_for_an_unknown_pipeline(
    client: TestClient, tokens: Tokens, pipelines: Path
) -> None:
    response = client.get("/api/pipelines/nothing_here", headers=bearer(tokens.viewer))

    assert response.status_code == 404


def test_should_answer_the_same_403_for_a_forbidden_pipeline_whether_or_not_it_exists(
    client: TestClient, tokens: Tokens, pipeline: Path
) -> None:
    existing = client.get("/api/pipelines/web_access", headers=bearer(tokens.stranger))
    unknown = client.get("/api/pipelines/web_accesz", headers=bearer(tokens.stranger))

    assert existing.status_code == unknown.status_code == 403
    assert existing.json() == {"detail": "Forbidden: no access to sluice_web_access"}
    assert unknown.json() == {"detail": "Forbidden: no access to sluice_web_accesz"}
    assert existing.headers["content-type"] == unknown.headers["content-type"]


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"])
def test_should_serve_no_schema_or_docs_page(client: TestClient, tokens: Tokens, path: str) -> None:
    for headers in ({}, bearer(tokens.viewer)):
        response = client.get(path, headers=headers)

        assert response.status_code == 404, (path, headers)
        assert "swagger" not in response.text.lower() and "cdn" not in response.text.lower()
    assert sorted(route.path for route in client.app.routes) == [  # type: ignore[attr-defined]
        "/",
        "/api/pipelines",
        "/api/pipelines/{name}",
    ]


def test_should_render_the_page_from_the_session_cookie(
    tokens: Tokens, pipeline: Path, failed_run: str
) -> None:
    client = TestClient(create_app(), cookies={"_token": tokens.viewer})

    response = client.get("/", headers={"Accept": "text/html"})

    assert response.status_code == 200
    page = response.text
    assert "Signed in as vera" in page
    assert str(pipeline.parent / "logs" / "access.log") in page
    assert f'class="num unread" title="{len(TAIL) + 1} B">{len(TAIL) + 1}</td>' in page
    assert 'data-checkpoint="1"' in page
    assert "../dags/sluice_web_access/runs/manual__2026-11-22T10%3A00%3A00%2B00%3A00" in page
    assert '<span class="badge failed">failed</span>' in page
    assert "not reported" in page
    assert response.headers["cache-control"] == "no-store"


def test_should_format_bytes_and_times_for_people() -> None:
    assert [human_bytes(n) for n in (None, 0, 1023, 1536, 5 * 1024**3)] == [
        "unknown",
        "0 B",
        "1023 B",
        "1.5 KiB",
        "5.0 GiB",
    ]
    assert when(datetime(2026, 11, 22, 10, 0, 5, tzinfo=timezone.utc)) == "2026-11-22 10:00:05 UTC"
    assert when(None) == "\u2014"


def test_should_show_a_running_collectors_report_on_the_page(
    tokens: Tokens, pipeline: Path
) -> None:
    report = PipelineMetrics(
        pipeline="web_access",
        host="test-host",
        state="running",
        priority=0,
        lines_read=12,
        bytes_read=100,
        bytes_sent=100,
        blocked_seconds=0.0,
        trees_in_flight=7,
        trees_replayed=0,
        truncated_unread_bytes=0,
        queues={
            "process": QueueMetrics(4, 16, 10, True, 0),
            "send": QueueMetrics(0, 16, 10, True, 0),
        },
        sink_groups=(),
        files=(),
    )
    report_file = metrics_file(pipeline.parent / "data", "web_access")
    report_file.parent.mkdir(parents=True, exist_ok=True)
    report_file.write_text(json.dumps(report.to_dict()))
    client = TestClient(create_app(), cookies={"_token": tokens.viewer})

    page = client.get("/").text

    assert "12 lines read" in page and "7 acker trees in flight" in page
    assert '<td class="num">4</td>' in page  # the process queue's depth


def test_should_draw_the_pipelines_charts_on_the_page(tokens: Tokens, pipeline: Path) -> None:
    client = TestClient(create_app(), cookies={"_token": tokens.viewer})

    page = client.get("/", headers={"Accept": "text/html"}).text

    for key in ("read-rate", "unread-bytes", "seal-latency", "commit-latency", "lines", "rejects"):
        assert f'data-chart="{key}"' in page, key
    assert page.count('<svg class="chart"') == 6
    assert 'class="mark step tone-blue"' in page  # the collection's read rate
    assert f"<title>#1: lines: {len(LINES)}</title>" in page
    assert "<title>#1: sealed \u2192 committed: not committed yet</title>" in page
    assert "read progress of the last 24 h" in page
    assert 'href="?hours=168&amp;limit=20#web_access">7 d</a>' in page


def test_should_answer_the_charts_series_in_the_json_api(
    client: TestClient, tokens: Tokens, pipeline: Path
) -> None:
    response = client.get("/api/pipelines/web_access?hours=1", headers=bearer(tokens.viewer))

    assert response.status_code == 200
    snapshot = response.json()
    collected = sum(len(line) + 1 for line in LINES)
    progress = snapshot["read_progress"]
    assert sum(s["bytes_read"] for s in progress) == collected
    assert sum(s["lines_read"] for s in progress) == len(LINES)
    assert progress[0]["unread_bytes"] == collected and progress[-1]["unread_bytes"] == 0
    assert {s["host"] for s in progress} == {"test-host"}
    (checkpoint,) = snapshot["checkpoints"]
    assert checkpoint["seal_latency_s"] > 0 and checkpoint["commit_latency_s"] is None
    since = datetime.fromisoformat(snapshot["read_progress_since"])
    assert datetime.fromisoformat(snapshot["taken_at"]) - since == timedelta(hours=1)


def test_should_refuse_a_read_progress_window_out_of_range(
    client: TestClient, tokens: Tokens, pipeline: Path
) -> None:
    for hours in ("0", "169", "soon"):
        response = client.get(
            f"/api/pipelines/web_access?hours={hours}", headers=bearer(tokens.viewer)
        )
        assert response.status_code == 422, hours
    assert client.get("/?hours=0", headers=bearer(tokens.viewer)).status_code == 422


def test_should_name_read_progress_windows_for_people() -> None:
    assert [hours_label(h) for h in (1, 0.5, 24, 48, 168, 36)] == [
        "1 h",
        "0.5 h",
        "24 h",
        "2 d",
        "7 d",
        "36 h",
    ]


def test_should_show_no_planted_secret_on_the_page_or_in_its_json(
    tokens: Tokens, pipelines: Path, metastore_url: str
) -> None:
    """A sink's URL secrets, stored in its ``last_error`` by an older collector as they were,
    are masked on the page and in the API (issue 30)."""
    from pipeline_core.metastore import Metastore, SinkStateRecord

    url = "https://user:s3cr3tPW@logs.internal/in?api_key=K3YVALUE&token=T0KENVALUE"
    config = write_config(
        pipelines,
        metastore_url,
        sinks={"lake": {"type": "handoff"}, "web": {"type": "http", "url": url}},
    )
    PipelineOperations(config, migrate=True)  # the metastore, created
    metastore = Metastore.open(metastore_url)
    try:
        error = f"cannot deliver to {url}: HTTP 503 (echoed: api_key=K3YVALUE)"
        metastore.save_sink_states(
            "web_access", "test-host", [SinkStateRecord("web", "web", 3, 0.0, 1.0, error)]
        )
    finally:
        metastore.close()
    client = TestClient(create_app(), cookies={"_token": tokens.viewer})

    page = client.get("/", headers={"Accept": "text/html"})
    api = client.get("/api/pipelines/web_access", headers=bearer(tokens.viewer))

    assert page.status_code == api.status_code == 200
    assert "https://user:***@logs.internal" in page.text
    for secret in ("s3cr3tPW", "K3YVALUE", "T0KENVALUE"):
        assert secret not in page.text
        assert secret not in api.text
